"""Values a request pairs "respectively" are given one per call where the model gave every call all of them."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.suite import Case
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.respective_values import respective_values
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec

PLAY = {"name": "play", "description": "Play an artist's songs for a while.",
        "parameters": {"type": "object", "required": ["artist", "minutes"], "properties": {
            "artist": {"type": "string", "description": "The artist."},
            "minutes": {"type": "integer", "description": "How long."}}}}
PRICES = {"name": "prices", "description": "Stock prices of companies over a period.",
          "parameters": {"type": "object", "required": ["companies", "period"], "properties": {
              "companies": {"type": "array", "items": {"type": "string"}, "description": "Company names."},
              "period": {"type": "string", "description": "The period."}}}}
TOOLS = from_openai([PLAY, PRICES], name="media")
REQUEST = "Play Taylor Swift and Maroon 5 for 20 and 15 minutes respectively."


def decision(*calls):
    return MultiToolDecision(tool_calls=[ToolCall(tool_name=name, arguments=arguments) for name, arguments in calls])


def test_a_packed_string_is_given_out_one_part_per_call_in_order():
    packed = decision(("play", {"artist": "Taylor Swift, Maroon 5", "minutes": 20}),
                      ("play", {"artist": "Taylor Swift, Maroon 5", "minutes": 15}))
    paired, count = respective_values(packed, TOOLS, REQUEST)
    assert count == 2
    assert paired.tool_calls == decision(("play", {"artist": "Taylor Swift", "minutes": 20}),
                                         ("play", {"artist": "Maroon 5", "minutes": 15})).tool_calls


def test_a_packed_list_is_given_out_as_one_item_lists():
    request = "Prices for Apple and Tesla over 1 week and 1 month respectively."
    packed = decision(("prices", {"companies": ["Apple", "Tesla"], "period": "1 week"}),
                      ("prices", {"companies": ["Apple", "Tesla"], "period": "1 month"}))
    paired, count = respective_values(packed, TOOLS, request)
    assert count == 2 and [call.arguments["companies"] for call in paired.tool_calls] == [["Apple"], ["Tesla"]]


@pytest.mark.parametrize(("request_text", "calls"), [
    ("Play Taylor Swift and Maroon 5 for 20 and 15 minutes.",  # no "respectively": both asked of each call
     [("play", {"artist": "Taylor Swift, Maroon 5", "minutes": 20}),
      ("play", {"artist": "Taylor Swift, Maroon 5", "minutes": 15})]),
    (REQUEST, [("play", {"artist": "Taylor Swift, Maroon 5", "minutes": 20})]),  # one call: nothing to pair
    (REQUEST, [("play", {"artist": "Taylor Swift", "minutes": 20}),  # the calls differ: the model paired them
               ("play", {"artist": "Maroon 5", "minutes": 15})]),
    ("Play Taylor Swift, Maroon 5 for 20 and 15 minutes respectively.",  # written together: one value
     [("play", {"artist": "Taylor Swift, Maroon 5", "minutes": 20}),
      ("play", {"artist": "Taylor Swift, Maroon 5", "minutes": 15})]),
    (REQUEST, [("play", {"artist": "Taylor Swift, Maroon 5, Adele", "minutes": 20}),  # a part not written
               ("play", {"artist": "Taylor Swift, Maroon 5, Adele", "minutes": 15})]),
])
def test_values_are_left_as_they_are_where_the_request_does_not_pair_them(request_text, calls):
    made = decision(*calls)
    assert respective_values(made, TOOLS, request_text) == (made, 0)


def _answer(artist):
    calls = [{"tool_name": "play", "arguments": {"artist": artist, "minutes": minutes}} for minutes in (20, 15)]
    return {"reasoning": "r", "tool_calls": json.dumps(calls)}


def test_the_selector_pairs_them_by_default_and_keeps_them_as_written_on_request():
    for setting, artists, counted in (("paired", ["Taylor Swift", "Maroon 5"], 2.0),
                                      ("as-written", ["Taylor Swift, Maroon 5"] * 2, None)):
        spec = SelectorSpec(strategy="json-cot", relevance="none", respectively=setting)
        with dspy.context(lm=DummyLM([_answer("Taylor Swift, Maroon 5")], adapter=dspy.JSONAdapter())):
            prediction = MultiToolSelector.from_spec(spec)(request=REQUEST, tools=TOOLS)
        assert [call.arguments["artist"] for call in prediction.decision.tool_calls] == artists
        assert (getattr(prediction, "row_extras", None) or {}).get("respective_values") == counted


def test_a_finished_run_is_read_with_respective_values_into_a_copy(tmp_path, finished_run, read_again):
    case = Case(id="play-1", request=REQUEST, tools=[PLAY], expected_calls=[
        {"tool_name": "play", "arguments": {"artist": "Taylor Swift", "minutes": 20}},
        {"tool_name": "play", "arguments": {"artist": "Maroon 5", "minutes": 15}}])
    run, suite_file = finished_run(case, _answer("Taylor Swift, Maroon 5"),
                                   SelectorSpec(strategy="json-cot", relevance="none", respectively="as-written"))
    before, row = read_again(run, suite_file, "--respectively", "paired")
    assert before["full_match"] == 0.0
    assert row["full_match"] == 1.0 and row["respective_values"] == 2.0
