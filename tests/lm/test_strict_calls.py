"""Strict tool calls: free text, each opened call decoded under the tools' grammar (a scripted llama stands in)."""

import dspy
import pytest
from dspy.lm15 import Config, FunctionTool, Message, Request, ToolCallPart

from tests.lm.conftest import StagedLlama, staged_lm
from tool_selection import MultiToolSelector, ToolSelectionError
from tool_selection.lm import LocalEngine
from tool_selection.lm.engine import GenerationTrace
from tool_selection.lm.strict_calls import OwnCalls, strict_tool_completion
from tool_selection.run_config import RunConfig
from tool_selection.strategies.native import call_schema

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The forecast for a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
CALL = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'


def complete(llama, max_tokens=200):
    return strict_tool_completion(llama, "<user>rain in Oslo?\n<assistant>", grammar="G", max_tokens=max_tokens,
                                  stop=["<|im_end|>"])


def test_a_tagged_call_is_decoded_under_the_grammar_and_the_text_around_it_is_free():
    llama = StagedLlama(["I will check.<tool_call>", "\n" + CALL, "\n</tool_call>"])
    result = complete(llama)
    text = "I will check.<tool_call>\n" + CALL + "\n</tool_call>"
    assert result["choices"][0] == {"text": text, "finish_reason": "stop"}
    assert [call["grammar"] for call in llama.calls] == [None, "G", None]
    assert llama.calls[1]["prompt"].endswith("<assistant>I will check.<tool_call>")  # the call goes on from the tag
    assert llama.calls[2]["prompt"].endswith(CALL)
    assert result["usage"]["completion_tokens"] == len(text)
    assert llama.calls[0]["stop"] == ["<|im_end|>"] and llama.calls[1]["stop"] is None


def test_a_fence_opens_a_call_too():
    llama = StagedLlama(["```json\n", "\n" + CALL, "\n```"])  # the opener ends at "json"; the grammar takes "\n"
    assert complete(llama)["choices"][0]["text"] == "```json\n" + CALL + "\n```"
    assert [call["grammar"] for call in llama.calls] == [None, "G", None]


def test_an_object_next_to_a_call_in_a_fence_is_the_next_call():
    llama = StagedLlama(["```json\n", "\n" + CALL, '\n{"', CALL, "\n```"])
    assert complete(llama)["choices"][0]["text"] == "```json\n" + CALL + "\n" + CALL + "\n```"
    assert [call["grammar"] for call in llama.calls] == [None, "G", None, "G", None]


def test_an_imagined_tool_result_after_a_bare_call_ends_the_answer():
    llama = StagedLlama(['{"', CALL, '\n{"ok": true}\n' + CALL + "\n" * 50])  # what a small model writes on
    llama.trace = GenerationTrace(top_logprobs=0)
    result = complete(llama)
    assert result["choices"][0] == {"text": CALL + "\n", "finish_reason": "stop"}  # the brace showed it: not kept
    assert [call["grammar"] for call in llama.calls] == [None, "G", None]
    assert result["usage"]["completion_tokens"] == len(CALL) + 1
    assert "".join(token.piece.decode() for token in llama.trace.tokens) == CALL + "\n"


@pytest.mark.parametrize("opening", ['{"name"', '{ "name"', '{{"name"'])
def test_a_named_object_after_a_bare_call_is_the_next_call(opening):
    other = CALL.replace("Oslo", "Bergen")
    llama = StagedLlama(['{"', CALL, "\n" + opening + ': "get_weather"', other, '\n{"ok": true}'])
    llama.trace = GenerationTrace(top_logprobs=0)
    result = complete(llama)
    assert result["choices"][0]["text"] == CALL + "\n" + other + "\n"  # the object given back to the grammar
    assert [call["grammar"] for call in llama.calls] == [None, "G", None, "G", None]
    assert llama.calls[3]["prompt"].endswith(CALL + "\n")
    assert "".join(token.piece.decode() for token in llama.trace.tokens) == result["choices"][0]["text"]


def test_a_bare_call_repeated_ends_the_answer():
    other = CALL.replace("Oslo", "Bergen")
    llama = StagedLlama(['{"', CALL, '\n{"name"', other, '\n{"name"', " " + CALL, '\n{"name"', CALL])
    llama.trace = GenerationTrace(top_logprobs=0)
    result = complete(llama)
    assert result["choices"][0]["text"] == CALL + "\n" + other + "\n"
    assert len(llama.calls) == 6  # the third call, a repeat of the first, is the last decoded
    assert result["usage"]["completion_tokens"] == len(result["choices"][0]["text"])
    assert "".join(token.piece.decode() for token in llama.trace.tokens) == result["choices"][0]["text"]


def test_a_call_that_differs_only_in_a_values_spaces_is_not_a_repeat():
    spaced = CALL.replace("Oslo", "Os lo")
    llama = StagedLlama(['{"', CALL, '\n{"name"', spaced, ""])
    assert complete(llama)["choices"][0]["text"] == CALL + "\n" + spaced  # read as two calls, as the parser reads them


@pytest.mark.parametrize("after", ["\n</tool_call>\nThe forecast will come back.", "\n</tool_call>\n<tool_response>"])
def test_text_after_a_tagged_call_ends_the_answer(after):
    llama = StagedLlama(["<tool_call>", "\n" + CALL, after])
    assert complete(llama)["choices"][0]["text"] == "<tool_call>\n" + CALL + "\n</tool_call>\n"


def test_after_a_call_the_next_call_and_the_closers_stay_open():
    fenced = StagedLlama(["```json\n", "\n" + CALL, "\n```\n```json\n", "\n" + CALL, "\n```\nDone."])
    assert complete(fenced)["choices"][0]["text"] == ("```json\n" + CALL + "\n```\n```json\n" + CALL + "\n```\n")
    assert [call["grammar"] for call in fenced.calls] == [None, "G", None, "G", None]
    tagged = StagedLlama(["<tool_call>", "\n" + CALL, "\n</tool_call>\n<tool_call>", "\n" + CALL, "\n</tool_call>"])
    assert complete(tagged)["choices"][0]["text"].count("<tool_call>") == 2
    assert [call["grammar"] for call in tagged.calls] == [None, "G", None, "G", None]


def test_a_bare_json_answer_gives_its_brace_back_to_the_grammar():
    llama = StagedLlama(['{"', CALL, ""])
    result = complete(llama)
    assert result["choices"][0]["text"] == CALL
    assert llama.calls[1]["prompt"].endswith("<assistant>") and llama.calls[1]["grammar"] == "G"
    assert result["usage"]["completion_tokens"] == len(CALL)  # the brace given back is counted once


def test_recorded_log_probabilities_hold_only_the_tokens_of_the_answer():
    llama = StagedLlama(['{"', CALL, "\n<tool_call>", CALL, ""])
    llama.trace = GenerationTrace(top_logprobs=0)
    text = complete(llama)["choices"][0]["text"]
    assert text == CALL + "\n<tool_call>" + CALL
    pieces = [token.piece.decode() for token in llama.trace.tokens]
    assert "".join(pieces) == text and pieces[-1] == ""  # the brace given back and the grammars' ends are gone


def test_prose_without_a_call_is_one_free_stage():
    llama = StagedLlama(["None of the functions can do this. {not a call}"])
    assert complete(llama)["choices"][0]["text"] == "None of the functions can do this. {not a call}"
    assert len(llama.calls) == 1  # a brace after prose does not open a call


def test_the_token_budget_covers_every_stage():
    llama = StagedLlama(["<tool_call>", CALL])
    result = complete(llama, max_tokens=20)
    assert result["choices"][0]["finish_reason"] == "length"
    assert result["usage"]["completion_tokens"] == 20 and llama.calls[1]["max_tokens"] == 20 - len("<tool_call>")


def test_the_call_schema_admits_each_tool_with_its_own_arguments():
    other = {"type": "function", "function": {"name": "send_email", "parameters": {
        "type": "object", "properties": {"to": {"$ref": "#/$defs/Address"}}, "$defs": {"Address": {"type": "string"}}}}}
    one = call_schema([WEATHER])
    assert one["properties"]["name"] == {"const": "get_weather"} and one["additionalProperties"] is False
    assert one["properties"]["arguments"] == WEATHER["function"]["parameters"]
    both = call_schema([WEATHER, other])
    assert [alt["properties"]["name"]["const"] for alt in both["anyOf"]] == ["get_weather", "send_email"]
    assert both["$defs"] == {"Address": {"type": "string"}}  # references resolve from the top of the schema
    assert "$defs" not in both["anyOf"][1]["properties"]["arguments"]


def test_tools_with_a_response_format_make_the_engine_decode_calls_strictly(tmp_path):
    llama = StagedLlama(["<tool_call>", "\n" + CALL, "\n</tool_call>"])
    engine = LocalEngine(tmp_path / "m.gguf", llama=llama)
    tool = FunctionTool(name="get_weather", description="The forecast for a city.",
                        parameters=WEATHER["function"]["parameters"])
    schema = call_schema([WEATHER])
    response = engine.complete(Request(model="local:m", messages=(Message.user("Rain in Oslo?"),), tools=(tool,),
                                       config=Config(max_tokens=100, temperature=0.0, response_format={
                                           "type": "json_schema", "schema": schema})))
    assert llama.calls[0]["prompt"] == "<user>Rain in Oslo?\n<tools>get_weather;</tools>\n<assistant>"
    assert 'root ::= call-pad call-pad (padded-value | "{" padded-value "}") call-pad call-pad' in llama.calls[1]["grammar"]._grammar
    calls = [part for part in response.message.parts if isinstance(part, ToolCallPart)]
    assert [(call.name, dict(call.input)) for call in calls] == [("get_weather", {"city": "Oslo"})]
    assert response.usage.output_tokens == len("<tool_call>\n" + CALL + "\n</tool_call>")


def test_a_required_call_is_opened_for_the_model_then_it_goes_on_freely():
    llama = StagedLlama([CALL, "\n</tool_call>"])
    result = strict_tool_completion(llama, "<user>rain in Oslo?\n<assistant>", grammar="G", max_tokens=200,
                                    stop=["<|im_end|>"], rules=OwnCalls(required=True))
    assert result["choices"][0]["text"] == "<tool_call>\n" + CALL + "\n</tool_call>"
    assert [call["grammar"] for call in llama.calls] == ["G", None]
    assert llama.calls[0]["prompt"].endswith("<assistant><tool_call>\n")  # no free stage before the call


def test_the_engine_keeps_a_required_tool_choice_under_strict_calls(tmp_path):
    from dspy.lm15 import ToolChoice

    llama = StagedLlama([CALL, "\n</tool_call>"])
    engine = LocalEngine(tmp_path / "m.gguf", llama=llama)
    tool = FunctionTool(name="get_weather", description="The forecast for a city.",
                        parameters=WEATHER["function"]["parameters"])
    response = engine.complete(Request(model="local:m", messages=(Message.user("Rain in Oslo?"),), tools=(tool,),
                                       config=Config(max_tokens=100, tool_choice=ToolChoice(mode="required"),
                                                     response_format={"type": "json_schema",
                                                                      "schema": call_schema([WEATHER])})))
    calls = [part for part in response.message.parts if isinstance(part, ToolCallPart)]
    assert [(call.name, dict(call.input)) for call in calls] == [("get_weather", {"city": "Oslo"})]


def test_native_strict_asks_for_strict_calls_and_refuses_hosted_models(tmp_path):
    from tool_selection import load_tool_set

    registry = load_tool_set("finance").registry()
    selector = MultiToolSelector(registry, strategy="native-strict")
    with pytest.raises(ToolSelectionError, match="native-strict strategy: it constrains a local model's decoding"):
        selector.check_lm(dspy.LM("openai/gpt-4o-mini"))

    lm, llama = staged_lm(tmp_path, ["None of the available functions can do this."], max_tokens=64)
    selector.check_lm(lm)
    with dspy.context(lm=lm):
        decision = selector("Write me a poem.").decision
    assert decision.tool_calls == [] and len(llama.calls) == 1
    sent_tools = llama.calls[0]["prompt"].split("<tools>")[1].split("</tools>")[0].split(";")[:-1]
    assert sorted(sent_tools) == sorted(registry.names())


def test_native_cot_strict_keeps_the_thought_free_and_decodes_the_call_under_the_grammar(tmp_path):
    from tool_selection import load_tool_set

    registry = load_tool_set("finance").registry()
    selector = MultiToolSelector(registry, strategy="native-cot-strict")
    with pytest.raises(ToolSelectionError, match="native-cot-strict strategy: it constrains a local model's decoding"):
        selector.check_lm(dspy.LM("openai/gpt-4o-mini"))

    call = '{"name": "get_stock_price", "arguments": {"symbol": "ACME"}}'
    lm, llama = staged_lm(tmp_path, ["The price tool fits.\n<tool_call>", "\n" + call, "\n</tool_call>"])
    with dspy.context(lm=lm):
        decision = selector("What is ACME trading at?").decision
    assert llama.calls[0]["grammar"] is None and llama.calls[1]["grammar"] is not None  # thought free, call constrained
    assert [(c.tool_name, c.arguments) for c in decision.tool_calls] == [("get_stock_price", {"symbol": "ACME"})]
    assert "The price tool fits." in decision.reasoning


def test_the_default_strategy_decodes_a_local_models_calls_strictly(tmp_path):
    from tool_selection import load_tool_set
    from tool_selection.strategies import DEFAULT_STRATEGY

    registry = load_tool_set("finance").registry()
    selector = MultiToolSelector(registry)
    assert selector.strategy_name == DEFAULT_STRATEGY == "auto"
    call = '{"name": "get_stock_price", "arguments": {"symbol": "ACME"}}'
    lm, llama = staged_lm(tmp_path, ["<tool_call>", "\n" + call, "\n</tool_call>"])
    with dspy.context(lm=lm):  # not pinned: chosen per call from the LM in use
        decision = selector("What is ACME trading at?").decision
    assert llama.calls[1]["grammar"] is not None  # the call was decoded under the tools' grammar
    assert [(c.tool_name, c.arguments) for c in decision.tool_calls] == [("get_stock_price", {"symbol": "ACME"})]
    assert selector.pin_strategy(lm) == "native-strict-cover" and selector.strategy_name == "native-strict-cover"


def test_auto_runs_as_native_where_decoding_cannot_be_constrained(tmp_path):
    hosted = dspy.LM("openai/gpt-4o-mini")
    gated = MultiToolSelector(strategy="gate+auto")
    assert gated.pin_strategy(hosted) == "gate+native"  # a hosted model: the provider's own function calling
    assert gated.strategy.strict_for(hosted) is False

    lm, llama = staged_lm(tmp_path, ["None of the available functions can do this."])
    free = MultiToolSelector(strategy="auto", constrain=False)
    assert free.strategy.resolved_name(lm) == "native" and free.pin_strategy(lm) == "native"
    assert MultiToolSelector(strategy="native").pin_strategy(lm) == "native"  # a named strategy is never changed


def test_pinning_keeps_what_the_selector_learned(tmp_path):
    lm, _ = staged_lm(tmp_path, [])
    selector = MultiToolSelector()
    selector.select.demos = [dspy.Example(request="price of ACME", tool_calls=[])]
    selector.pin_strategy(lm)
    assert selector.strategy_name == "native-strict-cover" and len(selector.select.demos) == 1


def test_an_evaluation_records_the_strategy_that_ran(tmp_path):
    import json

    from evals.evaluation import evaluate
    from evals.suite import Suite, load_suite

    case = next(c for c in load_suite("finance").split("test") if len(c.expected_calls) == 1
                and c.expected_calls[0].arguments)
    expected = case.expected_calls[0]
    call = json.dumps({"name": expected.tool_name,
                       "arguments": {name: values[0] for name, values in expected.acceptable().items()}})
    lm, llama = staged_lm(tmp_path, ["<tool_call>", "\n" + call, "\n</tool_call>"])
    result = evaluate(Suite(name="finance", cases=[case]), lm, split=None,
                      run=RunConfig(run_dir=tmp_path / "run", mlflow=False, progress=False))
    assert result.params["strategy"] == "native-strict-cover" and llama.calls[1]["grammar"] is not None
    assert result.results.iloc[0]["full_match"] == 1.0


def test_a_call_refused_by_keep_call_ends_the_answer_in_a_fence_too():
    from tool_selection.lm.strict_calls import new_call

    other = CALL.replace("Oslo", "Bergen")
    looping = ["```json\n", "\n" + CALL, '\n{"', other, '\n{"', CALL, '\n{"', other, "\n```"]
    llama = StagedLlama(looping)
    llama.trace = GenerationTrace(top_logprobs=0)
    result = strict_tool_completion(llama, "<user>rain?\n<assistant>", grammar="G", max_tokens=200,
                                    stop=["<|im_end|>"], rules=OwnCalls(keep=new_call))
    assert result["choices"][0] == {"text": "```json\n" + CALL + "\n" + other + "\n```", "finish_reason": "stop"}
    assert len(llama.calls) == 6  # the repeat was the last call decoded
    assert "".join(token.piece.decode() for token in llama.trace.tokens) == "```json\n" + CALL + "\n" + other + "\n"
    assert complete(StagedLlama(looping))["choices"][0]["text"].count(CALL) == 2  # without it, repeats are kept
