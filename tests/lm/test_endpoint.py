"""Servers named by a DSPy model string: where a spec is sent, whether the server answers, and whether it takes native
tool calls (which the default strategy runs as)."""

from __future__ import annotations

import http.server
import os
import re
import socket
import threading

import dspy
import pytest

from tool_selection.lm import endpoint as endpoints
from tool_selection.lm.endpoint import (
    Endpoint,
    EndpointError,
    check_endpoint,
    check_model_route,
    endpoint_for,
    native_tools,
)
from tool_selection.lm.specs import ModelSpecError
from tool_selection.selector import MultiToolSelector
from tool_selection.strategies import get_strategy


@pytest.fixture(autouse=True)
def no_base_variables(monkeypatch):
    for variable in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "HOSTED_VLLM_API_BASE", "OLLAMA_API_BASE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(endpoints, "_probed", {})


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def answering_server():
    """A server that answers every request with 404, as a server without a /models route does."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_the_address_comes_from_api_base_then_the_providers_variable(monkeypatch):
    assert endpoint_for("openai/gpt-4o-mini") is None  # a hosted provider at its usual address
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1/")
    assert endpoint_for("openai/qwen") == Endpoint("http://127.0.0.1:9/v1", "OPENAI_API_BASE")
    assert endpoint_for("openai/qwen", "http://10.0.0.2:8000/v1") == Endpoint("http://10.0.0.2:8000/v1", "api_base=")
    assert endpoint_for("anthropic/claude-sonnet-4") is None
    assert endpoint_for("ollama_chat/qwen2.5").url == "http://localhost:11434"


def test_a_server_that_does_not_answer_is_named_with_what_to_change(monkeypatch):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("OPENAI_API_BASE", url)
    with pytest.raises(EndpointError, match=rf"No model server answers at {url} .*comes from OPENAI_API_BASE"):
        check_model_route("openai/any-name")
    check_model_route("local:qwen2.5-coder-0.5b")  # not a server: nothing to check


def test_a_hosted_provider_without_its_key_is_named_before_litellm_loads(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelSpecError, match="anthropic/claude-sonnet-4 needs ANTHROPIC_API_KEY in the environment"):
        check_model_route("anthropic/claude-sonnet-4")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    check_model_route("anthropic/claude-sonnet-4")
    monkeypatch.setenv("GOOGLE_API_KEY", "g-test")
    check_model_route("gemini/gemini-2.0-flash")  # either of its keys will do


@pytest.mark.parametrize("provider", sorted(endpoints.PROVIDER_KEYS))
def test_the_providers_keys_are_the_ones_litellm_asks_for(provider, monkeypatch):
    import litellm

    for key in [name for name in os.environ if name.endswith(("_API_KEY", "_API_BASE"))]:
        monkeypatch.delenv(key)
    missing = litellm.validate_environment(model=f"{provider}/some-model").get("missing_keys") or []
    assert sorted(key for key in missing if key.endswith("_API_KEY")) == sorted(endpoints.PROVIDER_KEYS[provider])


def test_any_http_answer_counts_as_a_server(answering_server):
    check_endpoint(Endpoint(answering_server, "api_base="))


class ScriptedLM(dspy.LM):
    """An LM on a server of one's own whose answer to the probe is scripted; counts its calls."""

    def __init__(self, answer, api_base="http://127.0.0.1:9/v1"):
        super().__init__("openai/any-name", api_base=api_base, cache=False)
        self.answer, self.calls = answer, []

    def copy(self, **kwargs):
        return self

    def __call__(self, prompt=None, messages=None, **kwargs):
        self.calls.append(kwargs)
        if isinstance(self.answer, Exception):
            raise self.answer
        return [self.answer]


NAME = endpoints.PROBE_TOOL["function"]["name"]
NATIVE_CALL = {"text": None, "tool_calls": [{"type": "function", "function": {"name": NAME, "arguments": "{}"}}]}


@pytest.mark.parametrize(("answer", "supported", "how"), [
    (NATIVE_CALL, True, "with a native call"),
    (f'```json\n{{"name": "{NAME}", "arguments": {{}}}}\n```', True, "the call came back as text"),
    ('```json\n{"name": "ping", "arguments": {}}\n```', False, "without calling the tool"),  # tools not shown
    ("The service is up.", False, "without calling the tool"),
    (RuntimeError("tools param requires --jinja flag\nmore"), False, "refused a request with tools \\(tools param"),
])
def test_a_server_is_asked_once_whether_it_shows_the_model_its_tools(answer, supported, how):
    lm = ScriptedLM(answer)
    support = native_tools(lm)
    assert support.supported is supported and support.how.startswith("http://127.0.0.1:9/v1")
    assert re.search(how, support.how)
    assert native_tools(lm) == support and len(lm.calls) == 1  # asked once per address and model
    assert lm.calls[0]["tools"] == [endpoints.PROBE_TOOL]


def test_auto_runs_natively_where_the_server_takes_calls_and_as_text_where_it_does_not():
    auto = get_strategy("auto")
    assert auto.resolved_name(ScriptedLM(NATIVE_CALL)) == "native"
    assert auto.resolved_name(ScriptedLM("Pong.", api_base="http://127.0.0.1:10/v1")) == "json-cot"
    assert auto.resolved_name(dspy.LM("openai/gpt-4o-mini")) == "native"  # LiteLLM knows it
    with pytest.raises(Exception, match="native strategy"):
        get_strategy("native").check_lm(ScriptedLM("Pong."))  # named explicitly, native still says what it needs


def test_pinning_auto_to_a_text_strategy_builds_its_predictor_and_records_why():
    from tool_sets.datetime import TOOL_SET

    selector = MultiToolSelector(TOOL_SET)
    assert selector.pin_strategy(ScriptedLM("Pong.")) == "json-cot"
    assert selector.strategy.name == "json-cot" and type(selector.select) is type(
        get_strategy("json-cot").build_predictor())
    assert selector.strategy_reason == ("auto runs as json-cot: http://127.0.0.1:9/v1 answered a request with tools "
                                        "without calling the tool")
