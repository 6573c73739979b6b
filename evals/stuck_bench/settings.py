"""What a stuck benchmark measures: validated once, whether it comes from the command line or from Python (how the
selectors ask the models is a ``SelectorSpec``, how the run is carried out a ``RunConfig``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evals.stuck_bench.routing import parse_thresholds
from tool_selection.collaboration.config import CollaborationStrategy, check_threshold
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance.logistic import model_file_stem
from tool_selection.stuck import StuckDetector, check_detector_names, detector_class, detector_names, make_detector
from tool_selection.stuck.learned import SAVE_COMMAND, shipped_routers
from tool_selection.stuck.registry import SampleCount, Temperature
from tool_selection.validation import validation_problems

__all__ = ["DEFAULT_THRESHOLDS", "BenchSettings", "BenchSettingsError"]

DEFAULT_THRESHOLDS = "0:1:0.05"


class BenchSettingsError(ToolSelectionError, ValueError):
    """Bad benchmark settings; the message names each bad setting."""


class BenchSettings(BaseModel):
    """The benchmark's own settings (besides the suite, the pairs and their costs; the selection strategy is the
    ``SelectorSpec``'s, the cases, generation limit and cache the ``RunConfig``'s).

    ``detectors``: names, or one comma-separated string (default: every registered detector but those built
    from a fitted file); ``thresholds``: a list within [0, 1], or ``START:STOP:STEP`` / ``a,b,c``
    (``parse_thresholds``); the threshold is chosen on
    ``dev_split`` and reported on ``test_split``. ``consistency_k`` and ``temperature``: the detectors' samples.
    ``router``: the ``learned`` detector's router (a router file, or the model a router ships for; default: the
    one shipped for each primary). ``live_threshold``: also run the collaboration protocol on the test split at that threshold, with ``strategy``
    (``guide``, the one the offline sweep cannot measure, unless told otherwise) and ``live_detector`` (default:
    each pair's recommended one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    detectors: list[str] = Field(default_factory=lambda: detector_names(fitted=False))
    thresholds: list[float] = Field(default_factory=lambda: parse_thresholds(DEFAULT_THRESHOLDS))
    dev_split: str = "dev"
    test_split: str = "test"
    consistency_k: SampleCount = 3
    temperature: Temperature = 0.7
    router: str | None = None
    live_threshold: float | None = None
    strategy: CollaborationStrategy = "guide"
    live_detector: str | None = None

    @classmethod
    def build(cls, settings: BenchSettings | None = None, **fields: Any) -> BenchSettings:
        """``settings`` (default: the defaults) with ``fields`` changed; every bad field named in one error."""
        try:
            return cls.model_validate({**(settings.model_dump() if settings else {}), **fields})
        except ValidationError as error:
            raise BenchSettingsError(f"Bad stuck-benchmark settings: {validation_problems(error)}") from None

    @field_validator("detectors", mode="before")
    @classmethod
    def _known_detectors(cls, value: Any) -> list[str]:
        return check_detector_names(value.split(",") if isinstance(value, str) else value)

    @field_validator("thresholds", mode="before")
    @classmethod
    def _grid(cls, value: Any) -> list[float]:
        try:
            grid = parse_thresholds(value) if isinstance(value, str) else sorted(set(map(float, value)))
        except ToolSelectionError as error:
            raise ValueError(str(error)) from None
        if not grid or any(not 0 <= t <= 1 for t in grid):
            raise ValueError(f"Thresholds must lie within [0, 1]; got {grid}.")
        return grid

    @field_validator("live_threshold")
    @classmethod
    def _unit_interval(cls, value: float | None) -> float | None:
        return None if value is None else check_threshold(value)

    @model_validator(mode="after")
    def _live_detector_is_benchmarked(self) -> BenchSettings:
        if self.live_detector is not None and self.live_detector not in self.detectors:
            raise ValueError(f"The live detector {self.live_detector!r} is not among the benchmarked detectors "
                             f"({', '.join(self.detectors)}).")
        return self

    @property
    def detector_options(self) -> dict[str, Any]:
        """The options every detector is built with (part of each scored run's key)."""
        return {"consistency_k": self.consistency_k, "temperature": self.temperature,
                **({"router": self.router} if self.router else {})}

    def detector(self, name: str, primary: str | None = None) -> StuckDetector:
        """The detector ``name`` for the ``primary`` model's decisions: a learned detector's router is the one
        given (refused when fitted on another model's decisions), else the one shipped for ``primary``."""
        options = self.detector_options
        if detector_class(name).needs_model_file and primary is not None and not self.router:
            if model_file_stem(primary) not in shipped_routers():
                raise BenchSettingsError(f"No router ships for {primary} (routers ship for: "
                                         f"{', '.join(shipped_routers()) or 'none'}): give --router ROUTER_JSON "
                                         f"(fitted on {primary}'s rows: '{SAVE_COMMAND}'), or leave {name} out of "
                                         "--detectors.")
            options = {"router": primary, **options}
        detector = make_detector(name, **options)
        fitted_on = getattr(getattr(detector, "router", None), "primary", None)
        if fitted_on is not None and primary is not None and model_file_stem(fitted_on) != model_file_stem(primary):
            raise BenchSettingsError(f"The {name} detector's router was fitted on the decisions of {fitted_on}, and "
                                     f"the pair's primary is {primary}: give --router a router fitted on {primary}'s "
                                     "rows, or benchmark a pair with that primary.")
        return detector
