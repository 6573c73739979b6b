"""Building a ``MultiToolSelector`` from a ``SelectorSpec``, and the spec of a selector as it stands.

``MultiToolSelector.from_spec`` and ``to_spec`` are the public faces; the harness (``evals.evaluation``) applies a
spec to a compiled selector it was handed with ``apply_spec``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import dspy

from tool_selection.defaults import NO_RELEVANCE
from tool_selection.errors import ToolSelectionError
from tool_selection.spec import GateSpec, SelectorSpec

if TYPE_CHECKING:
    from tool_selection.selector import MultiToolSelector

__all__ = ["apply_spec", "load_program", "selector_from_spec", "spec_of"]


def selector_from_spec(cls: type[MultiToolSelector], spec: SelectorSpec, *, model: str | None,
                       gate_lm: dspy.BaseLM | None) -> MultiToolSelector:
    selector = load_program(cls, spec)
    if spec.tools is not None:
        from tool_selection.toolset import load_tool_set

        selector.tools = load_tool_set(spec.tools).registry()
    if gate_lm is None and spec.gate.model is not None:
        from tool_selection.lm import get_lm

        gate_lm = get_lm(spec.gate.model, temperature=0.0, max_tokens=2)
    apply_spec(selector, spec, model=model, gate_lm=gate_lm)
    return selector


def load_program(cls: type[MultiToolSelector], spec: SelectorSpec) -> MultiToolSelector:
    """A fresh selector with the spec's strategy, or a compiled one from ``spec.program`` (a program directory,
    whose manifest names its strategy, or DSPy state JSON saved from a selector with the spec's strategy)."""
    if spec.program is None:
        return cls(strategy=spec.strategy_or_default, constrain=spec.constrain)
    path = Path(spec.program)
    if path.is_dir():
        selector = cls.from_directory(path, allow_tool_changes=spec.allow_tool_changes)
        if spec.strategy is not None and spec.strategy != selector.strategy_name:
            raise ToolSelectionError(f"The compiled selector in {path} was built with strategy "
                                     f"{selector.strategy_name!r}, not {spec.strategy!r}; leave --strategy out or "
                                     "optimize a program for that strategy.")
        return selector
    from tool_selection.compiled import load_program_state

    selector = load_program_state(cls(strategy=spec.strategy_or_default, constrain=spec.constrain), path)
    selector.spec = selector.spec.model_copy(update={"program": spec.program})
    return selector


def apply_spec(selector: MultiToolSelector, spec: SelectorSpec, *, model: str | None,
               gate_lm: dspy.BaseLM | None) -> None:
    """Set ``spec``'s relevance stage, gate, retrieval and argument handling on ``selector`` (a compiled one keeps
    its own relevance model under ``relevance="auto"``), which then holds ``spec`` with what it keeps of its own
    (strategy, program, gate threshold, retrieval, constrained decoding). Options that apply to nothing are
    refused."""
    _apply_relevance(selector, spec, model=model, gate_lm=gate_lm)
    gate_for_stage = selector.relevance is not None and "gate" in selector.relevance.signals
    if selector.gate is None and (spec.gate.threshold is not None or gate_lm is not None and not gate_for_stage):
        raise ToolSelectionError(f"--gate-model and --gate-threshold apply to a gated strategy (gate+NAME) or the "
                                 f"relevance signal 'gate', not {selector.strategy_name!r}.")
    gate = spec.gate
    if selector.gate is not None:
        selector.gate_lm = gate_lm or selector.gate_lm
        threshold = selector.gate_threshold if spec.gate.threshold is None else float(spec.gate.threshold)
        gate = GateSpec(model=spec.gate.model, threshold=threshold)
    held = selector.spec
    selector.spec = spec.model_copy(update={
        "strategy": held.strategy, "program": held.program if held.program is not None else spec.program,
        "gate": gate, "retrieval": spec.retrieval or held.retrieval, "constrain": held.constrain})


def _apply_relevance(selector: MultiToolSelector, spec: SelectorSpec, *, model: str | None,
                     gate_lm: dspy.BaseLM | None) -> None:
    from tool_selection.relevance import RelevanceStage, resolve_relevance

    relevance = resolve_relevance(spec.relevance, model, own=selector.relevance)
    if spec.relevance == NO_RELEVANCE:  # also a compiled selector's own
        selector.relevance = None
    if relevance is not None or spec.relevance_signals:
        selector.relevance = RelevanceStage(relevance, signals=spec.relevance_signals,
                                            gate_lm=gate_lm if selector.gate is None else None)
        if "gate" in selector.relevance.signals and gate_lm is None:
            raise ToolSelectionError("The relevance signal 'gate' asks a gate model: give --gate-model.")


def spec_of(selector: MultiToolSelector) -> SelectorSpec:
    """The spec ``selector`` holds; its ``relevance`` is ``none`` where no relevance stage was built."""
    if selector.relevance is None and selector.spec.relevance != NO_RELEVANCE:
        return selector.spec.model_copy(update={"relevance": NO_RELEVANCE})
    return selector.spec
