"""The detectors that need no text analysis: ``validation`` (the decision's own problems), ``consistency``
(agreement of sampled decisions) and ``combined`` (other detectors' scores, combined)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar, Literal

from tool_selection.decision import MultiToolDecision
from tool_selection.stuck.base import Attempt, DetectorUnavailable, StuckDetector, StuckSignal
from tool_selection.stuck.registry import (
    MAX_TEMPERATURE,
    MIN_SAMPLES,
    DetectorOptions,
    make_detector,
    register_detector,
)

__all__ = ["CombinedDetector", "ConsistencyDetector", "ValidationDetector", "decision_key"]


@register_detector
class ValidationDetector(StuckDetector):
    """1 when the answer did not parse, names an unknown tool or has invalid arguments; else 0."""

    name = "validation"

    def detect(self, attempt: Attempt) -> StuckSignal:
        decision = attempt.decision
        reasons = ([f"parse_error: {decision.parse_error}"] if decision.parse_error is not None else [])
        reasons += [f"{p.kind}: {p.detail}" for p in decision.problems]
        return self._signal(1.0 if reasons else 0.0, problems=reasons)


@register_detector
class ConsistencyDetector(StuckDetector):
    """``1 - (samples agreeing with the modal set of tool names) / k`` over k decisions drawn at ``temperature``.
    An unparsed sample counts as its own answer. The samples' tokens are in the evidence (they cost calls)."""

    name = "consistency"
    MIN_SAMPLES: ClassVar[int] = MIN_SAMPLES
    MAX_TEMPERATURE: ClassVar[float] = MAX_TEMPERATURE

    def __init__(self, *, k: int = 3, temperature: float = 0.7):
        if k < self.MIN_SAMPLES:
            raise ValueError(f"consistency needs k >= {self.MIN_SAMPLES} samples, got {k}")
        if not 0 < temperature <= self.MAX_TEMPERATURE:
            raise ValueError(f"consistency needs a sampling temperature in (0, {self.MAX_TEMPERATURE:g}], "
                             f"got {temperature}")
        self.k, self.temperature = k, temperature

    @classmethod
    def from_options(cls, options: DetectorOptions) -> ConsistencyDetector:
        return cls(k=options.consistency_k, temperature=options.temperature)

    def detect(self, attempt: Attempt) -> StuckSignal:
        if attempt.sampler is None:
            raise DetectorUnavailable("The consistency detector needs to sample decisions: build the attempt with a "
                                      "sampler (see make_sampler) so it can call the model again.")
        samples = attempt.sampler(self.k, self.temperature)
        keys = [decision_key(d) for d in samples.decisions]
        (modal, count), = Counter(keys).most_common(1)
        return self._signal(1 - count / len(keys), samples=[list(k) for k in keys], modal=list(modal),
                            agrees_with_decision=decision_key(attempt.decision) == modal,
                            input_tokens=samples.input_tokens, output_tokens=samples.output_tokens)


def decision_key(decision: MultiToolDecision) -> tuple[str, ...]:
    """The sorted tool names of a decision (``()`` for an abstention, ``("<unparsed>",)`` for a parse error)."""
    return ("<unparsed>",) if decision.parse_error is not None else tuple(sorted(decision.tool_names))


@register_detector
class CombinedDetector(StuckDetector):
    """The maximum (``mode="max"``) or weighted mean (``mode="mean"``) of its components' scores. Components
    that are unavailable for an attempt (e.g. no log-probabilities) are left out and named in the evidence."""

    name = "combined"
    composite = True

    @classmethod
    def from_options(cls, options: DetectorOptions) -> CombinedDetector:
        return cls([make_detector(c, options) for c in options.components], mode=options.combine,
                   weights=options.weights)

    def __init__(self, components: Sequence[StuckDetector], *, mode: Literal["max", "mean"] = "max",
                 weights: Sequence[float] | None = None):
        if not components:
            raise ValueError("a combined detector needs at least one component")
        if mode not in ("max", "mean"):
            raise ValueError(f"combine mode must be 'max' or 'mean', got {mode!r}")
        if weights is not None and (len(weights) != len(components) or any(w < 0 for w in weights)):
            raise ValueError(f"give one non-negative weight per component ({len(components)}), got {list(weights)}")
        self.components, self.mode = list(components), mode
        self.weights = list(weights) if weights is not None else [1.0] * len(self.components)

    @property
    def needs_logprobs(self) -> bool:  # type: ignore[override]
        return any(c.needs_logprobs for c in self.components)

    def detect(self, attempt: Attempt) -> StuckSignal:
        scores, weights, unavailable = {}, {}, {}
        for component, weight in zip(self.components, self.weights):
            try:
                signal = attempt.signals.get(component.name) or component(attempt)
            except DetectorUnavailable as error:
                unavailable[component.name] = str(error)
                continue
            scores[component.name], weights[component.name] = signal.score, weight
        if not scores:
            raise DetectorUnavailable(f"No component of the combined detector could score this attempt: {unavailable}")
        return self._signal(self.combine(scores, weights), mode=self.mode, components=scores, unavailable=unavailable)

    def combine(self, scores: dict[str, float], weights: dict[str, float] | None = None) -> float:
        if self.mode == "max":
            return max(scores.values())
        weights = weights or dict(zip((c.name for c in self.components), self.weights))
        total = sum(weights.get(n, 1.0) for n in scores)
        return sum(weights.get(n, 1.0) * s for n, s in scores.items()) / total if total else max(scores.values())
