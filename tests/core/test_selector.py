"""MultiToolSelector with DSPy's dummy LM: decisions, recorded problems, parse failures, constraints."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from tests.core.tools_fixture import Add, Echo, Now
from tool_selection import ToolSelectionError, ToolSet
from tool_selection.interop import from_openai
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter, response_schema

TOOLS = ToolSet(name="fixture", tools=(Echo, Add, Now))
JSON = dspy.JSONAdapter()  # the selector answers in its strategy's format (json-cot: JSON), whatever is configured


def answer(*calls, reasoning="because"):
    return {"reasoning": reasoning, "tool_calls": json.dumps([{"tool_name": n, "arguments": a} for n, a in calls])}


def test_valid_calls_become_a_clean_decision():
    lm = DummyLM([answer(("add_numbers", {"a": 1, "b": 2}), ("get_time", {}))], adapter=JSON)
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="json-cot").decide("add 1 and 2, and what time is it?")
    assert decision.tool_names == ["add_numbers", "get_time"]
    assert decision.valid and not decision.abstained
    assert decision.reasoning == "because"


def test_no_call_is_a_first_class_answer():
    lm = DummyLM([answer()], adapter=JSON)
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="json-cot").decide("tell me a joke")
    assert decision.abstained and decision.valid


def test_unknown_tools_and_invalid_arguments_are_recorded_not_raised():
    lm = DummyLM([answer(("echo", {"message": "", "times": 7}), ("send_email", {"to": "x"}))], adapter=JSON)
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="json-cot").decide("echo nothing seven times and email x")
    assert decision.tool_names == ["echo", "send_email"]
    kinds = {p.kind: p for p in decision.problems}
    assert kinds["invalid_arguments"].fields == ["message", "times"]
    assert kinds["unknown_tool"].tool_name == "send_email"
    assert decision.has_unknown_tool and decision.has_invalid_arguments and not decision.valid


def test_malformed_answer_is_a_parse_failure_not_a_crash():
    lm = DummyLM([{"reasoning": "hmm", "tool_calls": "call echo please"}] * 2)
    with dspy.context(lm=lm):
        decision = MultiToolSelector(TOOLS, strategy="json-cot").decide("echo hi")
    assert decision.parse_error and "AdapterParseError" in decision.parse_error
    assert not decision.abstained and decision.tool_calls == []


def test_tools_can_be_given_per_call_including_schema_only_catalogs():
    catalog = from_openai([{"name": "get_weather", "description": "Weather for a city.",
                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                           "required": ["city"]}}])
    lm = DummyLM({"Oslo": answer(("get_weather", {"city": "Oslo"}))}, adapter=JSON)
    with dspy.context(lm=lm):
        decision = MultiToolSelector(strategy="json-cot").decide("weather in Oslo?", tools=catalog)
    assert decision.tool_names == ["get_weather"] and decision.valid
    prompt = lm.history[-1]["messages"][-1]["content"]
    assert "get_weather: Weather for a city." in prompt


def test_selector_without_tools_explains_what_to_pass():
    with pytest.raises(ToolSelectionError, match="pass tools="):
        MultiToolSelector(strategy="json-cot").decide("hi")


def test_response_schema_allows_only_listed_tools_with_their_arguments():
    import jsonschema

    schema = response_schema(TOOLS.registry())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    ok = {"reasoning": "r", "tool_calls": [{"tool_name": "echo", "arguments": {"message": "hi"}}]}
    assert validator.is_valid(ok)
    assert validator.is_valid({"reasoning": "r", "tool_calls": []})
    assert not validator.is_valid({"reasoning": "r", "tool_calls": [{"tool_name": "nope", "arguments": {}}]})
    assert not validator.is_valid({"reasoning": "r", "tool_calls": [{"tool_name": "echo", "arguments": {"times": 2}}]})


class RecordingDummyLM(DummyLM):
    """DummyLM that declares structured-output support, so the adapter sends a response_format."""

    @property
    def supported_params(self):
        return {*super().supported_params, "response_format"}


def test_adapter_sends_the_per_call_schema_as_response_format():
    adapter = ToolSelectionAdapter()
    lm = RecordingDummyLM([{"reasoning": "r", "tool_calls": [{"tool_name": "get_time", "arguments": {}}]}],
                          adapter=adapter)
    with dspy.context(lm=lm, adapter=adapter):
        decision = MultiToolSelector(TOOLS, strategy="json-cot").decide("time?")
    assert decision.tool_names == ["get_time"]
    sent = lm.history[-1]["kwargs"]["response_format"]
    assert sent["type"] == "json_schema"
    names = [s["properties"]["tool_name"]["const"] for s in sent["json_schema"]["schema"]["properties"]["tool_calls"]["items"]["anyOf"]]
    assert sorted(names) == ["add_numbers", "echo", "get_time"]
    assert "tool_selection_response_schema" not in lm.history[-1]["kwargs"]


def test_demonstrations_never_show_the_tool_listing_and_the_state_saves_as_json(tmp_path):
    lm = DummyLM([answer(("get_time", {}))])
    selector = MultiToolSelector(TOOLS, strategy="json-cot")
    registry = TOOLS.registry()
    selector.select.predict.demos = [dspy.Example(request="add 1 and 2", tools=registry, case={"id": "c-1"},
                                                  reasoning="sum", tool_calls=[{"tool_name": "add_numbers",
                                                                                "arguments": {"a": 1, "b": 2}}])]
    with dspy.context(lm=lm):
        selector.decide("what time is it?")
    prompt = "\n".join(m["content"] for m in lm.history[-1]["messages"])
    assert "add 1 and 2" in prompt and "ToolRegistry" not in prompt and "c-1" not in prompt
    assert prompt.count("add_numbers:") == 1  # the listing appears once, for the request itself
    selector.save(str(tmp_path / "program.json"))
    (demo,) = json.loads((tmp_path / "program.json").read_text())["select.predict"]["demos"]
    assert set(demo) == {"request", "reasoning", "tool_calls"}
