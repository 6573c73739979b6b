"""The stuck detectors by name, and the options they are built with, the same from the command line, a YAML pair
config, the benchmark and Python.

    DETECTORS                                   # {"heuristic": HeuristicDetector, ...}
    make_detector("consistency", consistency_k=5)
    make_detector("combined", components=["validation", "confidence"], combine="mean")

    @register_detector                          # a new detector, known by its ``name`` everywhere
    class MyDetector(StuckDetector): ...

Each detector class takes the options it uses in ``StuckDetector.from_options``; ``DetectorOptions`` validates them
once, for every entry point. An unknown name is a ``DetectorConfigError`` that lists the known ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tool_selection.errors import ToolSelectionError
from tool_selection.named_registry import Registry
from tool_selection.validation import validation_problems

__all__ = [
    "DEFAULT_COMPONENTS",
    "DETECTORS",
    "DetectorConfigError",
    "DetectorOptions",
    "SampleCount",
    "Temperature",
    "check_detector_names",
    "detector_class",
    "detector_names",
    "make_detector",
    "register_detector",
]

DEFAULT_COMPONENTS = ("heuristic", "validation", "confidence")
MIN_SAMPLES = 2  # agreement needs two samples
MAX_SAMPLES = 20
MAX_TEMPERATURE = 2.0
BUILT_IN_DETECTORS = ("heuristic", "validation", "confidence", "confidence_min", "consistency", "combined", "learned")
"""The built-in detectors, in the order the benchmark reports them (their modules register them when loaded)."""


class DetectorConfigError(ToolSelectionError, ValueError):
    """An unknown detector name, or bad detector options; the message names the known detectors or each bad field."""


DETECTORS: Registry[type] = Registry(
    "stuck detector", group="tool_selection.stuck_detectors", check="tool_selection.stuck.base:check_detector_class",
    error=DetectorConfigError, conflict_error=DetectorConfigError, declared=BUILT_IN_DETECTORS,
    builtins=["tool_selection.stuck.heuristic", "tool_selection.stuck.detectors", "tool_selection.stuck.logprobs",
              "tool_selection.stuck.learned"])
"""The stuck detectors by name: the built-in ones, those registered with ``register_detector``, and those of the
``tool_selection.stuck_detectors`` entry-point group."""

register_detector = DETECTORS.register


def detector_names(*, composite: bool = True, fitted: bool = True) -> list[str]:
    """The registered names (the built-in ones in the benchmark's order); without the composite ones
    (``combined``) when ``composite=False``, without those built from a fitted file (``learned``) when
    ``fitted=False``."""
    return [name for name, cls in DETECTORS.items()
            if (composite or not cls.composite) and (fitted or not cls.needs_model_file)]


def detector_class(name: str) -> type:
    """The detector class (a ``StuckDetector``) registered as ``name``; an unknown name is an error listing the
    known ones."""
    return DETECTORS.get(name)


def check_detector_names(names: Iterable[str]) -> list[str]:
    """``names`` stripped, without blanks or repeats, in their order; every unknown one named in one error."""
    return DETECTORS.check_names(names)


SampleCount = Annotated[int, Field(ge=MIN_SAMPLES, le=MAX_SAMPLES,
                                   description="Decisions sampled per case by the consistency detector.")]
Temperature = Annotated[float, Field(gt=0.0, le=MAX_TEMPERATURE,
                                     description="Sampling temperature of consistency samples (and of retries).")]


class DetectorOptions(BaseModel):
    """What detectors are built with. Each detector takes the options it uses (``StuckDetector.from_options``):
    ``consistency`` its samples and temperature, ``combined`` its components, combination and weights,
    ``heuristic`` the keyword arguments of ``HeuristicDetector``, ``learned`` its ``router``."""

    model_config = ConfigDict(extra="forbid")

    consistency_k: SampleCount = 3
    temperature: Temperature = 0.7
    combine: Literal["max", "mean"] = Field(default="max", validation_alias=AliasChoices("combine", "mode"),
                                            description="How combined joins its components' scores (or: mode).")
    components: list[str] = Field(default_factory=lambda: list(DEFAULT_COMPONENTS))
    weights: list[float] | None = None
    heuristic: dict[str, Any] = Field(default_factory=dict)
    router: str | None = Field(default=None, description="The learned detector's router: a router file, or the model "
                               "a router ships for (qwen2.5-coder-0.5b).")

    @field_validator("components")
    @classmethod
    def _known_components(cls, value: list[str]) -> list[str]:
        allowed = detector_names(composite=False, fitted=False)
        bad = [c for c in value if c not in allowed]
        if bad or not value:
            unknown = f"Unknown combined component(s) {bad}: " if bad else ""
            raise ValueError(f"{unknown}components must be a non-empty list of {', '.join(allowed)}; got {value}")
        return value

    @field_validator("heuristic")
    @classmethod
    def _heuristic_arguments(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            detector_class("heuristic")(**value)
        except (TypeError, ValueError) as error:
            raise ValueError(f"bad heuristic options {value}: {error}") from None
        return value

    @model_validator(mode="after")
    def _one_weight_per_component(self) -> DetectorOptions:
        if self.weights is not None and (len(self.weights) != len(self.components) or min(self.weights) < 0):
            raise ValueError(f"weights needs one non-negative number per component ({len(self.components)}), "
                             f"got {self.weights}")
        return self


def make_detector(name: str, options: DetectorOptions | None = None, **fields: Any) -> Any:
    """The detector registered as ``name``, built from ``options`` or from ``fields`` (``DetectorOptions`` fields,
    e.g. ``consistency_k=5`` or ``components=[...], mode="mean"``); bad ones raise ``DetectorConfigError``."""
    cls = detector_class(name)
    if options is not None and fields:
        raise TypeError("make_detector takes DetectorOptions or keyword options, not both")
    if options is None:
        try:
            options = DetectorOptions(**fields)
        except ValidationError as error:
            problems = validation_problems(error)
            raise DetectorConfigError(f"Bad options for stuck detector {name!r}: {problems}") from None
    return cls.from_options(options)
