"""Arguments a call's tool does not declare: refused by default, or dropped and counted when asked."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.evaluation import evaluate
from evals.rescore import rescore_run
from evals.suite import Suite, load_suite
from tool_selection import ToolSelectionError, load_tool_set
from tool_selection.cli import build_parser
from tool_selection.interop import from_openai
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec
from tool_selection.strategies import drop_undeclared

WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                          "additionalProperties": False}}
TOOLS = from_openai([WEATHER], name="weather")
ECHOED = {"city": "Oslo", "type": "object", "required": ["city"]}  # what a small model copies from the schema


def _answer(arguments):
    return {"reasoning": "weather", "tool_calls": json.dumps([{"tool_name": "get_weather", "arguments": arguments}])}


def _decide(undeclared, arguments=ECHOED):
    selector = MultiToolSelector(TOOLS, strategy="json-cot", undeclared_arguments=undeclared)
    with dspy.context(lm=DummyLM([_answer(arguments)], adapter=dspy.JSONAdapter())):
        return selector(request="Weather in Oslo?")


def test_by_default_a_call_with_undeclared_arguments_is_invalid():
    prediction = _decide("refuse")
    assert prediction.decision.has_invalid_arguments
    assert prediction.decision.problems[0].fields == ["required,type"]  # one schema error names both
    assert "undeclared_dropped" not in (getattr(prediction, "row_extras", None) or {})


def test_dropping_undeclared_arguments_leaves_the_declared_ones_checked():
    prediction = _decide("drop")
    assert prediction.decision.tool_calls[0].arguments == {"city": "Oslo"} and not prediction.decision.problems
    assert prediction.tool_calls == prediction.decision.tool_calls
    assert prediction.row_extras["undeclared_dropped"] == 2.0
    # a declared argument that is wrong stays wrong: only undeclared keys go
    wrong = _decide("drop", {"city": 7, "type": "object"})
    assert wrong.decision.has_invalid_arguments and wrong.decision.problems[0].fields == ["city"]
    assert wrong.row_extras["undeclared_dropped"] == 1.0
    assert _decide("drop", {"city": "Oslo"}).row_extras["undeclared_dropped"] == 0.0


def test_unknown_tools_and_tools_that_allow_extras_keep_their_arguments():
    from tool_selection.decision import MultiToolDecision, ToolCall

    decision = MultiToolDecision(tool_calls=[ToolCall(tool_name="get_forecast", arguments={"type": "object"})])
    assert drop_undeclared(decision, TOOLS) == (decision, 0)
    assert TOOLS.get("get_weather").undeclared_arguments({"city": "Oslo", "units": "C"}) == ["units"]
    open_schema = from_openai([{**WEATHER, "parameters": {**WEATHER["parameters"], "additionalProperties": True}}])
    assert open_schema.get("get_weather").undeclared_arguments({"city": "Oslo", "units": "C"}) == []


def test_a_bad_choice_is_a_clear_error():
    with pytest.raises(ToolSelectionError, match="undeclared_arguments must be one of refuse, drop, got 'ignore'"):
        MultiToolSelector(TOOLS, strategy="json-cot", undeclared_arguments="ignore")
    args = build_parser().parse_args(["eval", "--undeclared-arguments", "drop"])
    assert args.undeclared_arguments == "drop"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "--undeclared-arguments", "ignore"])


def _finance_run(run_dir, extra=None, **selector):
    """One finance case answered right plus ``extra`` arguments (default: an echoed schema key), evaluated with
    the ``selector`` fields given."""
    extra = {"type": "object"} if extra is None else extra
    case = next(c for c in load_suite("finance").split("test") if len(c.expected_calls) == 1
                and c.expected_calls[0].arguments)
    call = case.expected_calls[0]
    right = {name: values[0] for name, values in call.acceptable().items()}
    lm = DummyLM([{"reasoning": "r", "tool_calls": json.dumps([{"tool_name": call.tool_name,
                                                                "arguments": {**right, **extra}}])}],
                 adapter=dspy.JSONAdapter())
    result = evaluate(Suite(name="finance", cases=[case]), lm, split=None,
                      selector=SelectorSpec(strategy="json-cot", **selector),
                      run=RunConfig(run_dir=run_dir, mlflow=False, progress=False))
    return result, call, right


def test_an_evaluation_that_drops_records_it_and_a_rescore_keeps_doing_it(tmp_path):
    run_dir = tmp_path / "run"
    result, call, right = _finance_run(run_dir, undeclared_arguments="drop")
    row = result.results.iloc[0]
    assert result.params["undeclared_arguments"] == "drop"
    assert row["undeclared_dropped"] == 1.0 and row["full_match"] == 1.0
    assert rescore_run(run_dir) == 0  # the stored calls are the dropped ones; scoring them again changes nothing
    assert load_tool_set("finance").registry().get(call.tool_name).undeclared_arguments(right) == []


def test_a_finished_run_is_scored_again_as_a_dropping_run_would_score_it(tmp_path):
    import pandas as pd

    from tool_selection.cli import main

    refused, _, _ = _finance_run(tmp_path / "run")
    assert refused.results.iloc[0]["full_match"] == 0.0

    assert main(["eval", "rescore", str(tmp_path / "run"), "--undeclared-arguments", "drop",
                 "--into", str(tmp_path / "dropped")]) == 0
    row = pd.read_parquet(tmp_path / "dropped" / "results.parquet").iloc[0]
    assert row["full_match"] == 1.0 and row["undeclared_dropped"] == 1.0
    params = json.loads((tmp_path / "dropped" / "summary.json").read_text())["params"]
    assert params["undeclared_arguments"] == "drop" and params["derived_from"] == str(tmp_path / "run")
    assert pd.read_parquet(tmp_path / "run" / "results.parquet").iloc[0]["full_match"] == 0.0  # the source stays
    assert main(["eval", "rescore", str(tmp_path / "run"), "--into", str(tmp_path / "x")]) == 2


def test_a_copy_counts_rows_scored_differently_not_rows_given_the_new_column(tmp_path):
    import pandas as pd

    from evals.rescore import rescore_as

    _finance_run(tmp_path / "clean", extra={})
    assert rescore_as(tmp_path / "clean", tmp_path / "clean-dropped", {"undeclared_arguments": "drop"}) == 0
    assert pd.read_parquet(tmp_path / "clean-dropped" / "results.parquet").iloc[0]["undeclared_dropped"] == 0.0
    _finance_run(tmp_path / "echoed")
    assert rescore_as(tmp_path / "echoed", tmp_path / "echoed-dropped", {"undeclared_arguments": "drop"}) == 1
