"""JSON strategies: the answer is a JSON object the response schema constrains to the listed tools.

- ``json-cot``: DSPy ChainOfThought; reasoning about which tool fits, then ``tool_calls`` (the original selector).
- ``json``: the same without reasoning (``dspy.Predict``): fewer output tokens, which dominate CPU time.
- ``chat-cot``: ChainOfThought in DSPy's ``[[ ## field ## ]]`` chat format, unconstrained.

Under ``ToolSelectionAdapter`` the response schema lists only the available tools, each with its own argument
schema, so a constrained decoder (llama.cpp's grammar, a provider's structured outputs) can produce nothing else.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from typing import Any

import dspy
import json_repair
from dspy.adapters.chat_adapter import field_header_pattern
from dspy.adapters.json_adapter import JSONAdapter
from dspy.utils.exceptions import AdapterParseError

from tool_selection.decision import ToolCall
from tool_selection.interop import to_text
from tool_selection.parsing import load_json, mended_json, too_large
from tool_selection.registry import ToolRegistry
from tool_selection.strategies.base import (
    SelectionStrategy,
    ToolChoice,
    as_calls,
    check_decision,
    decided,
    demo_without,
    inner_predict,
    only_auto,
    parse_failure,
    register_strategy,
)

__all__ = ["REASONING", "SelectTools", "ToolSelectionAdapter", "render_tools", "response_schema"]

# Demonstrations never show these: every prompt lists the tools once (a repeated listing costs seconds on a CPU
# and hundreds of tokens), and a training example's case is for scoring, not for the model.
DEMO_OMITS = ("tools", "case")
MAX_REASONING_CHARS = 400  # a few sentences; longer reasoning costs latency without helping small models
MAX_CALLS = 8
MAX_REPAIR_CHARS = 500
"""The longest answer (or field) handed to json_repair, which on some shapes rereads the rest of its input at every
character: 500 characters of ``{a]`` repeated take 0.2 s, 1,000 take 0.65 s, 4,000 take 11 s. A longer one is read
as written, or mended in linear time (``mended_json``: Python's quotes, closing brackets left off or one too many)."""


class SelectTools(dspy.Signature):
    """Decide which of the available tools to call to fulfil the user's request.

    Call a tool only when it directly serves the request; use its exact name from the list and take the
    argument values from the request. Make several calls when the request asks for several things. When no
    available tool can do what is asked, make no call: answer with an empty list."""

    # Tools come first so that prompts over one catalog share a prefix (the local engine reuses its KV cache).
    tools: str = dspy.InputField(desc="The available tools: name, description and arguments of each.")
    request: str = dspy.InputField(desc="What the user asked for.")
    tool_calls: list[ToolCall] = dspy.OutputField(desc="The tool calls to make, or [] when no tool fits.")


# Small models asked to "think step by step" tend to solve the request themselves, then call any tool; reasoning
# about which tool fits keeps them on the decision, and gives abstention an explicit path.
REASONING = dspy.OutputField(
    desc="Which listed tool, if any, does exactly what is asked, and which argument values the request gives it; "
         "if none does, say that no listed tool can do this. Judge the tools; do not answer the request yourself."
)


def render_tools(registry: ToolRegistry) -> str:
    return "\n\n".join(to_text(tool) for tool in registry)


def response_schema(registry: ToolRegistry, *, reasoning: bool = True) -> dict[str, Any]:
    """JSON Schema of an answer over ``registry``: (reasoning, then) calls of listed tools only."""
    call_schemas = [
        {
            "type": "object",
            "properties": {"tool_name": {"const": tool.NAME}, "arguments": tool.input_schema()},
            "required": ["tool_name", "arguments"],
        }
        for tool in registry
    ]
    items: dict[str, Any] = {"anyOf": call_schemas} if call_schemas else {"not": {}}
    properties: dict[str, Any] = {"tool_calls": {"type": "array", "items": items, "maxItems": MAX_CALLS}}
    if reasoning:
        properties = {"reasoning": {"type": "string", "maxLength": MAX_REASONING_CHARS}, **properties}
    return {"type": "object", "properties": properties, "required": list(properties)}


def json_as_written(text: str) -> Any | None:
    """The JSON value ``text`` holds as written, in linear time: all of it, or the object its first ``{`` opens or
    the list its first ``[`` opens, whichever comes first and reads (after prose or a fence); None if none."""
    value, problem = load_json(text)
    if problem is None:
        return value
    if too_large(text):
        return None
    for start in sorted(index for index in (text.find("{"), text.find("[")) if index >= 0):
        try:
            return json.JSONDecoder().raw_decode(text, start)[0]
        except (ValueError, RecursionError):
            continue
    return None


def read_json(text: str) -> Any | None:
    """The JSON value of ``text``: as written, else mended by ``mended_json``, else as json_repair mends it if
    ``text`` is at most ``MAX_REPAIR_CHARS`` long; None if none of them reads a value."""
    return copy.deepcopy(_read_json(text))  # the cached value stays as read


@functools.lru_cache(maxsize=64)  # an answer the adapter rejects is read again by salvage
def _read_json(text: str) -> Any | None:
    value = json_as_written(text)
    if value is not None or too_large(text):
        return value
    if (mended := mended_json(text.strip())) is not None:
        return mended[0]
    if len(text) > MAX_REPAIR_CHARS:
        return None
    try:
        value = json_repair.loads(text)
    except Exception:  # json_repair raises assorted errors on hopeless input
        return None
    if value == "":  # json_repair's "nothing found"
        return None
    return value if repair_kept_what_was_written(text, value) else None


_WRITTEN_KEY = re.compile(r'"((?:[^"\\]|\\.){1,200})"\s*:')


def repair_kept_what_was_written(text: str, value: Any) -> bool:
    """Whether json_repair's reading of ``text`` neither invented nor dropped anything: every key and value it
    holds is written in ``text``, and every key written in ``text`` is in it. ``{"order_id": }`` read as
    ``{"order_id": ""}`` invented a value, and a call with that argument dropped would win a case it never
    stated; such an answer is unreadable instead."""
    keys, leaves = set(), []
    _collect(value, keys, leaves)
    written = {json.loads(f'"{key}"') for key in _WRITTEN_KEY.findall(text) if _is_json_string(key)}
    return written <= keys and all(_written(leaf, text) for leaf in [*keys, *leaves])


def _collect(value: Any, keys: set[str], leaves: list[Any]) -> None:
    if isinstance(value, dict):
        keys.update(value)
        for item in value.values():
            _collect(item, keys, leaves)
    elif isinstance(value, list):
        for item in value:
            _collect(item, keys, leaves)
    else:
        leaves.append(value)


def _is_json_string(body: str) -> bool:
    try:
        json.loads(f'"{body}"')
    except ValueError:
        return False
    return True


def _written(leaf: Any, text: str) -> bool:
    """Whether ``leaf`` (a key or a scalar json_repair read) appears in ``text`` in some spelling."""
    if isinstance(leaf, bool) or leaf is None:
        spellings = {True: ("true", "True"), False: ("false", "False"), None: ("null", "None")}[leaf]
    elif isinstance(leaf, (int, float)):
        whole = isinstance(leaf, float) and math.isfinite(leaf) and leaf.is_integer()
        spellings = (str(leaf), str(int(leaf)) if whole else str(leaf))
    elif leaf == "":
        spellings = ('""', "''")
    else:
        spellings = (leaf, json.dumps(leaf)[1:-1], json.dumps(leaf, ensure_ascii=False)[1:-1])
    return any(spelling in text for spelling in spellings)


def _is_text(field: Any) -> bool:
    return field.annotation is str


class _GuardedParse:
    """Reads any answer, however pathological (too long, nested too deep, numbers too large, shaped to make
    json_repair slow), as a parse failure (``AdapterParseError``) rather than an exception from the JSON machinery
    or minutes of work: ``readable`` hands DSPy's parser only what it reads in linear time, or is short."""

    def parse(self, signature, completion):
        problem = too_large(completion)
        if problem:
            raise self._failure(signature, completion, f"The answer is {problem}.")
        readable = self.readable(signature, completion)
        try:
            return super().parse(signature, readable)
        except AdapterParseError as error:
            error.lm_response = completion  # the answer as the model wrote it, for salvage and the results row
            raise
        except (RecursionError, MemoryError, OverflowError, UnicodeError, ValueError, TypeError) as error:
            raise self._failure(signature, completion, f"{type(error).__name__}: {str(error)[:200]}") from None

    def readable(self, signature, completion: str) -> str:
        """``completion`` as DSPy's parser may take it, or ``AdapterParseError``."""
        raise NotImplementedError

    def _failure(self, signature, completion: str, message: str) -> AdapterParseError:
        return AdapterParseError(adapter_name=type(self).__name__, signature=signature, lm_response=completion,
                                 message=message)


class ToolSelectionAdapter(_GuardedParse, JSONAdapter):
    """JSONAdapter that constrains the answer to the call's own tools (see ``response_schema``)."""

    SCHEMA_KEY = "tool_selection_response_schema"

    def _prepare_response_format(self, lm, lm_kwargs, signature):
        schema = lm_kwargs.pop(self.SCHEMA_KEY, None)
        if schema is None or "response_format" not in lm.supported_params:
            return super()._prepare_response_format(lm, lm_kwargs, signature)
        lm_kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "tool_selection", "schema": schema, "strict": False},
        }

    def readable(self, signature, completion: str) -> str:
        """The answer's object as JSON (as ``read_json`` reads it), its non-text fields read too where they came as
        strings, so that DSPy's parser, which would run json_repair on anything else, reads JSON only."""
        fields = read_json(completion)
        if not isinstance(fields, dict):
            longer = f" (longer than {MAX_REPAIR_CHARS} characters, so not mended)" if len(completion) > \
                MAX_REPAIR_CHARS else ""
            raise self._failure(signature, completion, f"The answer holds no JSON object{longer}.")
        for name, field in signature.output_fields.items():
            if isinstance(fields.get(name), str) and not _is_text(field):
                value = read_json(fields[name])
                if value is None:
                    raise self._failure(signature, completion, f"The answer's {name} is not JSON.")
                fields = {**fields, name: value}
        return json.dumps(fields)


class GuardedChatAdapter(_GuardedParse, dspy.ChatAdapter):
    """DSPy's chat format, without the JSON fallback call, reading any answer as a decision or a parse failure."""

    def __init__(self, **kwargs):
        super().__init__(use_json_adapter_fallback=False, **kwargs)

    def readable(self, signature, completion: str) -> str:
        """The answer as it is, if each non-text field is JSON as written or mended without inventing or dropping
        anything (DSPy's parser runs json_repair on each of them), and mended only in an answer of at most
        ``MAX_REPAIR_CHARS``."""
        for name, section in _chat_sections(completion).items():
            field = signature.output_fields.get(name)
            if field is None or _is_text(field) or load_json(section)[1] is None:
                continue
            if len(completion) > MAX_REPAIR_CHARS:
                raise self._failure(signature, completion, f"The answer's {name} is not JSON as written, and the "
                                                           f"answer is longer than {MAX_REPAIR_CHARS} characters, "
                                                           "so it is not mended.")
            if read_json(section) is None:
                raise self._failure(signature, completion, f"The answer's {name} is not JSON, and mending it "
                                                           "would invent or drop what it says.")
        return completion


def _chat_sections(completion: str) -> dict[str, str]:
    """Each field's text in DSPy's chat format (``[[ ## name ## ]]`` headers), the first of a name kept, split as
    ``ChatAdapter.parse`` splits it."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []  # the text before the first header belongs to no field
    for line in completion.splitlines():
        header = field_header_pattern.match(line.strip())
        if header:
            current = []
            sections.setdefault(header.group(1), current)
            rest = line.strip()[header.end():].strip()
            current.extend([rest] if rest else [])
        else:
            current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}


def compact_demo(demo: Any) -> Any:
    """A demonstration without the fields in ``DEMO_OMITS`` (a ``dspy.Example`` stays one)."""
    return demo_without(demo, DEMO_OMITS)


def salvage(raw: str, registry: ToolRegistry):
    """Recover calls from a JSON answer the adapter rejected (e.g. a tool name outside the list)."""
    if too_large(raw) or field_header_pattern.search(raw):  # DSPy's chat format is not a JSON answer
        return None
    data = read_json(raw)
    if not isinstance(data, dict) or not isinstance(data.get("tool_calls"), list):
        return None
    calls = []
    for item in data["tool_calls"]:
        if not isinstance(item, dict):
            return None
        name = item.get("tool_name") or item.get("name")
        arguments = item.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return None
        calls.append(ToolCall(tool_name=name, arguments=arguments))
    return check_decision(str(data.get("reasoning", "")), calls, registry)


class _JsonStrategy(SelectionStrategy):
    reasoning = True

    def build_predictor(self) -> dspy.Module:
        if self.reasoning:
            return dspy.ChainOfThought(SelectTools, rationale_field=REASONING)
        return dspy.Predict(SelectTools)

    def adapter(self) -> dspy.Adapter:
        return ToolSelectionAdapter()

    def decide(self, predictor: dspy.Module, request: str, registry: ToolRegistry,
               conversation: list[dict[str, Any]] | None = None, tool_choice: ToolChoice = "auto") -> dspy.Prediction:
        only_auto(tool_choice, self.name)
        constrained = self.constrain and isinstance(dspy.settings.adapter, ToolSelectionAdapter)
        config = {ToolSelectionAdapter.SCHEMA_KEY: response_schema(registry, reasoning=self.reasoning)} \
            if constrained else {}
        demos = [compact_demo(d) for d in inner_predict(predictor).demos]
        try:
            prediction = predictor(request=request, tools=render_tools(registry), config=config, demos=demos)
        except AdapterParseError as error:
            raw = error.lm_response or ""
            recovered = salvage(raw, registry)
            return decided(recovered, raw) if recovered is not None else parse_failure(error, raw)
        calls = as_calls(prediction.tool_calls)
        return decided(check_decision(getattr(prediction, "reasoning", ""), calls, registry))


@register_strategy
class JsonCoT(_JsonStrategy):
    name = "json-cot"
    summary = "ChainOfThought over JSON; the response schema admits only the listed tools and their arguments"


@register_strategy
class JsonPredict(_JsonStrategy):
    name = "json"
    summary = "JSON tool calls without reasoning (dspy.Predict), same constrained schema"
    reasoning = False


@register_strategy
class ChatCoT(_JsonStrategy):
    name = "chat-cot"
    summary = "ChainOfThought in DSPy's [[ ## field ## ]] chat format, unconstrained"

    def adapter(self) -> dspy.Adapter:
        return GuardedChatAdapter()
