"""Every selection strategy end to end over the local engine with a scripted model: the prompt it sends, how it
reads the answer, what it records when it cannot."""

import json

import dspy
import pytest

from tests.core.tools_fixture import Add, Echo, Now
from tests.lm.conftest import FakeLlama
from tests.strategies.test_parsing import finishes_within
from tool_selection import ToolSelectionError, ToolSet
from tool_selection.parsing import MAX_ANSWER_CHARS
from tool_selection.selector import MultiToolSelector
from tool_selection.strategies import UnknownStrategyError, get_strategy, parse_strategy, strategy_names
from tool_selection.strategies.json_strategies import MAX_REPAIR_CHARS

TOOLS = ToolSet(name="fixture", tools=(Echo, Add, Now))


def test_every_strategy_is_named_and_an_unknown_name_lists_them():
    assert {"json-cot", "json", "chat-cot", "native", "native-cot", "text:fenced", "text:call",
            "text:tags"} <= set(strategy_names())
    assert parse_strategy("gate+native") == (True, "native")
    with pytest.raises(UnknownStrategyError, match="Unknown selection strategy 'nativ' \\(did you mean 'native'") as e:
        MultiToolSelector(TOOLS, strategy="nativ")
    assert "json-cot" in str(e.value) and "gate+NAME" in str(e.value)
    with pytest.raises(UnknownStrategyError, match="gated strategy"):
        get_strategy("gate+json")


def test_native_renders_tools_through_the_template_and_reads_tool_call_blocks(scripted):
    lm, llama = scripted(['<tool_call>\n{"name": "add_numbers", "arguments": {"a": 1, "b": 2}}\n</tool_call>'])
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="native").decide("add 1 and 2")
    assert decision.tool_names == ["add_numbers"] and decision.valid
    sent = llama.calls[0]
    assert [t["function"]["name"] for t in sent["tools"]] == [t.NAME for t in TOOLS.registry()]
    assert sent["messages"][0]["role"] == "system" and "Call a function only when" in sent["messages"][0]["content"]
    assert sent["messages"][-1] == {"role": "user", "content": "add 1 and 2"}
    assert sent["grammar"] is None  # free text: the model may answer without a call


def test_native_accepts_json_fences_keeps_prose_and_abstains_in_prose(scripted):
    lm, _ = scripted(['Adding.\n```json\n{"name": "add_numbers", "arguments": {"a": 4, "b": 5}}\n```',
                      "None of the available functions can do this."])
    selector = MultiToolSelector(TOOLS, strategy="native")
    with dspy.context(lm=lm):
        fenced = selector.decide("add 4 and 5")
        none = selector.decide("tell me a joke")
    assert fenced.tool_names == ["add_numbers"] and fenced.reasoning == "Adding."
    assert none.abstained and none.reasoning == "None of the available functions can do this."


def test_native_cot_asks_for_a_thought_and_keeps_it_as_reasoning(scripted):
    lm, llama = scripted(['add_numbers fits.\n<tool_call>{"name": "add_numbers", "arguments": {"a": 1, "b": 1}}'
                          '</tool_call>'])
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="native-cot").decide("1+1")
    assert decision.reasoning == "add_numbers fits." and decision.tool_names == ["add_numbers"]
    assert "Before calling, write one short sentence" in llama.calls[0]["messages"][0]["content"]


def test_an_unreadable_answer_is_a_parse_failure_with_the_raw_text(scripted):
    raw = '<tool_call>\n{"name": "add_numbers", "arguments": {"a": </tool_call>'
    for strategy, answer in (("native", raw), ("text:tags", "<tool>{oops</tool>"),
                             ("text:call", "TOOL_CALL: add_numbers(a=1, b=)"), ("json", "not json at all {")):
        lm, _ = scripted([answer])
        with dspy.context(lm=lm):
            prediction = MultiToolSelector(TOOLS, strategy=strategy)(request="add")
        assert prediction.decision.parse_error, strategy
        assert not prediction.decision.abstained and prediction.raw_response == answer, strategy


@pytest.mark.parametrize("strategy, answer", [
    ("native", '<tool_call>{"name": "get_time", "arguments": "{this is not JSON"}</tool_call>'),
    ("native", '```json\n{"function": {"name": "get_time", "arguments": "{this is not JSON"}}\n```'),
    ("text:tags", '<tool>{"name": "get_time", "arguments": "{this is not JSON"}</tool>'),
    ("text:fenced", '```tool\n{"name": "get_time", "arguments": "[1, 2]"}\n```'),
])
def test_a_call_whose_arguments_string_is_not_a_json_object_is_a_parse_failure(scripted, strategy, answer):
    """Not a call without arguments (which get_time, taking none, would accept as right)."""
    lm, _ = scripted([answer])
    with dspy.context(lm=lm):
        prediction = MultiToolSelector(TOOLS, strategy=strategy, undeclared_arguments="drop")(request="time?")
    assert prediction.decision.parse_error and "the arguments a JSON object" in prediction.decision.parse_error
    assert prediction.decision.tool_calls == [] and prediction.raw_response == answer


@pytest.mark.parametrize("strategy, answer", [
    ("text:fenced", 'Sure.\n```tool\n{"name": "echo", "arguments": {"message": "hi"}}\n```'),
    ("text:call", 'TOOL_CALL: echo(message="hi")'),
    ("text:tags", '<tool>{"name": "echo", "arguments": {"message": "hi"}}</tool>'),
])
def test_text_protocols_list_the_tools_in_the_system_turn_and_parse_their_calls(scripted, strategy, answer):
    lm, llama = scripted([answer])
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy=strategy).decide("say hi")
    assert decision.tool_names == ["echo"] and decision.tool_calls[0].arguments == {"message": "hi"}
    system = llama.calls[0]["messages"][0]["content"]
    assert "Available tools:" in system and "add_numbers:" in system and "tools" not in llama.calls[0]


def test_json_predict_sends_a_schema_without_reasoning(scripted):
    lm, llama = scripted(['{"tool_calls": [{"tool_name": "get_time", "arguments": {}}]}'])
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="json").decide("what time is it?")
    assert decision.tool_names == ["get_time"] and decision.reasoning == ""
    assert llama.calls[0]["grammar"] is not None  # the constrained schema became a grammar


def test_the_selector_carries_its_adapter_whatever_is_configured(scripted):
    lm, _ = scripted(['{"reasoning": "r", "tool_calls": [{"tool_name": "get_time", "arguments": {}}]}'])
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):  # a notebook's leftover setting
        decision = MultiToolSelector(TOOLS, strategy="json-cot").decide("time?")
    assert decision.tool_names == ["get_time"]


def test_native_demonstrations_are_earlier_turns_in_the_same_format(scripted):
    lm, llama = scripted(['<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'])
    selector = MultiToolSelector(TOOLS, strategy="native")
    selector.select.demos = [dspy.Example(request="add 2 and 3", tool_calls=[{"tool_name": "add_numbers",
                                                                               "arguments": {"a": 2, "b": 3}}]),
                             dspy.Example(request="sing", tool_calls=[])]
    with dspy.context(lm=lm):
        selector.decide("time?")
    roles = [(m["role"], m.get("tool_calls", [{}])[0].get("function", {}).get("name")) for m in
             llama.calls[0]["messages"]]
    assert roles == [("system", None), ("user", None), ("assistant", "add_numbers"), ("tool", None),
                     ("user", None), ("assistant", None), ("user", None)]
    assert llama.calls[0]["messages"][5]["content"] == "None of the available functions can do this."


def test_native_needs_a_template_that_renders_tools(scripted):
    class NoToolsTemplate(FakeLlama):
        metadata = {"tokenizer.chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}

    lm, _ = scripted(llama=NoToolsTemplate())
    with pytest.raises(ToolSelectionError, match="chat template does not render tools"):
        MultiToolSelector(TOOLS, strategy="native").check_lm(lm)
    MultiToolSelector(TOOLS, strategy="text:tags").check_lm(lm)  # a text protocol needs nothing of the template


def test_native_needs_function_calling_on_a_hosted_model():
    lm = dspy.utils.DummyLM([{}])
    with pytest.raises(ToolSelectionError, match="no native function calling"):
        MultiToolSelector(TOOLS, strategy="native").check_lm(lm)


class GateLlama(FakeLlama):
    """Answers the gate's question with scripted Yes/No log-probabilities, then the selection."""

    def __init__(self, yes, no, selection):
        super().__init__(["Yes" if yes > no else "No", selection])
        self.yes, self.no = yes, no

    def create_chat_completion(self, messages, grammar=None, **options):
        out = super().create_chat_completion(messages, grammar=grammar, **options)
        if self.trace is not None and self.trace.top_logprobs and len(self.calls) == 1:
            from tool_selection.lm.engine import TokenScore

            first = self.trace.tokens[0]
            self.trace.tokens[0] = TokenScore(first.id, first.piece, max(self.yes, self.no),
                                              ((b"Yes", self.yes), (b" No", self.no), (b"Maybe", -9.0)))
        return out


@pytest.mark.parametrize("yes, no, threshold, passes", [(-0.1, -2.5, 0.0, True), (-3.0, -0.1, 0.0, False),
                                                        (-1.0, -0.5, -1.0, True)])
def test_the_gate_scores_yes_against_no_and_abstains_below_the_threshold(scripted, yes, no, threshold, passes):
    llama = GateLlama(yes, no, '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>')
    lm, _ = scripted(llama=llama)
    with dspy.context(lm=lm):
        prediction = MultiToolSelector(TOOLS, strategy="gate+native", gate_threshold=threshold)(request="time?")
    assert prediction.row_extras["gate_score"] == pytest.approx(yes - no)
    assert prediction.row_extras["gate_passed"] == float(passes)
    assert prediction.decision.tool_names == (["get_time"] if passes else [])
    assert len(llama.calls) == (2 if passes else 1)  # a closed gate saves the selection call
    question = llama.calls[0]["messages"][-1]["content"]
    assert question.startswith("Request: time?") and question.endswith("Answer Yes or No.")
    assert "- get_time:" in llama.calls[0]["messages"][0]["content"]


def test_strategy_and_gate_survive_save_and_load(tmp_path, scripted):
    selector = MultiToolSelector(TOOLS, strategy="gate+native-cot")
    selector.select.predict.signature = selector.select.predict.signature.with_instructions("Custom instructions.")
    path = tmp_path / "program.json"
    selector.save(str(path))
    state = json.loads(path.read_text())
    assert {"select.predict", "gate"} <= set(state)
    loaded = MultiToolSelector(TOOLS, strategy="gate+native-cot")
    loaded.load(str(path))
    assert loaded.select.predict.signature.instructions == "Custom instructions."


def test_text_protocols_keep_an_answer_without_a_call_as_the_reasoning(scripted):
    lm, _ = scripted(["tool_name: echo (not the protocol)"])
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="text:fenced").decide("say hi")
    assert decision.abstained and decision.reasoning == "tool_name: echo (not the protocol)"


SLOW_FOR_JSON_REPAIR = {  # json_repair rereads the rest of these at every bracket or quote: minutes at the cap
    "}{a] repeated": "}{a]" * (MAX_ANSWER_CHARS // 4),
    "{a] repeated": "{a]" * (MAX_ANSWER_CHARS // 3),
    "tool_calls a string of }{a]": '{"reasoning": "r", "tool_calls": "' + "}{a]" * 4990 + '"}',
    "chat tool_calls of {a]": "[[ ## reasoning ## ]]\nr\n\n[[ ## tool_calls ## ]]\n" + "{a]" * 6600,
}


@pytest.mark.parametrize("strategy", ["json", "json-cot", "chat-cot"])
@pytest.mark.parametrize("answer", SLOW_FOR_JSON_REPAIR.values(), ids=SLOW_FOR_JSON_REPAIR)
def test_an_answer_shaped_to_make_json_repair_slow_is_read_quickly(scripted, strategy, answer):
    """Target: under 1 s (evals/benchmarks/parse_speed.py measures it); the guard is far above it."""
    assert len(answer) <= MAX_ANSWER_CHARS
    lm, _ = scripted([answer])
    selector = MultiToolSelector(TOOLS, strategy=strategy)

    def read():
        with dspy.context(lm=lm):  # DSPy's settings are per thread
            return selector(request="time?")

    prediction = finishes_within(10, read)
    assert prediction.decision.parse_error and prediction.raw_response == answer


def test_a_long_json_answer_is_read_as_written_or_mended_in_linear_time(scripted):
    reasoning = "The clock tool answers this; " * 30
    call = {"tool_name": "echo", "arguments": {"message": "x" * 300}}
    answers = [  # each longer than json_repair is given
        "Here is my answer.\n```json\n" + json.dumps({"reasoning": reasoning, "tool_calls": [call]}) + "\n```",
        repr({"reasoning": reasoning, "tool_calls": [call]}),  # Python's quotes
        json.dumps({"reasoning": reasoning, "tool_calls": [call]})[:-2],  # closing brackets left off
    ]
    assert all(len(answer) > MAX_REPAIR_CHARS for answer in answers)
    lm, _ = scripted(answers)
    selector = MultiToolSelector(TOOLS, strategy="json-cot")
    with dspy.context(lm=lm):
        for answer in answers:
            decision = selector.decide("say x")
            assert decision.tool_names == ["echo"] and decision.tool_calls[0].arguments == call["arguments"], answer


def test_a_short_malformed_json_answer_is_still_mended_by_json_repair(scripted):
    lm, _ = scripted(['{reasoning: "the clock", tool_calls: [{tool_name: "get_time", arguments: {}},]}'])
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="json-cot").decide("time?")
    assert decision.tool_names == ["get_time"] and decision.reasoning == "the clock"
