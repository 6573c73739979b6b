"""Building a ``MultiToolSelector`` from a ``SelectorSpec``, and the spec of a selector as it stands.

``MultiToolSelector.from_spec`` and ``to_spec`` are the public faces; the harness (``evals.evaluation``) applies a
spec to a compiled selector it was handed with ``apply_spec``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import dspy

from tool_selection.defaults import DEFAULT_STRATEGY
from tool_selection.errors import ToolSelectionError
from tool_selection.spec import GateSpec, RetrievalSpec, SelectorSpec

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
        return cls(strategy=spec.strategy or DEFAULT_STRATEGY, constrain=spec.constrain)
    path = Path(spec.program)
    if path.is_dir():
        selector = cls.from_directory(path, allow_tool_changes=spec.allow_tool_changes)
        if spec.strategy is not None and spec.strategy != selector.strategy_name:
            raise ToolSelectionError(f"The compiled selector in {path} was built with strategy "
                                     f"{selector.strategy_name!r}, not {spec.strategy!r}; leave --strategy out or "
                                     "optimize a program for that strategy.")
        return selector
    from tool_selection.compiled import load_program_state

    selector = load_program_state(cls(strategy=spec.strategy or DEFAULT_STRATEGY, constrain=spec.constrain), path)
    selector.program_path = spec.program
    return selector


def apply_spec(selector: MultiToolSelector, spec: SelectorSpec, *, model: str | None,
               gate_lm: dspy.BaseLM | None) -> None:
    """Set ``spec``'s relevance stage, gate, retrieval and argument handling on ``selector`` (a compiled one keeps
    its own relevance model under ``relevance="auto"``). Options that apply to nothing are refused."""
    _apply_relevance(selector, spec, model=model, gate_lm=gate_lm)
    gate_for_stage = selector.relevance is not None and "gate" in selector.relevance.signals
    if selector.gate is None and (spec.gate.threshold is not None or gate_lm is not None and not gate_for_stage):
        raise ToolSelectionError(f"--gate-model and --gate-threshold apply to a gated strategy (gate+NAME) or the "
                                 f"relevance signal 'gate', not {selector.strategy_name!r}.")
    if selector.gate is not None:
        selector.gate_lm = gate_lm or selector.gate_lm
        if spec.gate.threshold is not None:
            selector.gate_threshold = float(spec.gate.threshold)
    if spec.retrieval is not None:
        selector.retrieve, selector.retriever_name = spec.retrieval.k, spec.retrieval.retriever
        selector.rerank = spec.retrieval.rerank
    selector.undeclared_arguments = spec.undeclared_arguments
    selector.spec = spec


def _apply_relevance(selector: MultiToolSelector, spec: SelectorSpec, *, model: str | None,
                     gate_lm: dspy.BaseLM | None) -> None:
    from tool_selection.relevance import RelevanceStage, resolve_relevance

    if spec.relevance == "none":  # also a compiled selector's own
        selector.relevance = None
        relevance = None
    elif spec.relevance == "auto" and selector.relevance is not None:
        relevance = selector.relevance.model  # a compiled selector's own comes first
    else:
        relevance = resolve_relevance(spec.relevance, _model_name(model, spec))
    if relevance is not None or spec.relevance_signals:
        selector.relevance = RelevanceStage(relevance, signals=spec.relevance_signals,
                                            gate_lm=gate_lm if selector.gate is None else None)
        if "gate" in selector.relevance.signals and gate_lm is None:
            raise ToolSelectionError("The relevance signal 'gate' asks a gate model: give --gate-model.")


def _model_name(model: str | None, spec: SelectorSpec) -> str:
    """The model ``relevance="auto"`` picks a shipped relevance model for: ``model``, else the configured LM's."""
    if model is not None:
        return model
    if spec.relevance != "auto":
        return ""
    configured = dspy.settings.lm
    if configured is None:
        raise ToolSelectionError("relevance='auto' applies the relevance model shipped for the model the selector "
                                 "runs with: pass model= to MultiToolSelector.from_spec, configure the LM first "
                                 "(dspy.configure), or set relevance to 'none' or a file.")
    return str(getattr(configured, "model", ""))


def spec_of(selector: MultiToolSelector) -> SelectorSpec:
    base = selector.spec or SelectorSpec()
    gate = base.gate
    if selector.gate is not None:
        gate = GateSpec(model=gate.model, threshold=selector.gate_threshold)
    retrieval = (RetrievalSpec(k=selector.retrieve, retriever=selector.retriever_name, rerank=selector.rerank)
                 if selector.retrieve is not None else None)
    return base.model_copy(update={
        "strategy": selector.strategy_name, "gate": gate, "retrieval": retrieval, "constrain": selector.constrain,
        "undeclared_arguments": selector.undeclared_arguments,
        "program": str(selector.program_path) if selector.program_path is not None else base.program,
        "relevance": base.relevance if selector.relevance is not None or base.relevance == "none" else "none",
    })
