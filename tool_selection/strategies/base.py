"""What a selection strategy is, and the registry that names them.

A strategy is how a selector asks a model for tool calls and reads the answer: the DSPy predictor it builds
(whose instructions and demonstrations optimizers tune, and which a compiled selector saves), the adapter that
turns the predictor's signature into the prompt (JSON with a constrained schema, the model's own tool-calling
format, a text protocol), and the reading of the answer into a ``MultiToolDecision``. Model mistakes (an
unparseable answer, an unknown tool, invalid arguments) are recorded on the decision, never raised.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import dspy
from dspy.utils.exceptions import AdapterParseError

from tool_selection.decision import CallProblem, MultiToolDecision, ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import drop_strict_nulls
from tool_selection.parsing import clip, safe_text, safe_value
from tool_selection.registry import ToolRegistry
from tool_selection.strategies.registry import GATE_PREFIX, STRATEGIES, UNDECLARED_ARGUMENTS, UnknownStrategyError

__all__ = [
    "GATE_PREFIX",
    "STRATEGIES",
    "SelectionStrategy",
    "ToolChoice",
    "UnknownStrategyError",
    "UNDECLARED_ARGUMENTS",
    "check_decision",
    "drop_undeclared",
    "get_strategy",
    "only_auto",
    "parse_strategy",
    "register_strategy",
    "strategy_names",
    "with_demos",
]


class SelectionStrategy:
    """Base class: subclasses set ``name`` and ``summary`` and implement the three methods below."""

    name: ClassVar[str]
    summary: ClassVar[str]
    reasoning: ClassVar[bool] = False  # does the predictor ask for reasoning before the calls?

    def __init__(self, *, constrain: bool = True):
        self.constrain = constrain

    def build_predictor(self) -> dspy.Module:
        """The DSPy predictor (``dspy.Predict`` or ``dspy.ChainOfThought``) the selector holds as ``select``."""
        raise NotImplementedError

    def adapter(self) -> dspy.Adapter:
        """The adapter the predictor runs under (the selector sets it, whatever the caller configured)."""
        raise NotImplementedError

    def decide(self, predictor: dspy.Module, request: str, registry: ToolRegistry,
               conversation: list[dict[str, Any]] | None = None, tool_choice: ToolChoice = "auto") -> dspy.Prediction:
        """Run ``predictor`` on ``request`` over ``registry``; a ``Prediction`` with ``decision`` (and
        ``raw_response`` when the answer could not be read). ``conversation``: the turns so far as chat messages,
        for strategies that send them as turns (the request then holds the same conversation as text).
        ``tool_choice="required"``: the answer must call (native strategies only; ``only_auto`` refuses it)."""
        raise NotImplementedError

    def check_lm(self, lm: dspy.BaseLM) -> None:
        """Raise ``ToolSelectionError`` if ``lm`` cannot serve this strategy (checked before any work)."""

    def resolved_name(self, lm: dspy.BaseLM) -> str:
        """The strategy this one runs as with ``lm``: itself, except for strategies chosen by the model (``auto``)."""
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, constrain={self.constrain})"


def check_strategy_class(cls: Any) -> None:
    """``TypeError`` unless ``cls`` can be registered as a strategy (``registry.STRATEGIES`` calls it)."""
    if not (isinstance(cls, type) and issubclass(cls, SelectionStrategy)):
        raise TypeError(f"a selection strategy is a SelectionStrategy subclass, got {cls!r}")
    if not getattr(cls, "name", None) or not getattr(cls, "summary", None):
        raise TypeError(f"{cls.__qualname__} needs a name and a summary to be registered as a strategy")

register_strategy = STRATEGIES.register


def strategy_names() -> list[str]:
    """Every registered strategy name, and the gated form ``gate+NAME`` of each is valid too."""
    return STRATEGIES.names()


def parse_strategy(spec: str) -> tuple[bool, str]:
    """``(gated, name)`` for ``NAME`` or ``gate+NAME``; an unknown name is an error listing the known ones."""
    if not isinstance(spec, str) or not spec.strip():
        raise UnknownStrategyError(f"A strategy is named by a string; known: {', '.join(strategy_names())} "
                                   f"(each also as {GATE_PREFIX}NAME).")
    spec = spec.strip()
    gated = spec.startswith(GATE_PREFIX)
    name = spec.removeprefix(GATE_PREFIX)
    if name not in STRATEGIES:
        raise UnknownStrategyError(STRATEGIES.unknown([spec]))
    return gated, name


def get_strategy(name: str, *, constrain: bool = True) -> SelectionStrategy:
    """A strategy instance by name (without the gate prefix)."""
    gated, base = parse_strategy(name)
    if gated:
        raise UnknownStrategyError(f"{name!r} is a gated strategy: the gate belongs to the selector "
                                   "(MultiToolSelector(strategy=...)), not to get_strategy.")
    return STRATEGIES.get(base)(constrain=constrain)


def demo_without(demo: Any, keys: Any) -> Any:
    """A demonstration without ``keys`` (a ``dspy.Example`` stays one; one that has none of them comes back as is)."""
    drop = [key for key in demo.keys() if key in keys] if isinstance(demo, dict | dspy.Example) else []
    if not drop:
        return demo
    if isinstance(demo, dspy.Example):
        return demo.without(*drop)
    return {key: value for key, value in demo.items() if key not in drop}


def check_decision(reasoning: str, calls: list[ToolCall], registry: ToolRegistry) -> MultiToolDecision:
    """A decision whose unknown tools and invalid arguments are recorded as ``problems`` (the calls are kept as
    given, with the null values OpenAI-strict answers use for omitted optional arguments dropped)."""
    checked, problems = [], []
    calls = [ToolCall(tool_name=safe_text(c.tool_name, 200), arguments=safe_value(c.arguments)) for c in calls]
    for index, call in enumerate(calls):
        if call.tool_name not in registry:
            checked.append(call)
            problems.append(CallProblem(kind="unknown_tool", tool_name=call.tool_name, call_index=index,
                                        detail=f"{call.tool_name!r} is not one of the available tools"))
            continue
        tool = registry.get(call.tool_name)
        call = ToolCall(tool_name=call.tool_name, arguments=drop_strict_nulls(tool, call.arguments))
        checked.append(call)
        arg_problems = tool.check_arguments(call.arguments)
        if arg_problems:
            problems.append(CallProblem(kind="invalid_arguments", tool_name=call.tool_name, call_index=index,
                                        detail="; ".join(str(p) for p in arg_problems),
                                        fields=[p.field for p in arg_problems]))
    return MultiToolDecision(reasoning=safe_text(reasoning or "", 4000), tool_calls=checked, problems=problems)




def drop_undeclared(decision: MultiToolDecision, registry: ToolRegistry) -> tuple[MultiToolDecision, int]:
    """``decision`` with every argument its tool does not declare removed and its calls checked again, and how
    many arguments were removed."""
    calls, dropped = [], 0
    for call in decision.tool_calls:
        if call.tool_name in registry and isinstance(call.arguments, dict):
            undeclared = registry.get(call.tool_name).undeclared_arguments(call.arguments)
            if undeclared:
                dropped += len(undeclared)
                call = ToolCall(tool_name=call.tool_name,
                                arguments={k: v for k, v in call.arguments.items() if k not in undeclared})
        calls.append(call)
    if not dropped:
        return decision, 0
    return check_decision(decision.reasoning, calls, registry), dropped


def parse_failure(error: AdapterParseError | str, raw: str | None) -> dspy.Prediction:
    """The prediction of an answer that could not be read: a decision with ``parse_error``, the raw text kept."""
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error.message or error}"
    decision = MultiToolDecision(parse_error=short(message))
    return dspy.Prediction(decision=decision, reasoning="", tool_calls=[], raw_response=safe_text(raw or ""))


ToolChoice = Literal["auto", "required"]


def only_auto(tool_choice: ToolChoice, strategy: str) -> None:
    """Refuse a required call where the strategy cannot force one."""
    if tool_choice != "auto":
        raise ToolSelectionError(f"tool_choice={tool_choice!r} needs a native strategy (the model's own call "
                                 f"format, where a call can be required); {strategy} lets the model decide.")


def decided(decision: MultiToolDecision, raw: str | None = None) -> dspy.Prediction:
    return dspy.Prediction(decision=decision, reasoning=decision.reasoning, tool_calls=decision.tool_calls,
                           raw_response=safe_text(raw) if raw is not None else None)


def short(text: str, limit: int = 500) -> str:
    text = " ".join(safe_text(text).split())
    return clip(text, limit)


def as_calls(values: Any) -> list[ToolCall]:
    """Tool calls from what a predictor returned (``ToolCall``s or their dicts)."""
    return [v if isinstance(v, ToolCall) else ToolCall.model_validate(v) for v in values or []]


def inner_predict(predictor: dspy.Module) -> dspy.Predict:
    """The ``dspy.Predict`` holding a predictor's demos (``ChainOfThought`` wraps one)."""
    return predictor.predict if hasattr(predictor, "predict") else predictor


def with_demos(predictor: dspy.Module, demos: list[Any]) -> dspy.Module:
    """A copy of ``predictor`` that shows ``demos`` (what every strategy reads from ``inner_predict``); the
    predictor itself is untouched, so calls sharing it in other threads see none of them."""
    shown = copy.copy(predictor)
    if hasattr(predictor, "predict"):
        shown.predict = copy.copy(predictor.predict)
    inner_predict(shown).demos = list(demos)
    return shown


ParseFn = Callable[[str], Any]
