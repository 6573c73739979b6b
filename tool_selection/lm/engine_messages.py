"""The local engine's translations: a DSPy ``Request`` into llama-cpp-python's chat arguments (messages, tools,
sampling options), and llama-cpp-python's result back into a ``Response`` (text, parsed tool calls, usage, token
log-probabilities)."""

from __future__ import annotations

from typing import Any

from dspy.lm15 import (
    Adaptation,
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
)

from tool_selection.lm.strict_calls import DESCRIBED_CALLS, MORE_CALLS, UNTIL_COVERED
from tool_selection.parsing import parse_native

__all__ = ["CONFIG_OPTIONS", "EXTENSION_OPTIONS", "call_required", "chat_messages", "generation_options",
           "llama_response", "request_tools"]

# Sampling settings llama.cpp has beyond the canonical Config; a Request may carry them in Config.extensions.
EXTENSION_OPTIONS = frozenset({"min_p", "typical_p", "repeat_penalty", "tfs_z", "mirostat_mode", "mirostat_tau",
                                "mirostat_eta"})
CONFIG_OPTIONS = ("max_tokens", "temperature", "top_p", "top_k", "seed", "frequency_penalty", "presence_penalty")


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


def chat_messages(request: Request) -> list[dict[str, Any]]:
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


def call_required(choice: Any, strict_calls: bool) -> bool:
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


def request_tools(request: Request) -> list[dict[str, Any]] | None:
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


def generation_options(request: Request) -> tuple[dict[str, Any], list[Adaptation]]:
    config = request.config
    options: dict[str, Any] = {name: getattr(config, name) for name in CONFIG_OPTIONS
                               if getattr(config, name) is not None}
    if config.stop:
        options["stop"] = list(config.stop)
    extensions = dict(config.extensions or {})
    metadata = extensions.pop("metadata", None) or {}
    if metadata.get(MORE_CALLS):  # calls opened for the model after its own (strategies.native, native-strict-more)
        options[MORE_CALLS] = int(metadata[MORE_CALLS])
        options[UNTIL_COVERED] = bool(metadata.get(UNTIL_COVERED))
    if metadata.get(DESCRIBED_CALLS):  # a call the model describes is opened for it (native-strict-cover)
        options[DESCRIBED_CALLS] = True
    unknown = sorted(set(extensions) - EXTENSION_OPTIONS)
    if unknown:
        raise UnsupportedFeatureError(f"The local engine has no setting {unknown}; llama.cpp settings it takes in "
                                      f"Config.extensions: {sorted(EXTENSION_OPTIONS)}.", feature="config.extensions")
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


# --- llama-cpp-python result -> Response ---------------------------------------------------------------------------
def llama_response(request: Request, raw: dict[str, Any], trace, adaptations: list[Adaptation], *,
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
