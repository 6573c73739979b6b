"""demos: each request shown the K most similar solved train requests with their expected calls (a spec field: a
flag, a sweep axis and a param with no other edit)."""

import argparse
import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.cli_experiment import experiment
from evals.evaluation import evaluate, train_demos
from evals.suite import Case, Suite
from tests.lm.conftest import FakeLlama
from tool_selection.cli import build_parser
from tool_selection.decision import ToolCall
from tool_selection.demo_pool import Demo, DemoPool, leaving_out
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import from_openai
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec, selection_params


def _tool(name, description, argument):
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": {argument: {"type": "string"}}, "required": [argument]}}


RATE, WEATHER = _tool("get_rate", "Exchange rate of a currency pair.", "pair"), _tool("get_weather", "Weather.", "city")
TOOLS = from_openai([RATE, WEATHER], name="mixed")


def _call(name, **arguments):
    return ToolCall(tool_name=name, arguments=arguments)


CURRENCY = Demo("What is the EUR to USD exchange rate?", (_call("get_rate", pair="EURUSD"),), "train-rate")
TWO_CITIES = Demo("Weather in Paris and in Rome?", (_call("get_weather", city="Paris"),
                                                    _call("get_weather", city="Rome")), "train-cities")
JOKE = Demo("Tell me a joke about cats", (), "train-joke")
POOL = DemoPool([CURRENCY, TWO_CITIES, JOKE])


def _case(case_id, request, split, *calls):
    return Case(id=case_id, request=request, tools=[RATE, WEATHER], split=split,
                expected_calls=[{"tool_name": c.tool_name, "arguments": c.arguments} for c in calls])


SUITE = Suite("mini", [_case(d.case_id, d.request, "train", *d.tool_calls) for d in POOL.demos] + [
    _case("dev-rate", "What is the GBP to USD exchange rate?", "dev", _call("get_rate", pair="GBPUSD")),
    _case("test-rate", "Give me the JPY to USD exchange rate", "test", _call("get_rate", pair="JPYUSD")),
    _case("test-cities", "Weather in Oslo and in Lima?", "test", _call("get_weather", city="Oslo"),
          _call("get_weather", city="Lima"))])


def test_the_nearest_demos_are_the_most_similar_and_ties_keep_the_pool_order():
    assert POOL.nearest("Convert: the GBP to USD exchange rate", 1) == [CURRENCY]
    assert POOL.nearest("Weather in Oslo and in Lima?", 1) == [TWO_CITIES]
    assert POOL.nearest("zzz", 3) == [CURRENCY, TWO_CITIES, JOKE]  # nothing in common: the pool's order


def test_a_request_is_never_its_own_demo():
    assert CURRENCY not in POOL.nearest("  what is the EUR to USD   exchange rate?", 3)  # spacing and case aside
    with leaving_out("train-cities"):
        assert POOL.nearest("Weather in Paris and in Rome, please", 3) == [CURRENCY, JOKE]
    assert POOL.nearest("Weather in Paris and in Rome, please", 1) == [TWO_CITIES]


def test_an_empty_pool_is_refused():
    with pytest.raises(ToolSelectionError, match="at least one solved request"):
        DemoPool([])


def _arguments(value):
    return json.loads(value) if isinstance(value, str) else value


def test_a_several_call_demo_is_shown_as_several_calls_on_a_copy_of_the_predictor(scripted):
    lm, llama = scripted(['<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'])
    selector = MultiToolSelector.from_spec(SelectorSpec(strategy="native", relevance="none", demos=1),
                                           demo_pool=POOL)
    with dspy.context(lm=lm):
        prediction = selector(request="Weather in Oslo and in Lima?", tools=TOOLS)
    messages = llama.calls[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert messages[1]["content"] == TWO_CITIES.request
    shown = [(c["function"]["name"], _arguments(c["function"]["arguments"])) for c in messages[2]["tool_calls"]]
    assert shown == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    assert prediction.row_extras["demo_cases"] == ["train-cities"]
    assert selector.select.demos == []  # nothing left on the shared predictor for the next request


class Recording(DummyLM):
    def forward(self, prompt=None, messages=None, **kwargs):
        self.seen = messages
        return super().forward(prompt=prompt, messages=messages, **kwargs)


@pytest.mark.parametrize(("strategy", "answer"), [("json-cot", {"reasoning": "r", "tool_calls": "[]"}),
                                                  ("text:tags", {"text": ""})])
def test_the_json_and_text_strategies_show_them_as_their_compiled_demos(strategy, answer):
    lm = Recording([answer], adapter=dspy.JSONAdapter())
    selector = MultiToolSelector.from_spec(SelectorSpec(strategy=strategy, relevance="none", demos=1),
                                           demo_pool=POOL)
    with dspy.context(lm=lm):
        selector(request="Weather in Oslo and in Lima?", tools=TOOLS)
    demo_request, demo_answer = lm.seen[-3:-1]
    assert demo_request["content"].endswith(TWO_CITIES.request)
    assert "Paris" in demo_answer["content"] and "Rome" in demo_answer["content"]


def test_a_demo_without_calls_is_an_answer_without_calls(scripted):
    lm, llama = scripted(["None of the available functions can do this."])
    selector = MultiToolSelector.from_spec(SelectorSpec(strategy="native", relevance="none", demos=1),
                                           demo_pool=POOL)
    with dspy.context(lm=lm):
        selector(request="Tell me a joke about dogs", tools=TOOLS)
    user, answer = llama.calls[0]["messages"][1:3]
    assert user["content"] == JOKE.request and answer == {"role": "assistant",
                                                          "content": "None of the available functions can do this."}


def test_demos_without_a_pool_or_beside_compiled_demos_are_refused():
    spec = SelectorSpec(strategy="native", relevance="none", demos=2)
    with pytest.raises(ToolSelectionError, match=r"demos=2 \(--demos\) .* this selector has none"):
        MultiToolSelector.from_spec(spec)
    compiled = MultiToolSelector(strategy="native")
    compiled.select.demos = [CURRENCY.example()]
    from tool_selection.selector import apply_spec

    with pytest.raises(ToolSelectionError, match="compiled program has 1 of its own"):
        apply_spec(compiled, spec, model=None, gate_lm=None, demo_pool=POOL)


def test_it_is_a_flag_a_sweep_axis_and_a_recorded_param():
    parser = build_parser()
    chosen = experiment(parser.parse_args(["eval", "--demos", "3"]))
    assert chosen.selector.demos == 3 and chosen.describe()["demos"] == 3
    assert "--demos K" in parser._subparsers._group_actions[0].choices["eval"].format_help()
    assert selection_params(chosen.selector, relevance=None)["demos"] == 3
    assert "demos" not in selection_params(SelectorSpec(), relevance=None)
    from evals.sweep_cli import add_arguments, sweep_plan

    sweep = argparse.ArgumentParser()
    add_arguments(sweep)
    cells = sweep_plan(sweep.parse_args(["--demos", "1,4", "--limit", "1"])).cells()
    assert [cell.spec.demos for cell in cells] == [1, 4]


def test_the_pool_holds_the_train_cases_only_and_a_suite_without_them_is_refused():
    pool = train_demos(SUITE)
    assert [demo.case_id for demo in pool.demos] == ["train-rate", "train-cities", "train-joke"]
    assert pool.demos[1].tool_calls == TWO_CITIES.tool_calls and pool == POOL
    with pytest.raises(ToolSelectionError, match="suite 'mini:test' has no train cases .* leave --demos out"):
        train_demos(SUITE.split("test"))


class ToolsTemplate(FakeLlama):
    metadata = {"tokenizer.chat_template": "{{ tools }}"}  # what pinning the strategy reads


def test_an_evaluation_draws_the_demos_from_train_and_never_a_case_its_own(scripted, tmp_path):
    lm, llama = scripted(llama=ToolsTemplate(["None of the available functions can do this."] * 6))
    result = evaluate(SUITE, lm, selector=SelectorSpec(strategy="native", relevance="none", demos=2),
                      run=RunConfig(mlflow=False, progress=False, run_dir=tmp_path / "run"), split=None)
    shown = dict(zip(result.results["id"], result.results["demo_cases"], strict=True))
    train = {"train-rate", "train-cities", "train-joke"}
    assert all(set(ids) <= train and case_id not in ids and len(ids) == 2 for case_id, ids in shown.items())
    assert list(shown["test-rate"])[0] == "train-rate" and list(shown["test-cities"])[0] == "train-cities"
    assert result.params["demos"] == 2
    demo_turns = {m["content"] for call in llama.calls for m in call["messages"][1:-1] if m["role"] == "user"}
    assert demo_turns == {demo.request for demo in POOL.demos}  # never a dev or test request
