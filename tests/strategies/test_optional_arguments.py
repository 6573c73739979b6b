"""Optional arguments the request gives no value for are left to the tool's default, unless the spec keeps them."""

import json

import dspy
import pandas as pd
from dspy.utils.dummies import DummyLM

from evals.suite import Case
from tool_selection.cli import main
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.lm.request_values import loosely_written, number_words
from tool_selection.lm.strict_calls import request_writes
from tool_selection.optional_arguments import unwritten_optional
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec

POWER = {"name": "power", "description": "A number raised to a power, optionally modulo another.",
         "parameters": {"type": "object", "required": ["base", "exponent"], "properties": {
             "base": {"type": "integer", "description": "The base."},
             "exponent": {"type": "integer", "description": "The exponent."},
             "mod": {"type": "integer", "description": "The modulus (default none)."},
             "unit": {"type": "string", "description": "The unit of the result."},
             "exact": {"type": "boolean", "description": "Exact arithmetic."},
             "note": {"type": "string", "description": "A note kept with the result."},
             "labels": {"type": "array", "items": {"type": "string"}, "description": "Labels."}}}}
TOOLS = from_openai([POWER], name="maths")
REQUEST = "Raise 3 to the power of 5, in cm."


def test_a_request_writes_numbers_in_words_units_abbreviations_and_initials():
    assert number_words("Find air quality in San Jose for the next three days, twice.") == [3.0, 2.0]
    assert number_words("the first circle and the second one") == [1.0]  # "one" is a number; ordinals are not
    assert request_writes(3, "for the next three days") and request_writes(10, "Find ten major events")
    assert request_writes("cm", "a radius of 5cm") and request_writes("mi", "the distance in miles")
    assert request_writes("UK", "constitutional law in the United Kingdom")
    assert request_writes("square meters", "a base of 15 meters") and request_writes("2022-04-05", "April 5, 2022")
    assert not request_writes(2023, "the population of pandas in China")
    assert not request_writes(1, "the area of the first circle")  # an ordinal writes no number
    assert not request_writes("Monthly", "Compound $5,000 at 5% for 10 years")
    assert not loosely_written("km", "a walk of 5 miles") and not loosely_written("all leagues", "goals in 2019")


def test_optional_arguments_the_request_does_not_write_are_dropped_and_counted():
    note = "checked twice by hand, then filed"  # the model's own writing, not a value: kept
    made = MultiToolDecision(tool_calls=[ToolCall(tool_name="power", arguments={
        "base": 3, "exponent": 5, "mod": 1, "unit": "cm", "exact": True, "labels": ["x"], "note": note})])
    decision, dropped = unwritten_optional(made, TOOLS, REQUEST)
    assert dropped == 1  # mod: optional, a number the request does not write; the flag, the list, the text stay
    assert decision.tool_calls == [ToolCall(tool_name="power", arguments={
        "base": 3, "exponent": 5, "unit": "cm", "exact": True, "labels": ["x"], "note": note})]
    in_a_loop = "user: Raise 3 to the power of 5.\nlookup returned: the modulus is 7"  # a tool's result is written
    modulo = MultiToolDecision(tool_calls=[ToolCall(tool_name="power", arguments={"base": 3, "exponent": 5, "mod": 7})])
    assert unwritten_optional(modulo, TOOLS, in_a_loop) == (modulo, 0)
    required = MultiToolDecision(tool_calls=[ToolCall(tool_name="power", arguments={"base": 7, "exponent": 2})])
    assert unwritten_optional(required, TOOLS, REQUEST) == (required, 0)  # required values stay, written or not
    unknown = MultiToolDecision(tool_calls=[ToolCall(tool_name="other", arguments={"mod": 1})])
    assert unwritten_optional(unknown, TOOLS, REQUEST) == (unknown, 0)


def _answer(**extra):
    return {"reasoning": "r", "tool_calls": json.dumps([{"tool_name": "power",
                                                         "arguments": {"base": 3, "exponent": 5, **extra}}])}


def test_the_selector_drops_them_by_default_and_keeps_them_with_any():
    for setting, expected, counted in (("written", {"base": 3, "exponent": 5}, 1.0),
                                       ("any", {"base": 3, "exponent": 5, "mod": 1}, None)):
        spec = SelectorSpec(strategy="json-cot", relevance="none", optional_arguments=setting)
        with dspy.context(lm=DummyLM([_answer(mod=1)], adapter=dspy.JSONAdapter())):
            prediction = MultiToolSelector.from_spec(spec)(request=REQUEST, tools=TOOLS)
        assert prediction.decision.tool_calls[0].arguments == expected
        assert (getattr(prediction, "row_extras", None) or {}).get("optional_dropped") == counted


def test_a_finished_run_is_read_with_optional_arguments_dropped_into_a_copy(tmp_path, finished_run):
    case = Case(id="power-1", request=REQUEST, tools=[POWER], strict_arguments=True, expected_calls=[
        {"tool_name": "power", "arguments": {"base": 3, "exponent": 5}}])
    run, suite_file = finished_run(case, _answer(mod=1), SelectorSpec(strategy="json-cot", relevance="none",
                                                                      optional_arguments="any"))
    assert pd.read_parquet(run / "results.parquet").iloc[0]["full_match"] == 0.0

    assert main(["eval", "rescore", str(run), "--optional-arguments", "written", "--into", str(tmp_path / "written"),
                 "--suite", str(suite_file)]) == 0
    row = pd.read_parquet(tmp_path / "written" / "results.parquet").iloc[0]
    assert row["full_match"] == 1.0 and row["optional_dropped"] == 1.0
    params = json.loads((tmp_path / "written" / "summary.json").read_text())["params"]
    assert params["optional_arguments"] == "written"
    assert main(["eval", "rescore", str(run), "--suite", str(suite_file)]) == 0  # the run's own setting: any
    assert pd.read_parquet(run / "results.parquet").iloc[0]["full_match"] == 0.0
