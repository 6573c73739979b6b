"""``MultiToolSelector``: a DSPy ChainOfThought program that decides which tools a request needs.

One program serves any tool catalog: the available tools are an input (rendered from the tool model), so a
compiled selector's instructions and demonstrations carry over between tool sets. What the model may answer
is constrained per call: under ``ToolSelectionAdapter`` (JSON, the default for local models) the response
schema lists only the available tool names, each with its own argument schema, so constrained decoding can
produce nothing else. Every decision is then checked against the registry; unknown tools and invalid
arguments are recorded on the ``MultiToolDecision``, never raised, and an unparseable answer becomes a
decision with ``parse_error`` set.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dspy
import json_repair
from dspy.adapters.json_adapter import JSONAdapter
from dspy.utils.exceptions import AdapterParseError

from tool_selection.decision import CallProblem, MultiToolDecision, ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import drop_strict_nulls, to_text
from tool_selection.registry import ToolRegistry
from tool_selection.toolset import ToolSet

__all__ = ["MultiToolSelector", "SelectTools", "ToolSelectionAdapter", "check_decision", "compact_demo", "response_schema"]

# Demonstrations never show these: every prompt lists the tools once (a repeated listing costs seconds on a CPU
# and hundreds of tokens), and a training example's case is for scoring, not for the model.
DEMO_OMITS = ("tools", "case")
MAX_REASONING_CHARS = 400  # a few sentences; longer reasoning costs latency without helping small models
MAX_CALLS = 8


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

Tools = ToolRegistry | ToolSet


def _as_registry(tools: Tools) -> ToolRegistry:
    if isinstance(tools, ToolRegistry):
        return tools
    if isinstance(tools, ToolSet):
        return tools.registry()
    raise TypeError(f"tools must be a ToolRegistry or ToolSet, got {type(tools).__name__}")


def render_tools(registry: ToolRegistry) -> str:
    return "\n\n".join(to_text(tool) for tool in registry)


def response_schema(registry: ToolRegistry) -> dict[str, Any]:
    """JSON Schema of a ChainOfThought answer over ``registry``: reasoning, then calls of listed tools only."""
    call_schemas = [
        {
            "type": "object",
            "properties": {"tool_name": {"const": tool.NAME}, "arguments": tool.input_schema()},
            "required": ["tool_name", "arguments"],
        }
        for tool in registry
    ]
    items: dict[str, Any] = {"anyOf": call_schemas} if call_schemas else {"not": {}}
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": MAX_REASONING_CHARS},
            "tool_calls": {"type": "array", "items": items, "maxItems": MAX_CALLS},
        },
        "required": ["reasoning", "tool_calls"],
    }


class ToolSelectionAdapter(JSONAdapter):
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


def check_decision(reasoning: str, calls: Iterable[ToolCall], registry: ToolRegistry) -> MultiToolDecision:
    """A decision whose unknown tools and invalid arguments are recorded as ``problems``."""
    calls = list(calls)
    problems = []
    for index, call in enumerate(calls):
        if call.tool_name not in registry:
            problems.append(CallProblem(kind="unknown_tool", tool_name=call.tool_name, call_index=index,
                                        detail=f"{call.tool_name!r} is not one of the available tools"))
            continue
        tool = registry.get(call.tool_name)
        call.arguments = drop_strict_nulls(tool, call.arguments)
        arg_problems = tool.check_arguments(call.arguments)
        if arg_problems:
            problems.append(CallProblem(kind="invalid_arguments", tool_name=call.tool_name, call_index=index,
                                        detail="; ".join(str(p) for p in arg_problems),
                                        fields=[p.field for p in arg_problems]))
    return MultiToolDecision(reasoning=reasoning or "", tool_calls=calls, problems=problems)


def _salvage(raw: str, registry: ToolRegistry) -> MultiToolDecision | None:
    """Recover calls from an answer the adapter rejected (e.g. a tool name outside the list)."""
    try:
        data = json_repair.loads(raw)
    except Exception:  # json_repair raises assorted errors on hopeless input
        return None
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


class _LoadDescriptor:
    """``MultiToolSelector.load(DIR)`` builds a selector from a compiled directory; on an instance, ``load(path)``
    is DSPy's state loader."""

    def __get__(self, instance, owner):
        if instance is None:
            return owner.from_directory
        return functools.partial(dspy.Module.load, instance)


class MultiToolSelector(dspy.Module):
    """Chooses zero or more tool calls for a request from the available tools.

    ``tools`` given here are the default catalog; ``forward(request, tools=...)`` can name another one per
    call (as evaluation suites with inline tool definitions do). ``constrain=True`` (the default) sends the
    per-call response schema when the configured adapter is a ``ToolSelectionAdapter``.
    """

    def __init__(self, tools: Tools | None = None, *, constrain: bool = True):
        super().__init__()
        self.tools = None if tools is None else _as_registry(tools)
        self.constrain = constrain
        self.select = dspy.ChainOfThought(SelectTools, rationale_field=REASONING)

    def forward(self, request: str, tools: Tools | None = None) -> dspy.Prediction:
        registry = self._registry(tools)
        constrained = self.constrain and isinstance(dspy.settings.adapter, ToolSelectionAdapter)
        config = {ToolSelectionAdapter.SCHEMA_KEY: response_schema(registry)} if constrained else {}
        demos = [compact_demo(d) for d in self.select.predict.demos]
        try:
            prediction = self.select(request=request, tools=render_tools(registry), config=config, demos=demos)
        except AdapterParseError as error:
            decision = _salvage(error.lm_response or "", registry) or MultiToolDecision(
                parse_error=_short(f"{type(error).__name__}: {error.message or error}"),
                reasoning="",
            )
            return dspy.Prediction(decision=decision, reasoning=decision.reasoning, tool_calls=decision.tool_calls,
                                   raw_response=error.lm_response)
        calls = [c if isinstance(c, ToolCall) else ToolCall.model_validate(c) for c in prediction.tool_calls or []]
        decision = check_decision(getattr(prediction, "reasoning", ""), calls, registry)
        return dspy.Prediction(decision=decision, reasoning=decision.reasoning, tool_calls=calls)

    load = _LoadDescriptor()

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        """DSPy's state, with demonstrations as the model sees them (see ``DEMO_OMITS``)."""
        state = super().dump_state(json_mode=json_mode)
        for predictor_state in state.values():
            if isinstance(predictor_state, dict) and "demos" in predictor_state:
                predictor_state["demos"] = [compact_demo(d) for d in predictor_state["demos"]]
        return state

    @classmethod
    def from_directory(cls, directory: str | Path, tools: Tools | None = None, *,
                       allow_tool_changes: bool = False) -> MultiToolSelector:
        """A compiled selector saved by ``toolsel optimize``; refuses if its tools changed (see ``compiled``)."""
        from tool_selection.compiled import load_compiled, read_manifest
        from tool_selection.toolset import load_tool_set

        directory = Path(directory)
        manifest = read_manifest(directory)
        if tools is None and manifest.tool_set:
            tools = load_tool_set(manifest.tool_set)
        selector = cls(tools)
        selector.manifest = load_compiled(selector, directory, selector.tools, allow_tool_changes=allow_tool_changes)
        return selector

    def decide(self, request: str, tools: Tools | None = None) -> MultiToolDecision:
        """The ``MultiToolDecision`` for ``request`` (a convenience over ``__call__``)."""
        return self(request=request, tools=tools).decision

    def _registry(self, tools: Tools | None) -> ToolRegistry:
        if tools is not None:
            return _as_registry(tools)
        if self.tools is None:
            raise ToolSelectionError(
                "MultiToolSelector has no tools: pass tools=... to the constructor or to the call "
                "(a ToolSet such as load_tool_set('finance'), or a ToolRegistry)."
            )
        return self.tools


def compact_demo(demo: Any) -> Any:
    """A demonstration without the fields in ``DEMO_OMITS`` (a ``dspy.Example`` stays one)."""
    keys = demo.keys() if isinstance(demo, dict | dspy.Example) else ()
    if not any(k in DEMO_OMITS for k in keys):
        return demo
    if isinstance(demo, dspy.Example):
        return demo.without(*[k for k in DEMO_OMITS if k in keys])
    return {k: v for k, v in demo.items() if k not in DEMO_OMITS}


def _short(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def decision_to_json(decision: MultiToolDecision) -> str:
    return json.dumps(decision.model_dump(mode="json"), ensure_ascii=False)
