"""max_calls: the most calls one decision keeps (a spec field: a flag, a sweep axis and a param with no other edit)."""

import json

import dspy
from dspy.utils.dummies import DummyLM

from evals.cli_experiment import experiment
from tool_selection.cli import build_parser
from tool_selection.interop import from_openai
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec, selection_params
from tool_selection.strategies import get_strategy

RATE = {"name": "get_rate", "description": "Exchange rate of one currency pair.",
        "parameters": {"type": "object", "properties": {"pair": {"type": "string"}}, "required": ["pair"]}}
TOOLS = from_openai([RATE], name="rates")
THREE = {"reasoning": "three pairs", "tool_calls": json.dumps(
    [{"tool_name": "get_rate", "arguments": {"pair": pair}} for pair in ("EURUSD", "GBPUSD", "JPYUSD")])}


def _decide(max_calls):
    selector = MultiToolSelector.from_spec(SelectorSpec(strategy="json-cot", relevance="none", max_calls=max_calls))
    with dspy.context(lm=DummyLM([THREE], adapter=dspy.JSONAdapter())):
        return selector(request="EUR, GBP and JPY to USD?", tools=TOOLS)


def test_a_decision_keeps_at_most_max_calls_and_counts_the_rest():
    capped = _decide(2)
    assert [c.arguments["pair"] for c in capped.decision.tool_calls] == ["EURUSD", "GBPUSD"]
    assert capped.tool_calls == capped.decision.tool_calls and capped.row_extras["calls_dropped"] == 1.0
    free = _decide(None)
    assert len(free.decision.tool_calls) == 3 and "calls_dropped" not in (getattr(free, "row_extras", None) or {})


def test_strict_decoding_opens_no_call_past_it():
    selector = MultiToolSelector.from_spec(SelectorSpec(strategy="native-strict-cover", relevance="none", max_calls=2))
    assert get_strategy("native-strict-cover").more_calls > 1
    with dspy.context(lm=DummyLM([THREE], adapter=dspy.JSONAdapter())):
        try:
            selector(request="EUR, GBP and JPY to USD?", tools=TOOLS)
        except Exception:  # a dummy LM cannot answer the native format; the budget is set before it is asked
            pass
    assert selector.strategy.more_calls == 1


def test_it_is_a_flag_and_a_recorded_param():
    chosen = experiment(build_parser().parse_args(["eval", "--max-calls", "2"]))
    assert chosen.selector.max_calls == 2
    assert selection_params(chosen.selector, relevance=None)["max_calls"] == 2
    assert "max_calls" not in selection_params(SelectorSpec(), relevance=None)
