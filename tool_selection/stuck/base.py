"""What a stuck detector looks at (``Attempt``), what it returns (``StuckSignal``), and the detector base class."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from tool_selection.decision import MultiToolDecision
from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.stuck.registry import DetectorOptions

__all__ = ["Attempt", "DetectorUnavailable", "Generation", "Samples", "Sampler", "StuckDetector", "StuckSignal",
           "check_detector_class"]


class DetectorUnavailable(ToolSelectionError):
    """A detector lacks what it measures (no token log-probabilities, no way to sample); not a model error."""


class StuckSignal(BaseModel):
    """One detector's verdict on one decision."""

    detector: str
    score: float = Field(ge=0.0, le=1.0, description="Higher means more likely stuck.")
    evidence: dict[str, Any] = Field(default_factory=dict)


@dataclass
class Generation:
    """The text an LM generated for a decision and, when it returned them, its tokens with log-probabilities."""

    text: str
    tokens: list[tuple[str, float, bytes | None]] = field(default_factory=list)

    @classmethod
    def from_output(cls, output: Any) -> Generation:
        """From one DSPy LM output: a string, or a dict with ``text`` and optionally ``logprobs``."""
        if not isinstance(output, dict):
            return cls(text=str(output or ""))
        tokens = []
        for entry in _field(output.get("logprobs"), "content") or []:
            raw = _field(entry, "bytes")
            tokens.append((str(_field(entry, "token") or ""), float(_field(entry, "logprob") or 0.0),
                           bytes(raw) if raw is not None else None))
        return cls(text=str(output.get("text") or ""), tokens=tokens)

    @property
    def has_logprobs(self) -> bool:
        return bool(self.tokens)


def _field(obj: Any, name: str) -> Any:
    """A field of a dict or of an SDK object (LiteLLM's logprobs are objects, DSPy's native ones dicts)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


@dataclass
class Samples:
    """Decisions drawn for the consistency detector, and the tokens they cost."""

    decisions: list[MultiToolDecision]
    input_tokens: int = 0
    output_tokens: int = 0


Sampler = Callable[[int, float], Samples]


@dataclass
class Attempt:
    """What the detectors look at: one decision for one request, and how to draw more like it."""

    request: str
    decision: MultiToolDecision
    tools: ToolRegistry | None = None
    generation: Generation | None = None
    sampler: Sampler | None = None
    signals: dict[str, StuckSignal] = field(default_factory=dict)  # filled as detectors run; reused by combined
    features: dict[str, float] = field(default_factory=dict)  # the selection's relevance signals, by name


class StuckDetector(ABC):
    """Scores an ``Attempt``: 0 = clearly fine, 1 = clearly stuck.

    A subclass sets ``name`` (its registry name, see ``register_detector``) and implements ``detect``; it builds
    itself from the shared ``DetectorOptions`` in ``from_options`` when it takes any of them. ``composite``
    detectors combine others' scores and cannot be components themselves; ``needs_model_file`` ones are built from
    a fitted file (a benchmark's default detectors leave them out)."""

    name: ClassVar[str]
    needs_logprobs: ClassVar[bool] = False
    composite: ClassVar[bool] = False
    needs_model_file: ClassVar[bool] = False  # built from fitted data (``router``), not from defaults alone

    @classmethod
    def from_options(cls, options: DetectorOptions) -> StuckDetector:
        """The detector configured by ``options`` (the CLI's, a YAML pair's, the benchmark's); by default none."""
        return cls()

    def __call__(self, attempt: Attempt) -> StuckSignal:
        signal = self.detect(attempt)
        attempt.signals[self.name] = signal
        return signal

    @abstractmethod
    def detect(self, attempt: Attempt) -> StuckSignal: ...

    def _signal(self, score: float, **evidence: Any) -> StuckSignal:
        return StuckSignal(detector=self.name, score=min(1.0, max(0.0, float(score))), evidence=evidence)


def check_detector_class(cls: Any) -> None:
    """``TypeError`` unless ``cls`` can be registered as a stuck detector (``registry.DETECTORS`` calls it)."""
    if not (isinstance(cls, type) and issubclass(cls, StuckDetector)):
        raise TypeError(f"register_detector takes a StuckDetector subclass, got {cls!r}")
    if not isinstance(getattr(cls, "name", None), str) or not cls.name:
        raise TypeError(f"{cls.__qualname__} needs a class attribute name to be registered as a stuck detector")
