"""A DSPy engine that runs a GGUF model in-process with llama-cpp-python.

It implements DSPy 3.4's engine contract (``complete(Request) -> Response``, ``stream``, ``close``), so
``dspy.LM(model, engine=LocalEngine(...))`` keeps everything the LM layer owns: the response cache, history,
usage tracking, callbacks. What the engine adds:

- each model is loaded once per process (keyed by file and load settings) and guarded by a lock, since a
  llama.cpp context is not thread-safe; DSPy's threaded evaluation serialises on it;
- the KV cache is reused for the prompt prefix shared with the previous call (llama-cpp-python does this for the
  same ``Llama`` object); the reused tokens are reported as cached prompt tokens;
- ``logprobs`` (``Config.logprobs``, i.e. ``logprobs=True`` / ``top_logprobs=N`` on the LM) returns the
  log-probability of each generated token, which DSPy puts on its outputs as ``{"text", "logprobs"}``;
- ``response_format`` is enforced with a llama.cpp grammar built from the JSON schema, so a small model's
  answer always parses. With ``constrained=True`` the engine tells DSPy's adapters it supports structured
  outputs, so ``JSONAdapter`` sends the signature's schema. A schema whose grammar llama.cpp refuses (long
  ``maxLength`` bounds, some ``pattern``s) is enforced without its length, size and pattern constraints, or
  failing that as plain JSON; the response's ``adaptations`` say so.
- with ``tools``, a ``response_format`` schema constrains each tool call, not the whole answer: the model writes
  freely until it opens a call, whose JSON is then decoded under the schema (``strict_calls``; the
  ``native-strict`` strategy sends one that admits only the listed tools and their arguments).
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from dspy.clients.engines.base import validate_request
from dspy.lm15 import ConfigurationError, ContextLengthError, Request, Response, response_to_events

from tool_selection.errors import ToolSelectionError
from tool_selection.lm.assemble import ModelFileError, ensure_model
from tool_selection.lm.catalog import load_catalog
from tool_selection.lm.clause_meaning import clause_matcher
from tool_selection.lm.engine_check import require_working_engine
from tool_selection.lm.engine_messages import (
    CONFIG_OPTIONS,
    call_required,
    chat_messages,
    generation_options,
    llama_response,
    request_tools,
)
from tool_selection.lm.generation_trace import GenerationTrace, TokenScore
from tool_selection.lm.grammar import narrowed_grammar, response_grammar
from tool_selection.lm.specs import LOCAL_PREFIX, ModelSpec
from tool_selection.lm.strict_calls import (
    DESCRIBED_CALLS,
    MORE_CALLS,
    UNTIL_COVERED,
    CallBudget,
    OwnCalls,
    described_call,
    more_calls,
    new_call,
    render_chat,
    strict_tool_completion,
)
from tool_selection.parsing import parse_native

__all__ = [
    "AsyncLocalEngine",
    "GenerationTrace",
    "LoadSettings",
    "LoadedModel",
    "LocalEngine",
    "LocalEngineError",
    "TokenScore",
    "load_model",
    "trained_context",
    "unload_models",
]

_PARAMS = frozenset({*CONFIG_OPTIONS, "stop", "logprobs", "top_logprobs", "n"})


class LocalEngineError(ToolSelectionError, RuntimeError):
    """The local engine cannot run: llama-cpp-python is missing, or a model will not load."""


def available_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


THREADS_ENV = "TOOLSEL_N_THREADS"


def default_threads() -> int:
    """llama.cpp threads when none are given: ``$TOOLSEL_N_THREADS`` (a fanned-out worker's share of the cores),
    else every core available."""
    configured = os.environ.get(THREADS_ENV, "").strip()
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            raise LocalEngineError(f"{THREADS_ENV}={configured!r} is not a number of threads.") from None
    return available_cores()


@dataclass(frozen=True)
class LoadSettings:
    """How a model is loaded. ``n_threads=None`` uses every core available to this process."""

    n_ctx: int = 4096
    n_threads: int | None = None
    n_batch: int = 512
    chat_format: str | None = None

    def llama_kwargs(self) -> dict[str, Any]:
        threads = self.n_threads or default_threads()
        return {"n_ctx": self.n_ctx, "n_threads": threads, "n_threads_batch": threads, "n_batch": self.n_batch,
                "chat_format": self.chat_format}


@dataclass
class LoadedModel:
    """A loaded ``Llama`` and the lock every use of it must hold."""

    path: str
    settings: LoadSettings
    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


_LOADED: dict[tuple[str, LoadSettings], LoadedModel] = {}
_LOADED_LOCK = threading.Lock()


CONTEXT_STEP = 4096
DEFAULT_ANSWER_TOKENS = 512


def _requested_tokens(error: Exception) -> int | None:
    found = re.search(r"Requested tokens \((\d+)\)", str(error))
    return int(found.group(1)) if found else None


def trained_context(llama: Any) -> int | None:
    """The context length the model was trained for (llama-cpp-python's internal model, or a test's stand-in)."""
    for owner in (getattr(llama, "_model", None), llama):
        try:
            return int(owner.n_ctx_train())
        except (AttributeError, TypeError, ValueError):
            continue
    return None


def _context_advice(error: Exception, n_ctx: int, llama: Any) -> str:
    trained, requested = trained_context(llama), _requested_tokens(error)
    if trained is not None and (n_ctx >= trained or requested is not None and requested >= trained):
        return (f"{error}; the model was trained for {trained:,} tokens of context and this prompt does not fit: show "
                "it fewer tools (--retrieve K, or retrieval=RetrievalSpec(k=K) in Python) or a shorter conversation.")
    return (f"{error}; this model was loaded with n_ctx={n_ctx}. Load it with a larger n_ctx "
            "(get_lm(..., local=LocalEngineOptions(n_ctx=8192))).")


def _require_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalEngineError("Local models run with llama-cpp-python, which is not installed: "
                               "pip install 'tool-selection[local]' (or [local-small] to get the 0.5B model too).")


def load_model(path: str | os.PathLike, settings: LoadSettings | None = None) -> LoadedModel:
    """The model at ``path`` loaded with ``settings``: loaded on first use, then shared by the whole process."""
    settings = settings or LoadSettings()
    key = (str(Path(path).resolve()), settings)
    with _LOADED_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        _require_llama_cpp()
        require_working_engine(key[0])
        from tool_selection.lm.tracing import TracingLlama  # lazy: it imports llama-cpp (~1 s)

        try:
            llama = TracingLlama(model_path=key[0], verbose=False, **settings.llama_kwargs())
        except (ValueError, RuntimeError) as error:
            raise ModelFileError(f"llama.cpp could not load {key[0]} ({error}). Check that it is a complete GGUF "
                                 "file of a model this llama-cpp-python version supports.") from error
        _LOADED[key] = LoadedModel(key[0], settings, llama)
        return _LOADED[key]


def unload_models() -> None:
    """Free every model this process has loaded (the next call loads it again)."""
    with _LOADED_LOCK:
        loaded = list(_LOADED.values())
        _LOADED.clear()
    for model in loaded:
        with model.lock:
            model.llama.close()


atexit.register(unload_models)  # free llama.cpp models while the interpreter can still run their cleanup


class LocalEngine:
    """One synchronous llama.cpp completion per ``complete(Request)``. See the module docstring."""

    supports_function_calling = True  # tools render through the model's own chat template; calls are parsed back
    supports_reasoning = False

    def __init__(self, model_path: str | os.PathLike, *, settings: LoadSettings | None = None,
                 constrained: bool = False, spec: str | None = None, llama: Any = None):
        """``llama`` injects a ready ``Llama``-like object (tests); otherwise the file is loaded on first use."""
        self.model_path = Path(model_path)
        self.settings = settings or LoadSettings()
        self.constrained = constrained
        self.spec = spec or f"{LOCAL_PREFIX}{self.model_path}"
        self._injected = LoadedModel(str(self.model_path), self.settings, llama) if llama is not None else None
        self._closed = False

    @classmethod
    def from_spec(cls, spec: str | ModelSpec, *, model_dir: str | os.PathLike | None = None,
                  n_ctx: int | None = None, n_threads: int | None = None, n_batch: int | None = None,
                  constrained: bool = False) -> LocalEngine:
        """An engine for ``local:NAME`` (assembling the file if needed) or ``local:/path/to/model.gguf``."""
        parsed = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
        if not parsed.is_local:
            raise LocalEngineError(f"{parsed} is not a local model spec; local specs start with {LOCAL_PREFIX!r}.")
        _require_llama_cpp()
        settings = LoadSettings()
        if parsed.kind == "catalog":
            entry = load_catalog().local_model(parsed.target)
            path = ensure_model(entry, model_dir)
            settings = LoadSettings(n_ctx=entry.n_ctx, chat_format=entry.chat_format)
        else:
            path = Path(parsed.target).resolve()
            if not path.is_file():
                raise ModelFileError(f"GGUF file {path} (from spec {str(parsed)!r}) does not exist.")
            parsed = ModelSpec("file", str(path))
        overrides = {k: v for k, v in {"n_ctx": n_ctx, "n_threads": n_threads, "n_batch": n_batch}.items()
                     if v is not None}
        settings = LoadSettings(**{**asdict(settings), **overrides})
        return cls(path, settings=settings, constrained=constrained, spec=str(parsed))

    # --- what DSPy's adapters read (dspy.clients.capabilities) ---------------------------------------------------
    @property
    def supports_response_schema(self) -> bool:
        return self.constrained

    @property
    def supported_params(self) -> frozenset[str]:
        return _PARAMS | {"response_format"} if self.constrained else _PARAMS

    # --- the engine contract ---------------------------------------------------------------------------------------
    @property
    def model(self) -> LoadedModel:
        """The loaded model, from the process-wide cache (loading it on first use, or again after unloading)."""
        return self._injected or load_model(self.model_path, self.settings)

    def complete(self, request: Request) -> Response:
        validate_request(request)
        if self._closed:
            raise ConfigurationError("This local engine is closed; build a new LM with get_lm(...).")
        messages, tools = chat_messages(request), request_tools(request)
        options, adaptations = generation_options(request)
        if tools:
            options["tools"] = tools
        strict_calls = bool(tools) and request.config.response_format is not None
        required = call_required(request.config.tool_choice, strict_calls)
        notes = list(adaptations)
        while True:  # once more with a larger context if the prompt outgrew this one
            model, adaptations = self.model, list(notes)
            trace = GenerationTrace(top_logprobs=request.config.logprobs)
            with model.lock:
                grammar = None
                if request.config.response_format is not None:
                    grammar, note = response_grammar(model.llama, request.config.response_format, padded=strict_calls)
                    adaptations.extend(note)
                model.llama.trace = trace
                try:
                    if strict_calls:
                        raw = _strict_chat_completion(
                            model.llama, messages, grammar, options, required=required,
                            narrowed=partial(narrowed_grammar, model.llama, request.config.response_format))
                    else:
                        raw = model.llama.create_chat_completion(messages=messages, grammar=grammar, **options)
                    break
                except ValueError as error:
                    if "context window" not in str(error):
                        raise
                    larger = self._context_for(error, model.llama, options.get("max_tokens"))
                    if larger is None:
                        raise ContextLengthError(_context_advice(error, self.settings.n_ctx, model.llama)) from error
                finally:
                    model.llama.trace = None
            self.settings = replace(self.settings, n_ctx=larger)  # loaded on the next pass, the old one kept
        return llama_response(request, raw, trace, adaptations, parse_calls=bool(tools))

    def _context_for(self, error: ValueError, llama: Any, max_tokens: int | None) -> int | None:
        """A context that holds the prompt ``error`` reports and ``max_tokens`` more, in steps of 4,096 tokens up to
        the model's trained length; None where the model cannot be loaded again (injected) or none would."""
        requested = _requested_tokens(error)
        trained = trained_context(llama)
        if self._injected is not None or requested is None or trained is None:
            return None
        needed = requested + (max_tokens or DEFAULT_ANSWER_TOKENS)
        larger = min(trained, -(-needed // CONTEXT_STEP) * CONTEXT_STEP)
        return larger if larger > self.settings.n_ctx and requested < larger else None

    def count_tokens(self, text: str) -> int:
        """How many tokens ``text`` is to the model's tokenizer (loads the model)."""
        model = self.model
        with model.lock:
            return len(model.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def context_limit(self) -> int | None:
        """The longest context a prompt can have here: the model's trained length (or the context it is loaded
        with, if that is longer), to which ``complete`` grows the context; None where the model does not say."""
        trained = trained_context(self.model.llama)
        return None if trained is None else max(trained, self.settings.n_ctx)

    def supports_native_tools(self) -> bool:
        """Whether the model's chat template renders tools (its own tool-calling format). Loads the model."""
        if self.settings.chat_format is not None:
            return False  # llama-cpp-python's built-in chat formats ignore tools
        template = self.model.llama.metadata.get("tokenizer.chat_template", "") or ""
        return "tools" in template

    def stream(self, request: Request):
        return response_to_events(self.complete(request))

    def close(self) -> None:
        """Stop serving calls. The model stays loaded for other engines; ``unload_models()`` frees it."""
        self._closed = True

    # --- saving with a DSPy program (dspy.LM.dump_state) ----------------------------------------------------------
    def dump_state(self) -> dict[str, Any]:
        return {"spec": self.spec, "settings": asdict(self.settings), "constrained": self.constrained}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LocalEngine:
        engine = cls.from_spec(state["spec"], constrained=bool(state.get("constrained", False)))
        engine.settings = LoadSettings(**state.get("settings", {}))
        return engine

    def __repr__(self) -> str:
        return f"LocalEngine({self.spec!r}, n_ctx={self.settings.n_ctx}, constrained={self.constrained})"


def local_engine(lm: Any) -> LocalEngine | None:
    """The in-process engine behind ``lm`` (``get_lm("local:NAME")``), or None for any other LM."""
    engine = getattr(lm, "engine", None)
    return engine if isinstance(engine, LocalEngine) else None


class AsyncLocalEngine:
    """The async face of a ``LocalEngine`` (``dspy.LM(..., async_engine=...)``): the same model, off the loop."""

    def __init__(self, engine: LocalEngine):
        self.engine = engine

    async def complete(self, request: Request) -> Response:
        return await asyncio.to_thread(self.engine.complete, request)

    async def stream(self, request: Request):
        for event in response_to_events(await self.complete(request)):
            yield event

    async def aclose(self) -> None:
        self.engine.close()

    def dump_state(self) -> dict[str, Any]:
        return self.engine.dump_state()

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> AsyncLocalEngine:
        return cls(LocalEngine.load_state(state))


def _strict_chat_completion(llama, messages: list[dict[str, Any]], grammar, options: dict[str, Any], *,
                            required: bool = False, narrowed: Callable | None = None) -> dict[str, Any]:
    """A chat completion whose tool calls are decoded under ``grammar`` (see ``strict_calls``), in
    ``create_chat_completion``'s shape; ``narrowed(names)``: the grammar of the calls to ``names`` alone."""
    options = dict(options)
    tools = options.pop("tools")
    rendered = render_chat(llama, messages, tools)
    functions = {function["name"]: function for tool in tools or []
                 if isinstance((function := tool.get("function") or {}).get("name"), str)}
    budget = CallBudget(options.pop(MORE_CALLS, 0), options.pop(UNTIL_COVERED, False), _function_names(tools),
                        descriptions={name: str(function.get("description") or "") for name, function in
                                      functions.items()},
                        required={name: frozenset((function.get("parameters") or {}).get("required") or ())
                                  for name, function in functions.items()},
                        described=options.pop(DESCRIBED_CALLS, False), narrowed=narrowed,
                        meant=clause_matcher(list(functions.values())))
    max_tokens = options.pop("max_tokens", None) or llama.n_ctx()
    request = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), None)
    request = request if isinstance(request, str) else ""
    stop = [*options.pop("stop", []), *rendered.stop]  # Jinja2ChatFormatter's stop is always a list
    keep = new_call if budget.until_covered else None
    scored = len(trace.tokens) if (trace := getattr(llama, "trace", None)) is not None else 0
    completion = strict_tool_completion(llama, rendered.prompt, grammar=grammar, max_tokens=max_tokens, stop=stop,
                                        stopping_criteria=rendered.stopping_criteria,
                                        rules=OwnCalls(required, keep), **options)
    text = completion["choices"][0]["text"]
    if budget.described and not parse_native(text).calls and described_call(text, budget.functions):
        if trace is not None:  # the prose is not the answer's, but its first token is what the model chose freely
            del trace.tokens[scored + 1:]  # (whether it opened a call: the relevance stage's call_open)
        spent = completion["usage"]["completion_tokens"]
        completion = strict_tool_completion(llama, rendered.prompt, grammar=grammar, max_tokens=max_tokens,
                                            stop=stop, stopping_criteria=rendered.stopping_criteria,
                                            rules=OwnCalls(True, keep), **options)
        completion["usage"] = _spent_too(completion["usage"], spent)
    if budget.count:
        completion = more_calls(llama, rendered.prompt, completion, grammar=grammar, budget=budget,
                                request=request, max_tokens=max_tokens, options=options)
    choice = completion["choices"][0]
    return {"choices": [{"message": {"role": "assistant", "content": choice["text"]},
                         "finish_reason": choice["finish_reason"]}], "usage": completion["usage"]}


def _spent_too(usage: dict[str, int], tokens: int) -> dict[str, int]:
    """``usage`` with ``tokens`` more written (an answer written again: both count)."""
    return {**usage, "completion_tokens": usage["completion_tokens"] + tokens,
            "total_tokens": usage["total_tokens"] + tokens}


def _function_names(tools: list[dict[str, Any]]) -> tuple[str, ...]:
    """The names in an OpenAI-style tool list."""
    return tuple(name for tool in tools or [] if isinstance(name := (tool.get("function") or {}).get("name"), str))
