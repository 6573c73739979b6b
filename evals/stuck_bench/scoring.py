"""A selector that scores its own decisions with stuck detectors, for the harness to record per case."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

import dspy
from dspy.utils.usage_tracker import UsageTracker

from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.selector import MultiToolSelector
from tool_selection.strategies import STRUCTURED_STRATEGY
from tool_selection.stuck import Attempt, DetectorUnavailable, StuckDetector, capture_generation, make_sampler
from tool_selection.stuck.learned import router_inputs
from tool_selection.toolset import ToolSet

__all__ = ["DetectorFailed", "StuckScoredSelector", "detector_columns"]


class DetectorFailed(ToolSelectionError):
    """A stuck detector raised something other than ``DetectorUnavailable``: a bug to fix, not a score. It stops the
    run (the harness would otherwise count it as the model's failure, and NaN scores count as stuck)."""


class StuckScoredSelector(MultiToolSelector):
    """A ``MultiToolSelector`` that also scores its decision with each detector. Scores go to ``row_extras``
    (``stuck_<name>``, ``stuck_<name>_evidence``; NaN with ``stuck_<name>_unavailable`` where a detector cannot
    score); detector calls (consistency samples) are tracked apart, as ``stuck_<name>_overhead_*_tokens``, so
    the harness's token counts stay those of the decision itself; each detector's seconds go to
    ``stuck_<name>_seconds`` (a composite's with its components') and all of them to ``stuck_seconds``, so that the
    decision's own seconds are the row's ``latency_s`` less those. A detector that crashes stops the run
    (``DetectorFailed``)."""

    def __init__(self, detectors: Sequence[StuckDetector], tools: ToolRegistry | ToolSet | None = None, *,
                 constrain: bool = True, strategy: str = STRUCTURED_STRATEGY):
        super().__init__(tools, constrain=constrain, strategy=strategy)
        self.detectors = sorted(detectors, key=lambda d: d.composite)  # combined reuses the others' signals

    @classmethod
    def wrap(cls, selector: MultiToolSelector, detectors: Sequence[StuckDetector]) -> StuckScoredSelector:
        """The same (possibly compiled) selector, with detectors: its demonstrations, relevance stage, gate model
        and spec."""
        scored = cls(detectors, selector.tools, constrain=selector.constrain, strategy=selector.strategy_name)
        scored.load_state(selector.dump_state())
        for held in ("spec", "relevance", "gate_lm", "demo_pool"):
            setattr(scored, held, getattr(selector, held))
        return scored

    def forward(self, request: str, tools: ToolRegistry | ToolSet | None = None) -> dspy.Prediction:
        with capture_generation() as captured:
            prediction = super().forward(request, tools)
        registry = self._registry(tools)
        attempt = Attempt(request=request, decision=prediction.decision, tools=registry,
                          generation=captured.generation,
                          features=router_inputs(getattr(prediction, "row_extras", None)),
                          sampler=make_sampler(lambda r, t: MultiToolSelector.forward(self, r, t), request, registry))
        extras: dict[str, Any] = {}
        started = time.perf_counter()
        with dspy.context(usage_tracker=UsageTracker()):  # detector calls are not the decision's cost
            for detector in self.detectors:
                extras.update(detector_columns(detector, attempt, extras))
        extras["stuck_seconds"] = time.perf_counter() - started
        prediction.row_extras = {**(getattr(prediction, "row_extras", None) or {}), **extras}
        return prediction


def detector_columns(detector: StuckDetector, attempt: Attempt,
                     earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """One detector's columns of a case's row: its score, evidence, overhead tokens and seconds (a composite's
    with its components' seconds, read from the ``earlier`` detectors' columns); NaN and the reason when it is
    unavailable. Any other exception is re-raised as ``DetectorFailed``."""
    key = f"stuck_{detector.name}"
    started = time.perf_counter()
    try:
        signal = detector(attempt)
    except DetectorUnavailable as error:
        return {key: math.nan, f"{key}_unavailable": str(error), f"{key}_seconds": time.perf_counter() - started}
    except ToolSelectionError:
        raise
    except Exception as error:  # re-raised: the harness records other exceptions as the model's failures
        raise DetectorFailed(f"The stuck detector {detector.name!r} crashed on the request {attempt.request[:80]!r} "
                             f"({type(error).__name__}: {error}); a crash is not a score, so the run stops. Fix "
                             "the detector, or raise DetectorUnavailable where it cannot score.") from error
    seconds = time.perf_counter() - started
    parts = signal.evidence.get("components", {}) if detector.composite else {}
    used = [attempt.signals[n] for n in parts] or [signal]
    seconds += sum(float((earlier or {}).get(f"stuck_{n}_seconds", 0.0)) for n in parts)
    return {
        key: signal.score,
        f"{key}_evidence": json.dumps(signal.evidence, ensure_ascii=False, default=str),
        f"{key}_overhead_input_tokens": sum(int(s.evidence.get("input_tokens", 0)) for s in used),
        f"{key}_overhead_output_tokens": sum(int(s.evidence.get("output_tokens", 0)) for s in used),
        f"{key}_seconds": seconds,
    }
