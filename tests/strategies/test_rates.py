"""Rates a request writes as percentages: passed as decimals to a rate parameter by default, or as written."""

import json

import dspy
import pandas as pd
from dspy.utils.dummies import DummyLM

from evals.suite import Case
from tool_selection.cli import main
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.rates import decimal_rates, percentages, rate_parameters
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec

FUTURE_VALUE = {"name": "future_value", "description": "What an investment grows to.",
                "parameters": {"type": "object", "required": ["principal", "interest_rate", "years"], "properties": {
                    "principal": {"type": "number", "description": "The amount invested."},
                    "interest_rate": {"type": "number", "description": "The annual interest rate."},
                    "years": {"type": "integer", "description": "How many years."},
                    "fee_rate_percent": {"type": "number", "description": "The yearly fee."},
                    "tax": {"type": "number", "description": "The tax rate as a percentage."},
                    "growth_steps": {"type": "integer", "description": "Growth steps per year."}}}}
TOOLS = from_openai([FUTURE_VALUE], name="invest")
REQUEST = "What do $1,000 grow to at 5% a year for 10 years, with a 1% fee and 20% tax?"


def _call(**arguments) -> ToolCall:
    return ToolCall(tool_name="future_value", arguments={"principal": 1000, "years": 10, **arguments})


def test_a_rate_parameter_is_a_number_named_or_described_as_a_rate_and_not_as_a_percent():
    assert rate_parameters(FUTURE_VALUE["parameters"]) == {"interest_rate"}
    assert percentages(REQUEST) == {5.0, 1.0, 20.0}
    assert percentages("Grow 1,000 for 10 years") == set()


def test_a_rate_the_request_writes_as_a_percentage_becomes_a_decimal_and_nothing_else_changes():
    copied = MultiToolDecision(tool_calls=[_call(interest_rate=5, fee_rate_percent=1, tax=20)])
    decision, rewritten = decimal_rates(copied, TOOLS, REQUEST)
    assert rewritten == 1 and decision.tool_calls == [_call(interest_rate=0.05, fee_rate_percent=1, tax=20)]
    for unchanged in (_call(interest_rate=0.05), _call(interest_rate=7)):  # already a decimal; not a written %
        kept = MultiToolDecision(tool_calls=[unchanged])
        assert decimal_rates(kept, TOOLS, REQUEST) == (kept, 0)
    five = MultiToolDecision(tool_calls=[_call(interest_rate=5)])
    assert decimal_rates(five, TOOLS, "Grow $1,000 at 5 a year for 10 years") == (five, 0)


def _answer(rate):
    return {"reasoning": "r", "tool_calls": json.dumps([{"tool_name": "future_value",
                                                         "arguments": {"principal": 1000, "interest_rate": rate,
                                                                       "years": 10}}])}


def test_the_selector_writes_decimals_by_default_and_counts_them_or_keeps_the_models_number():
    for rates, expected, counted in (("decimal", 0.05, 1.0), ("as-written", 5, None)):
        selector = MultiToolSelector.from_spec(SelectorSpec(strategy="json-cot", relevance="none", rates=rates))
        with dspy.context(lm=DummyLM([_answer(5)], adapter=dspy.JSONAdapter())):
            prediction = selector(request=REQUEST, tools=TOOLS)
        assert prediction.decision.tool_calls[0].arguments["interest_rate"] == expected
        assert (getattr(prediction, "row_extras", None) or {}).get("rates_as_decimals") == counted


def test_a_finished_run_is_read_with_decimal_rates_or_copied_as_written(tmp_path, finished_run):
    case = Case(id="fv-1", request=REQUEST, tools=[FUTURE_VALUE], expected_calls=[
        {"tool_name": "future_value", "arguments": {"principal": 1000, "interest_rate": 0.05, "years": 10}}])
    run, suite_file = finished_run(case, _answer(5), SelectorSpec(strategy="json-cot", relevance="none",
                                                                  rates="as-written"))
    assert pd.read_parquet(run / "results.parquet").iloc[0]["full_match"] == 0.0

    assert main(["eval", "rescore", str(run), "--rates", "decimal", "--into", str(tmp_path / "decimal"),
                 "--suite", str(suite_file)]) == 0
    row = pd.read_parquet(tmp_path / "decimal" / "results.parquet").iloc[0]
    assert row["full_match"] == 1.0 and row["rates_as_decimals"] == 1.0
    assert json.loads((tmp_path / "decimal" / "summary.json").read_text())["params"]["rates"] == "decimal"
    assert main(["eval", "rescore", str(run), "--suite", str(suite_file)]) == 0  # the run's own setting
    assert pd.read_parquet(run / "results.parquet").iloc[0]["full_match"] == 0.0
