"""Numbers a request lists that a call holds joined (510 for "5,10 and 15") are taken apart, one call per number."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.suite import Case
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.joined_numbers import listed_runs, numbers_apart
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec

FACTORIAL = {"name": "factorial", "description": "The factorial of a number.",
             "parameters": {"type": "object", "required": ["number"], "properties": {
                 "number": {"type": "integer", "description": "The number."}}}}
MORTGAGE = {"name": "mortgage", "description": "Monthly payment of a mortgage.",
            "parameters": {"type": "object", "required": ["amount", "years"], "properties": {
                "amount": {"type": "integer", "description": "The loan."},
                "years": {"type": "integer", "description": "The term in years."}}}}
TOOLS = from_openai([FACTORIAL, MORTGAGE], name="math")


def decision(*calls):
    return MultiToolDecision(tool_calls=[ToolCall(tool_name=name, arguments=arguments) for name, arguments in calls])


@pytest.mark.parametrize(("request_text", "runs"), [
    ("Find the factorial of 5,10 and 15.", [[5, 10, 15]]),
    ("a term of 15, 20 and 30 years", [[15, 20, 30]]),
    ("for 1,5 and 10 years, or 3 or 4", [[1, 5, 10], [3, 4]]),
    ("a loan of $400,000 over 15 years", []),  # 400,000 is one number; no list
    ("12,000 miles and 7% and 2.5 and 3", []),  # only whole numbers written plainly are listed
])
def test_listed_runs_are_whole_numbers_written_one_after_the_other(request_text, runs):
    assert listed_runs(request_text) == runs


@pytest.mark.parametrize(("request_text", "calls", "expected"), [
    ("Find the factorial of 5,10 and 15.", [("factorial", {"number": 510}), ("factorial", {"number": 15})],
     [5, 10, 15]),
    ("Find the factorial of 1,5 and 10.", [("factorial", {"number": 15}), ("factorial", {"number": 10})],
     [1, 5, 10]),
    ("Find the factorial of 5,10 and 15.", [("factorial", {"number": 510}), ("factorial", {"number": 5})],
     [10, 5]),  # 5 is given already: only 10 is added in the joined call's place
    ("Find the factorial of 5,10 and 15.", [("factorial", {"number": 510}), ("factorial", {"number": 5}),
                                            ("factorial", {"number": 10})], [5, 10]),  # both given: dropped
])
def test_a_joined_call_is_made_once_per_listed_number(request_text, calls, expected):
    apart, made = numbers_apart(decision(*calls), TOOLS, request_text)
    assert [call.arguments["number"] for call in apart.tool_calls] == expected
    assert made == 1 and apart.valid


def test_the_other_arguments_stay_with_each_call():
    request = "Mortgage payments on $400,000 for 15, 20 and 30 years."
    apart, made = numbers_apart(decision(("mortgage", {"amount": 400000, "years": 1520}),
                                         ("mortgage", {"amount": 400000, "years": 30})), TOOLS, request)
    assert made == 1 and [call.arguments for call in apart.tool_calls] == [
        {"amount": 400000, "years": years} for years in (15, 20, 30)]


@pytest.mark.parametrize(("request_text", "value"), [
    ("Find the factorial of 15 and of 20.", 15),  # written on its own
    ("Find the factorial of 5,10 and 15.", 515),  # 5 and 15 are not listed one after the other
    ("Find the factorial of 12,000.", 12000),  # a number written with a thousands comma
    ("Find the factorial of 5 and 10.", 105),
])
def test_numbers_the_request_writes_or_does_not_list_are_left_as_they_are(request_text, value):
    made = decision(("factorial", {"number": value}))
    assert numbers_apart(made, TOOLS, request_text) == (made, 0)


def _answer(*numbers):
    return {"reasoning": "r", "tool_calls": json.dumps([{"tool_name": "factorial", "arguments": {"number": n}}
                                                        for n in numbers])}


def test_the_selector_takes_them_apart_by_default_and_keeps_them_as_written_on_request():
    for setting, numbers, counted in (("apart", [5, 10, 15], 1.0), ("as-written", [510, 15], None)):
        spec = SelectorSpec(strategy="json-cot", relevance="none", listed_numbers=setting)
        with dspy.context(lm=DummyLM([_answer(510, 15)], adapter=dspy.JSONAdapter())):
            prediction = MultiToolSelector.from_spec(spec)(request="Factorials of 5,10 and 15.", tools=TOOLS)
        assert [call.arguments["number"] for call in prediction.decision.tool_calls] == numbers
        assert (getattr(prediction, "row_extras", None) or {}).get("numbers_apart") == counted


def test_a_finished_run_is_read_with_the_numbers_apart_into_a_copy(tmp_path, finished_run, read_again):
    case = Case(id="factorials-1", request="Factorials of 5,10 and 15.", tools=[FACTORIAL], expected_calls=[
        {"tool_name": "factorial", "arguments": {"number": n}} for n in (5, 10, 15)])
    run, suite_file = finished_run(case, _answer(510, 15),
                                   SelectorSpec(strategy="json-cot", relevance="none", listed_numbers="as-written"))
    before, row = read_again(run, suite_file, "--listed-numbers", "apart")
    assert before["full_match"] == 0.0
    assert row["full_match"] == 1.0 and row["numbers_apart"] == 1.0
