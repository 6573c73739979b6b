"""The pair's models: their names, their LMs, and what their calls cost (from the model catalog)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import dspy

from tool_selection.defaults import DEFAULT_MAX_TOKENS
from tool_selection.errors import ToolSelectionError

__all__ = ["CostFn", "LMOptions", "catalog_cost", "check_cost", "model_name", "resolve_lm"]

CostFn = Callable[[str, int, int], float]
"""``(model spec, input tokens, output tokens) -> cost`` of one call."""


@dataclass(frozen=True)
class LMOptions:
    """How a model given as a spec becomes an LM (``get_lm``): its generation limit, DSPy's answer cache, and
    constrained decoding; an LM object given is used as it is."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    cache: bool = True
    constrained: bool = True


def catalog_cost(spec: str, input_tokens: int, output_tokens: int) -> float:
    """Relative cost of a call from the model catalog (``tool_selection.lm.model_cost``)."""
    try:
        from tool_selection.lm import model_cost
    except ImportError as error:
        raise ToolSelectionError(
            f"Model costs come from the model catalog in tool_selection.lm, which cannot be imported ({error}); "
            "pass cost_fn=(spec, input_tokens, output_tokens) -> cost.") from None
    return float(model_cost(spec, input_tokens, output_tokens))


def check_cost(cost_fn: CostFn, name: str) -> None:
    """Fails early, naming the fix, when ``cost_fn`` has no price for model ``name``."""
    try:
        cost_fn(name, 1, 1)
    except ToolSelectionError:
        raise
    except Exception as error:
        raise ToolSelectionError(f"No cost for model {name!r} ({type(error).__name__}: {error}); add it to the model "
                                 "catalog or pass cost_fn=(spec, input_tokens, output_tokens) -> cost.") from None


def model_name(model: str | dspy.BaseLM) -> str:
    """A model spec as given, or an LM object's ``model``."""
    return model if isinstance(model, str) else str(getattr(model, "model", type(model).__name__))


def resolve_lm(model: str | dspy.BaseLM, *, logprobs: bool = False, max_tokens: int = DEFAULT_MAX_TOKENS, cache: bool = True,
               constrained: bool = True) -> dspy.BaseLM:
    """An LM for a spec (``get_lm``), or the LM given; with token log-probabilities when ``logprobs``."""
    if isinstance(model, str):
        try:
            from tool_selection.lm import get_lm
        except ImportError as error:
            raise ToolSelectionError(f"Model specs such as {model!r} are resolved by tool_selection.lm, which cannot "
                                     f"be imported ({error}); pass a dspy.LM object instead.") from None
        return get_lm(model, temperature=0.0, max_tokens=max_tokens, cache=cache, constrained=constrained,
                      logprobs=logprobs)
    if logprobs and not model.kwargs.get("logprobs"):
        return model.copy(logprobs=True)
    return model
