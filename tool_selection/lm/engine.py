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
import json
import os
import re
import threading
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from dspy.clients.engines.base import validate_request
from dspy.lm15 import (
    Adaptation,
    ConfigurationError,
    ContextLengthError,
    FunctionTool,
    Message,
    Request,
    Response,
    TextPart,
    TokenLogprob,
    ToolCallPart,
    ToolResultPart,
    TopLogprob,
    UnsupportedFeatureError,
    Usage,
    response_to_events,
)

from tool_selection.errors import ToolSelectionError
from tool_selection.lm.assemble import ModelFileError, ensure_model
from tool_selection.lm.catalog import load_catalog
from tool_selection.lm.engine_check import require_working_engine
from tool_selection.lm.specs import LOCAL_PREFIX, ModelSpec
from tool_selection.lm.strict_calls import (
    MORE_CALLS,
    UNTIL_COVERED,
    CallBudget,
    more_calls,
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

# Sampling settings llama.cpp has beyond the canonical Config; a Request may carry them in Config.extensions.
_EXTENSION_OPTIONS = frozenset({"min_p", "typical_p", "repeat_penalty", "tfs_z", "mirostat_mode", "mirostat_tau",
                                "mirostat_eta"})
_CONFIG_OPTIONS = ("max_tokens", "temperature", "top_p", "top_k", "seed", "frequency_penalty", "presence_penalty")
_PARAMS = frozenset({*_CONFIG_OPTIONS, "stop", "logprobs", "top_logprobs", "n"})


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
class TokenScore:
    """One generated token: its id, bytes and log-probability, and the top alternatives as (bytes, logprob)."""

    id: int
    piece: bytes
    logprob: float
    top: tuple[tuple[bytes, float], ...] = ()


@dataclass
class GenerationTrace:
    """What one completion did, filled in by the model object (``TracingLlama``) while it is set as its ``trace``:
    prompt tokens reused from the KV cache and, unless ``top_logprobs`` is None, each generated token's score."""

    top_logprobs: int | None = None
    reused_tokens: int = 0
    tokens: list[TokenScore] = field(default_factory=list)


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
        from tool_selection.lm.tracing import TracingLlama

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
        messages, tools = _chat_messages(request), _tools(request)
        options, adaptations = _generation_options(request)
        if tools:
            options["tools"] = tools
        strict_calls = bool(tools) and request.config.response_format is not None
        required = _call_required(request.config.tool_choice, strict_calls)
        notes = list(adaptations)
        while True:  # once more with a larger context if the prompt outgrew this one
            model, adaptations = self.model, list(notes)
            trace = GenerationTrace(top_logprobs=request.config.logprobs)
            with model.lock:
                grammar = None
                if request.config.response_format is not None:
                    grammar, note = _grammar(model.llama, request.config.response_format, padded=strict_calls)
                    adaptations.extend(note)
                model.llama.trace = trace
                try:
                    if strict_calls:
                        raw = _strict_chat_completion(model.llama, messages, grammar, options, required=required)
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
        return _response(request, raw, trace, adaptations, parse_calls=bool(tools))

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


# --- Request -> llama-cpp-python arguments -------------------------------------------------------------------------
def _text(content, where: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if not isinstance(part, TextPart):
            raise UnsupportedFeatureError(f"The local engine takes text only; {where} holds a {type(part).__name__}.",
                                          feature=where)
        texts.append(part.text)
    return "".join(texts)


def _chat_messages(request: Request) -> list[dict[str, Any]]:
    """The request's messages as llama-cpp-python chat messages: tool calls and tool results in the shape chat
    templates render (arguments as objects, as Hugging Face templates expect)."""
    messages: list[dict[str, Any]] = []
    if request.system is not None:
        messages.append({"role": "system", "content": _text(request.system, "the system prompt")})
    for index, message in enumerate(request.messages):
        where = f"messages[{index}]"
        if message.role == "tool":
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    messages.append({"role": "tool", "tool_call_id": part.id, "name": part.name,
                                     "content": _text(part.content, where)})
            continue
        if message.role not in ("user", "assistant", "developer"):
            raise UnsupportedFeatureError(f"The local engine takes user, assistant, developer and tool messages, not "
                                          f"{message.role!r} ({where}).", feature=where)
        calls = [part for part in message.parts if isinstance(part, ToolCallPart)]
        text = _text([part for part in message.parts if not isinstance(part, ToolCallPart)], where)
        entry: dict[str, Any] = {"role": "system" if message.role == "developer" else message.role, "content": text}
        if calls:
            entry["tool_calls"] = [{"id": call.id, "type": "function",
                                    "function": {"name": call.name, "arguments": dict(call.input)}} for call in calls]
        messages.append(entry)
    return messages


def _call_required(choice: Any, strict_calls: bool) -> bool:
    """Whether ``tool_choice`` asks for a call: ``auto`` (or none) leaves it to the model; ``required`` is kept by
    writing the call's opening for the model, so it needs strict calls (tools and a call schema, native-strict)."""
    if choice is None or (choice.mode == "auto" and not choice.allowed):
        return False
    if choice.mode == "required" and not choice.allowed and strict_calls:
        return True
    raise UnsupportedFeatureError(
        f"The local engine keeps tool_choice 'auto', or 'required' with tools and a call schema (the native-strict "
        f"strategy); not {choice.mode!r}{' limited to ' + ', '.join(choice.allowed) if choice.allowed else ''}.",
        feature="tool_choice")


def _tools(request: Request) -> list[dict[str, Any]] | None:
    """The request's function tools in the OpenAI shape chat templates take as ``tools``."""
    if not request.tools:
        return None
    tools = []
    for tool in request.tools:
        if not isinstance(tool, FunctionTool):
            raise UnsupportedFeatureError(f"The local engine takes function tools, not the provider tool "
                                          f"{tool.name!r}.", feature="tools")
        function = {"name": tool.name, "parameters": dict(tool.parameters)}
        if tool.description:
            function["description"] = tool.description
        tools.append({"type": "function", "function": function})
    return tools


def _generation_options(request: Request) -> tuple[dict[str, Any], list[Adaptation]]:
    config = request.config
    options: dict[str, Any] = {name: getattr(config, name) for name in _CONFIG_OPTIONS
                               if getattr(config, name) is not None}
    if config.stop:
        options["stop"] = list(config.stop)
    extensions = dict(config.extensions or {})
    metadata = extensions.pop("metadata", None) or {}
    if metadata.get(MORE_CALLS):  # calls opened for the model after its own (strategies.native, native-strict-more)
        options[MORE_CALLS] = int(metadata[MORE_CALLS])
        options[UNTIL_COVERED] = bool(metadata.get(UNTIL_COVERED))
    unknown = sorted(set(extensions) - _EXTENSION_OPTIONS)
    if unknown:
        raise UnsupportedFeatureError(f"The local engine has no setting {unknown}; llama.cpp settings it takes in "
                                      f"Config.extensions: {sorted(_EXTENSION_OPTIONS)}.", feature="config.extensions")
    options.update(extensions)
    if config.probabilities == "required":
        raise UnsupportedFeatureError("The local engine does not measure key probabilities (config.probabilities); "
                                      "ask for logprobs instead.", feature="config.probabilities")
    adaptations = [
        Adaptation(field=f"config.{name}", action="dropped", reason="A local llama.cpp model has no such setting.")
        for name in ("service_tier", "user_id", "store", "reasoning", "probabilities")
        if getattr(config, name) is not None
    ]
    if config.cache is not None:
        adaptations.append(Adaptation(field="config.cache", action="satisfied",
                                      reason="llama.cpp reuses the KV cache for the prompt prefix shared with the "
                                             "previous call on its own."))
    return options, adaptations


MAX_GRAMMAR_BOUND = 500  # larger length/size bounds make llama.cpp grammars huge (and crash it past a few thousand)
_BOUNDS = frozenset({"maxLength", "minLength", "maxItems", "minItems", "pattern"})
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions"})  # name -> schema maps
_VALUES = frozenset({"const", "enum", "default", "examples"})  # data, not schemas


def _grammar(llama, response_format: dict[str, Any], *, padded: bool = False) -> tuple[Any, list[Adaptation]]:
    """The grammar enforcing ``response_format`` that ``llama`` accepts, and what had to give way to get it
    (``padded``: whitespace may come before and after, as around a tool call).

    llama.cpp unrolls length and size bounds into repetitions, so large ones are dropped up front (a grammar
    with ``maxLength: 100000`` crashes it) and ``\\d`` is spelled ``[0-9]``; then patterns go (the converter lacks
    some regex classes), then all bounds.
    """
    if response_format.get("type") != "json_schema":
        return _compiled_grammar(None, padded), []
    schema = response_format["schema"]
    bound = MAX_GRAMMAR_BOUND
    candidates = [
        (_without_bounds(schema, keep_upto=bound, keep_patterns=True), f"json_schema without bounds above {bound}"),
        (_without_bounds(schema, keep_upto=bound), f"json_schema without patterns or bounds above {bound}"),
        (_without_bounds(schema), "json_schema without length, size and pattern constraints"),
    ]
    tried = []
    for candidate, substitute in candidates:
        if candidate in tried:
            continue
        tried.append(candidate)
        grammar = _compiled_grammar(json.dumps(candidate), padded)
        if grammar is not None and llama.accepts_grammar(grammar):
            return grammar, [_substituted(substitute)] if candidate != schema else []
    return _compiled_grammar(None, padded), [_substituted("json_object")]


def _substituted(applied: str) -> Adaptation:
    return Adaptation(field="config.response_format", action="substituted", asked="json_schema", applied=applied,
                      reason="llama.cpp cannot build a grammar for this JSON schema; the output is constrained "
                             f"to {applied}.")


def _without_bounds(schema: Any, *, keep_upto: int = -1, keep_patterns: bool = False) -> Any:
    """``schema`` without length and size bounds above ``keep_upto`` (all, by default) and, unless
    ``keep_patterns``, without pattern keywords (a property *named* "pattern" stays)."""
    if isinstance(schema, list):
        return [_without_bounds(item, keep_upto=keep_upto, keep_patterns=keep_patterns) for item in schema]
    if not isinstance(schema, dict):
        return schema
    relaxed = {}
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            if keep_patterns:
                relaxed[key] = _grammar_pattern(value)
            continue
        if key in _BOUNDS and key != "pattern" and not (isinstance(value, int) and value <= keep_upto):
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            relaxed[key] = {name: _without_bounds(sub, keep_upto=keep_upto, keep_patterns=keep_patterns)
                            for name, sub in value.items()}
        else:
            relaxed[key] = value if key in _VALUES else _without_bounds(value, keep_upto=keep_upto, keep_patterns=keep_patterns)
    return relaxed


def _grammar_pattern(pattern: str) -> str:
    """``pattern`` with ``\\d`` spelled as a digit range: llama-cpp-python's converter does not know ``\\d``."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            pair = pattern[i:i + 2]
            out.append(("0-9" if in_class else "[0-9]") if pair == "\\d" else pair)
            i += 2
            continue
        in_class = (in_class and char != "]") or (not in_class and char == "[")
        out.append(char)
        i += 1
    return "".join(out)


@lru_cache(maxsize=64)
def _compiled_grammar(schema_json: str | None, padded: bool = False) -> Any:
    """A llama.cpp grammar for a JSON schema, or for any JSON when ``schema_json`` is None; None if the schema
    has no grammar (llama-cpp-python's converter does not cover every keyword)."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar, json_schema_to_gbnf

    try:
        gbnf = JSON_GBNF if schema_json is None else json_schema_to_gbnf(schema_json)
    except Exception:
        return None
    if padded:  # up to two whitespace characters either side, so tokens such as "}}\n" stay open to the model;
        # and the doubled braces of Qwen2.5's template example ({{...}}), which models copy and the parser reads
        gbnf = re.sub(r"^root\s*::=", "padded-value ::=", gbnf, count=1, flags=re.MULTILINE)
        gbnf += ('\ncall-pad ::= [ \\t\\n]?\nroot ::= call-pad call-pad (padded-value | "{" padded-value "}") '
                 'call-pad call-pad\n')
    return LlamaGrammar.from_string(gbnf, verbose=False)


def _strict_chat_completion(llama, messages: list[dict[str, Any]], grammar, options: dict[str, Any], *,
                            required: bool = False) -> dict[str, Any]:
    """A chat completion whose tool calls are decoded under ``grammar`` (see ``strict_calls``), in
    ``create_chat_completion``'s shape."""
    options = dict(options)
    rendered = render_chat(llama, messages, options.pop("tools"))
    budget = CallBudget(options.pop(MORE_CALLS, 0), options.pop(UNTIL_COVERED, False))
    max_tokens = options.pop("max_tokens", None) or llama.n_ctx()
    completion = strict_tool_completion(
        llama, rendered.prompt, grammar=grammar, max_tokens=max_tokens,
        stop=[*options.pop("stop", []), *rendered.stop],  # Jinja2ChatFormatter's stop is always a list
        stopping_criteria=rendered.stopping_criteria, required=required, **options)
    if budget.count:
        request = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), None)
        completion = more_calls(llama, rendered.prompt, completion, grammar=grammar, budget=budget,
                                request=request if isinstance(request, str) else "", max_tokens=max_tokens,
                                options=options)
    choice = completion["choices"][0]
    return {"choices": [{"message": {"role": "assistant", "content": choice["text"]},
                         "finish_reason": choice["finish_reason"]}], "usage": completion["usage"]}


# --- llama-cpp-python result -> Response ---------------------------------------------------------------------------
def _response(request: Request, raw: dict[str, Any], trace, adaptations: list[Adaptation], *,
              parse_calls: bool = False) -> Response:
    choice = raw["choices"][0]
    text = choice["message"].get("content") or ""
    usage = raw.get("usage") or {}
    logprobs, complete = None, True
    if trace.top_logprobs is not None:
        logprobs, complete = _token_logprobs(trace.tokens[: usage.get("completion_tokens", len(trace.tokens))], text)
    parts: list[Any] = [TextPart(text)]
    finish_reason = "length" if choice.get("finish_reason") == "length" else "stop"
    if parse_calls:
        parsed = parse_native(text)
        if parsed.calls:  # a call fragment that could not be read keeps the whole text, for the caller to see
            prose = text if parsed.failures else parsed.text
            try:
                calls = [ToolCallPart(id=f"call_{index}", name=call.tool_name, input=call.arguments)
                         for index, call in enumerate(parsed.calls)]
            except (TypeError, ValueError):  # arguments JSON cannot carry (NaN, infinity): the caller reads the text
                calls, prose = [], text
            parts = ([TextPart(prose)] if prose or not calls else []) + calls
            if calls and finish_reason == "stop":
                finish_reason = "tool_call"
    return Response(
        id=raw.get("id") or None,
        model=request.model,
        message=Message.assistant(parts),
        finish_reason=finish_reason,
        usage=Usage(input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens"),
                    cache_read_tokens=trace.reused_tokens),
        logprobs=logprobs,
        adaptations=tuple(adaptations),
        logprobs_complete=complete,
    )


def _token_logprobs(tokens, text: str) -> tuple[tuple[TokenLogprob, ...], bool]:
    """Scores of the tokens that make up ``text`` (a stop string can end the text inside the last token)."""
    target, kept, covered = text.encode("utf-8"), [], b""
    for token in tokens:
        if len(covered) >= len(target):
            break
        kept.append(token)
        covered += token.piece
    scores = tuple(
        TokenLogprob(token=t.piece.decode("utf-8", errors="replace"), logprob=t.logprob, bytes=tuple(t.piece),
                     token_id=t.id, top=tuple(TopLogprob(token=piece.decode("utf-8", errors="replace"),
                                                         logprob=logprob, bytes=tuple(piece))
                                              for piece, logprob in t.top))
        for t in kept)
    return scores, covered.startswith(target)
