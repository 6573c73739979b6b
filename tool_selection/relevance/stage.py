"""The relevance stage of a selector: after the selection, its signals, and with a model, the call or no call.

``RelevanceStage(signals=...)`` with no model only records the signals on each decision (``rel_<signal>`` columns
of an evaluation's rows), so that a relevance model can be fitted on train rows and its threshold chosen on dev
without calling the model again (``evals.relevance``). With a ``RelevanceModel`` it also decides: a decision that
calls tools while P(some tool fits) is below the model's threshold becomes a decision without a call.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.usage_tracker import UsageTracker

from tool_selection.decision import MultiToolDecision
from tool_selection.registry import ToolRegistry
from tool_selection.relevance.model import RelevanceModel
from tool_selection.relevance.signals import (
    CHEAP_SIGNALS,
    LOGPROB_SIGNALS,
    SIGNAL_PREFIX,
    SIGNALS,
    Evidence,
    capture_lm_call,
    check_signals,
    compute_signals,
)
from tool_selection.strategies.gate import TOP_LOGPROBS

__all__ = ["OVERRULED_CALLS", "RelevanceStage", "SIGNAL_PREFIX", "recorded_signals"]

OVERRULED_CALLS = "relevance_overruled_calls"  # a row's column: the calls the stage dropped, as "predicted" holds them


def recorded_signals(extras: Mapping[str, Any] | None) -> dict[str, float]:
    """The relevance signals a decision's row holds (its ``rel_<signal>`` columns), by signal name."""
    return {key.removeprefix(SIGNAL_PREFIX): value for key, value in (extras or {}).items()
            if key.startswith(SIGNAL_PREFIX) and isinstance(value, int | float)}


class RelevanceStage:
    """Signals computed after each selection and, with ``model``, a decision to keep or drop its calls.

    ``model``: a ``RelevanceModel`` or the path of one; its signals are computed (``signals`` adds more, recorded
    only). ``gate_lm``: the model the ``gate`` signal asks (it needs one)."""

    def __init__(self, model: RelevanceModel | str | Path | None = None, *, signals: Sequence[str] | None = None,
                 gate_lm: dspy.BaseLM | None = None):
        if model is not None and not isinstance(model, RelevanceModel):
            model = RelevanceModel.load(model)
        self.model = model
        wanted = list(model.reads) if model is not None else []
        wanted += list(signals if signals is not None else ([] if model is not None else CHEAP_SIGNALS))
        self.signals = check_signals(wanted)
        self.gate_lm = gate_lm

    @property
    def needs_logprobs(self) -> bool:
        return any(name in LOGPROB_SIGNALS for name in self.signals)

    def describe(self) -> str:
        what = f"model {self.model.fingerprint} at P < {self.model.threshold:.3f}" if self.model else "signals only"
        return f"relevance ({what}: {', '.join(self.signals)})"

    @contextmanager
    def observing(self, lm: dspy.BaseLM | None) -> Iterator[Any]:
        """Runs the selection inside: asks ``lm`` for log-probabilities when a signal reads them, and records the
        call's inputs and output for the signals."""
        context: dict[str, Any] = {}
        if self.needs_logprobs and lm is not None:
            context["lm"] = lm.copy(logprobs=True, top_logprobs=TOP_LOGPROBS)
        with dspy.context(**context), capture_lm_call() as captured:
            yield captured
        captured.lm = context.get("lm", lm)

    def judge(self, request: str, registry: ToolRegistry, decision: MultiToolDecision,
              captured: Any) -> tuple[MultiToolDecision, dict[str, Any]]:
        """The decision to return (without its calls when the model says no tool fits) and the row's columns."""
        start = time.perf_counter()
        evidence = Evidence(request=request, registry=registry, decision=decision, lm_inputs=captured.inputs,
                            lm_output=captured.output, lm=getattr(captured, "lm", None), gate_lm=self.gate_lm)
        with dspy.context(usage_tracker=UsageTracker()):  # the stage's own calls are reported apart
            names = [n for n in self.signals if decision.tool_calls or not SIGNALS[n].costs_a_call]
            values = compute_signals(evidence, names)
        extras: dict[str, Any] = {f"{SIGNAL_PREFIX}{name}": values.get(name, math.nan) for name in self.signals}
        extras.update({"relevance_input_tokens": evidence.cost.get("input_tokens", 0.0),
                       "relevance_output_tokens": evidence.cost.get("output_tokens", 0.0)})
        if self.model is not None:
            probability = self.model.probability(values)
            overrule = bool(decision.tool_calls) and probability < self.model.threshold
            extras.update({"relevance_p": probability, "relevance_overruled": float(overrule)})
            if overrule:  # the calls are kept in the row, so that another model or threshold can be scored offline
                extras[OVERRULED_CALLS] = json.dumps([call.model_dump() for call in decision.tool_calls],
                                                                 ensure_ascii=False, default=str)
                decision = MultiToolDecision(reasoning=f"Relevance: no listed tool fits (P = {probability:.2f} < "
                                                       f"{self.model.threshold:.2f}); the answer was: "
                                                       f"{', '.join(decision.tool_names)}.")
        extras["relevance_seconds"] = time.perf_counter() - start
        return decision, extras
