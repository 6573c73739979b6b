"""Model servers named by a DSPy model string: vLLM, Ollama, llama-server or any OpenAI-compatible proxy.

``openai/ANY-NAME`` with ``OPENAI_API_BASE`` (or ``api_base=``) reaches a server LiteLLM has never heard of, so
LiteLLM cannot say whether it takes native tool calls. This module finds the address a model string will be sent
to (``endpoint_for``), checks that something answers there before any work (``check_endpoint``), and asks the
server once whether it returns native tool calls (``native_tools``), which is how the default strategy chooses
between the model's own tool-calling format and a text one.
"""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tool_selection.errors import ToolSelectionError

if TYPE_CHECKING:
    from tool_selection.lm.specs import ModelSpec

__all__ = ["PROVIDER_KEYS", "Endpoint", "EndpointError", "ToolSupport", "api_base_set", "check_endpoint",
           "check_model_route", "endpoint_for", "lm_endpoint", "missing_key_error", "native_tools"]

# where LiteLLM reads a provider's address from when no api_base is given (first set wins), and its default
_BASE_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_BASE", "OPENAI_BASE_URL"),
    "hosted_vllm": ("HOSTED_VLLM_API_BASE",),
    "ollama": ("OLLAMA_API_BASE",),
    "ollama_chat": ("OLLAMA_API_BASE",),
    "lm_studio": ("LM_STUDIO_API_BASE",),
}
_DEFAULT_BASES = {"ollama": "http://localhost:11434", "ollama_chat": "http://localhost:11434"}
# the key a hosted provider's calls need, any one of those named (LiteLLM's validate_environment says the same: a test
# holds them equal); read here so that a missing key answers before LiteLLM's second of importing
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",), "anthropic": ("ANTHROPIC_API_KEY",), "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",), "groq": ("GROQ_API_KEY",), "together_ai": ("TOGETHERAI_API_KEY",),
    "cohere": ("COHERE_API_KEY",), "deepseek": ("DEEPSEEK_API_KEY",), "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",), "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
}
CHECK_TIMEOUT_S = 3.0


class EndpointError(ToolSelectionError):
    """A model server named by address does not answer."""


@dataclass(frozen=True)
class Endpoint:
    """The address a model string is sent to, and where that address was given (``source``: ``api_base=`` or an
    environment variable), so an error can name what to change."""

    url: str
    source: str


@dataclass(frozen=True)
class ToolSupport:
    """Whether a model takes native tool calls, and how that was found out (``how``: one line for the run)."""

    supported: bool
    how: str


def endpoint_for(model: str, api_base: str | None = None) -> Endpoint | None:
    """The server ``model`` (a DSPy model string, ``provider/name``) is sent to: ``api_base`` if given, else the
    provider's environment variable, else its default for a provider that runs on one's own machine (Ollama).
    None for a hosted provider at its usual address."""
    if api_base:
        return Endpoint(api_base.rstrip("/"), "api_base=")
    provider = _provider(model)
    for variable in _BASE_VARIABLES.get(provider, ()):
        if os.environ.get(variable, "").strip():
            return Endpoint(os.environ[variable].strip().rstrip("/"), variable)
    default = _DEFAULT_BASES.get(provider)
    return Endpoint(default, f"{provider}'s default address") if default else None


def _provider(model: str) -> str:
    """The provider of a DSPy model string (``openai`` of ``openai/NAME``; "" without one)."""
    return model.partition("/")[0].lower() if "/" in model else ""


def lm_endpoint(lm: Any) -> Endpoint | None:
    """The server a ``dspy.LM`` is sent to (``endpoint_for`` of its model and ``api_base``)."""
    model = getattr(lm, "model", None)
    if not isinstance(model, str):
        return None
    kwargs = getattr(lm, "kwargs", {}) or {}
    return endpoint_for(model, kwargs.get("api_base") or kwargs.get("base_url"))


def check_endpoint(endpoint: Endpoint, *, timeout_s: float = CHECK_TIMEOUT_S) -> None:
    """Raise ``EndpointError`` unless a server answers at ``endpoint`` within ``timeout_s`` (any HTTP answer
    counts: a key the server refuses is the model call's error to report, not a missing server)."""
    try:
        with urllib.request.urlopen(f"{endpoint.url}/models", timeout=timeout_s):
            return
    except urllib.error.HTTPError:
        return
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise EndpointError(
            f"No model server answers at {endpoint.url} ({reason}; the address comes from {endpoint.source}). Start "
            "the server (vLLM, Ollama, llama-server; 'toolsel serve model NAME' starts one for an embedded model) "
            f"or correct {endpoint.source}.") from None


def check_model_route(model: str | ModelSpec) -> None:
    """What a model spec needs to reach its model, checked before heavy imports: a server of one's own
    (``openai/NAME`` with ``OPENAI_API_BASE``, ``ollama_chat/...``) must answer; a hosted provider's key must be in
    the environment (unless some ``*_API_BASE`` sends it elsewhere). Nothing for embedded and served models."""
    from tool_selection.lm.specs import ModelSpec

    spec = ModelSpec.of(model)
    if spec.kind != "dspy":
        return
    if (endpoint := endpoint_for(spec.target)) is not None:
        check_endpoint(endpoint)
        return
    keys = PROVIDER_KEYS.get(_provider(spec.target), ())
    if keys and not any(os.environ.get(key, "").strip() for key in keys) and not api_base_set():
        raise missing_key_error(spec.target, keys)


def missing_key_error(model: str, keys: tuple[str, ...] | list[str]) -> ToolSelectionError:
    from tool_selection.lm.specs import ModelSpecError

    return ModelSpecError(f"{model} needs {' or '.join(keys)} in the environment (or api_key=/api_base= in get_lm "
                          "for a server of your own).")


def api_base_set() -> bool:
    """Whether some ``*_API_BASE`` variable sends a provider's calls to a server of one's own."""
    return any(name.endswith("_API_BASE") and value.strip() for name, value in os.environ.items())


# a name no model guesses from the request: a call of it proves the server showed the model its tools
PROBE_TOOL = {"type": "function", "function": {
    "name": "heartbeat_7f3k", "description": "Check that the service is up.",
    "parameters": {"type": "object", "properties": {}, "required": []}}}
PROBE_REQUEST = "Check that the service is up."
_probed: dict[tuple[str, str], ToolSupport] = {}
_probe_lock = threading.Lock()


def native_tools(lm: Any) -> ToolSupport:
    """Whether ``lm`` takes native tool calls. LiteLLM's word for models it knows; for a model on a server of
    one's own, the server is asked once (per address and model) with one tool and a request only that tool does:
    it takes tools when the answer calls that tool, as a structured call or in the model's own text format (a
    small model often writes its call in a JSON fence the server does not parse; the native strategy reads both)."""
    if getattr(lm, "supports_function_calling", False):
        return ToolSupport(True, "DSPy/LiteLLM report native function calling")
    endpoint = lm_endpoint(lm)
    if endpoint is None:
        return ToolSupport(False, f"DSPy/LiteLLM report no native function calling for {getattr(lm, 'model', lm)!r}")
    key = (endpoint.url, str(lm.model))
    with _probe_lock:
        if key not in _probed:
            _probed[key] = _probe(lm, endpoint)
        return _probed[key]


def _probe(lm: Any, endpoint: Endpoint) -> ToolSupport:
    from tool_selection.parsing import parse_native

    try:
        outputs = lm.copy(cache=False, num_retries=0, max_tokens=64)(
            messages=[{"role": "user", "content": PROBE_REQUEST}], tools=[PROBE_TOOL])
    except Exception as error:  # the server refused tools (llama-server without --jinja, vLLM without a parser)
        return ToolSupport(False, f"{endpoint.url} refused a request with tools ({_first_line(error)})")
    output = outputs[0] if outputs else ""
    name = PROBE_TOOL["function"]["name"]
    if isinstance(output, dict) and any(_call_name(call) == name for call in output.get("tool_calls") or ()):
        return ToolSupport(True, f"{endpoint.url} answered a request with tools with a native call")
    text = (output.get("text") if isinstance(output, dict) else output) or ""
    if any(call.tool_name == name for call in parse_native(text).calls):
        return ToolSupport(True, f"{endpoint.url} showed the model its tools (the call came back as text)")
    return ToolSupport(False, f"{endpoint.url} answered a request with tools without calling the tool")


def _call_name(call: Any) -> str | None:
    function = call.get("function") if isinstance(call, dict) else getattr(call, "function", None)
    return function.get("name") if isinstance(function, dict) else getattr(function, "name", None)


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]
