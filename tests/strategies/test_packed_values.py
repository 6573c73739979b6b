"""Values a request lists that a call packs into one string argument are made one call each."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.suite import Case
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.packed_values import values_apart
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec

WEATHER = {"name": "weather", "description": "The current weather in a city.",
           "parameters": {"type": "object", "required": ["city"], "properties": {
               "city": {"type": "string", "description": "The city."},
               "fields": {"type": "string", "description": "Which measure: temperature or humidity."},
               "days": {"type": "integer", "description": "Days ahead."}}}}
STORES = {"name": "find_stores", "description": "Stores that sell items.",
          "parameters": {"type": "object", "required": ["items"], "properties": {
              "items": {"type": "array", "items": {"type": "string"}, "description": "What to buy."},
              "city": {"type": "string", "description": "Where."}}}}
TOOLS = from_openai([WEATHER, STORES], name="city")


def decision(*calls):
    return MultiToolDecision(tool_calls=[ToolCall(tool_name=name, arguments=arguments) for name, arguments in calls])


def cities(made):
    return [call.arguments["city"] for call in made.tool_calls]


@pytest.mark.parametrize(("request_text", "packed", "expected"), [
    ("Weather in New York, Los Angeles, London and Tokyo?", "New York, Los Angeles, London, Tokyo",
     ["New York", "Los Angeles", "London", "Tokyo"]),
    ("Weather in Berlin and Madrid's old towns", "Berlin, Madrid", ["Berlin", "Madrid"]),
    ("Weather in Oslo or Bergen", "Oslo; Bergen", ["Oslo", "Bergen"]),
])
def test_a_packed_string_is_made_one_call_per_listed_value(request_text, packed, expected):
    apart, packed_calls = values_apart(decision(("weather", {"city": packed, "days": 2})), TOOLS, request_text)
    assert packed_calls == 1 and apart.valid
    assert cities(apart) == expected
    assert all(call.arguments["days"] == 2 for call in apart.tool_calls)


def test_two_packed_arguments_give_every_pairing_and_no_call_twice():
    request = "Temperature and humidity in Oslo and Lima"
    made = decision(("weather", {"city": "Oslo, Lima", "fields": "temperature, humidity"}),
                    ("weather", {"city": "Oslo", "fields": "temperature"}))
    apart, packed = values_apart(made, TOOLS, request)
    assert packed == 1
    assert [(c.arguments["city"], c.arguments["fields"]) for c in apart.tool_calls] == [
        ("Oslo", "temperature"), ("Oslo", "humidity"), ("Lima", "temperature"), ("Lima", "humidity")]


@pytest.mark.parametrize(("request_text", "call"), [
    ("Weather in New York City, NY", ("weather", {"city": "New York City, NY"})),  # written whole
    ("Rock and jazz weather in Paris", ("weather", {"city": "Paris", "fields": "rock and jazz"})),
    ("Weather in Oslo and Lima", ("weather", {"city": "Oslo, Peru"})),  # a part the request does not write
    ("Weather at points (1, 2) and (3, 4)", ("weather", {"city": "[1, 2], [3, 4]"})),  # a literal
    ("Stores with milk and bread", ("find_stores", {"items": ["milk", "bread"]})),  # an array takes several
    ("Stores with milk and bread", ("find_stores", {"items": ["milk, bread"]})),  # inside an array: not a string
])
def test_values_written_whole_or_not_packed_in_a_string_are_left_as_they_are(request_text, call):
    made = decision(call)
    assert values_apart(made, TOOLS, request_text) == (made, 0)


def _answer(*cities_asked):
    return {"reasoning": "r", "tool_calls": json.dumps([{"tool_name": "weather", "arguments": {"city": c}}
                                                        for c in cities_asked])}


def test_the_selector_takes_them_apart_by_default_and_keeps_them_as_written_on_request():
    for setting, expected, counted in (("apart", ["Oslo", "Lima"], 1.0), ("as-written", ["Oslo, Lima"], None)):
        spec = SelectorSpec(strategy="json-cot", relevance="none", packed_values=setting)
        with dspy.context(lm=DummyLM([_answer("Oslo, Lima")], adapter=dspy.JSONAdapter())):
            prediction = MultiToolSelector.from_spec(spec)(request="Weather in Oslo and Lima?", tools=TOOLS)
        assert cities(prediction.decision) == expected
        assert (getattr(prediction, "row_extras", None) or {}).get("values_apart") == counted


def test_a_finished_run_is_read_with_the_values_apart_into_a_copy(tmp_path, finished_run, read_again):
    case = Case(id="weather-1", request="Weather in Oslo and Lima?", tools=[WEATHER], expected_calls=[
        {"tool_name": "weather", "arguments": {"city": c}} for c in ("Oslo", "Lima")])
    run, suite_file = finished_run(case, _answer("Oslo, Lima"),
                                   SelectorSpec(strategy="json-cot", relevance="none", packed_values="as-written"))
    before, row = read_again(run, suite_file, "--packed-values", "apart")
    assert before["full_match"] == 0.0
    assert row["full_match"] == 1.0 and row["values_apart"] == 1.0
