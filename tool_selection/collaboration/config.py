"""Collaboration pairs in YAML: which primary escalates to which secondary, when, and how.

    collaboration:
      enabled: true
      pairs:
        - primary: local:qwen2.5-coder-0.5b
          secondary: local:qwen2.5-coder-1.5b
          detector: confidence
          threshold: 0.6
          strategy: delegate
          max_retries: 2
          selection_strategy: native   # how both models are asked (default: the selector's)

A pair takes the detector options of ``tool_selection.stuck.DetectorOptions`` (``consistency_k``,
``temperature``, ``combine``, ``components``, ``weights``, ``heuristic``) at the same level; model specs are
checked by ``ModelSpec.parse``, detector names by the detector registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tool_selection.escalation import (
    COLLABORATION_STRATEGIES,
    DEFAULT_ESCALATION_THRESHOLD,
    CollaborationConfigError,
    CollaborationStrategy,
    EscalationPolicy,
    check_threshold,
)
from tool_selection.lm.specs import ModelSpec
from tool_selection.strategies import DEFAULT_STRATEGY, parse_strategy
from tool_selection.strict_files import read_yaml
from tool_selection.stuck import DetectorOptions, StuckDetector, detector_class, make_detector
from tool_selection.validation import validation_problems

__all__ = [
    "COLLABORATION_STRATEGIES",
    "CollaborationConfig",
    "CollaborationConfigError",
    "CollaborationStrategy",
    "EscalationPolicy",
    "PairConfig",
    "check_threshold",
    "load_collaboration_config",
]


class PairConfig(DetectorOptions):
    """One (primary, secondary) pair, how the primary's stuck decisions escalate, and the detector's options."""

    model_config = ConfigDict(extra="forbid")

    primary: str
    secondary: str
    detector: str = "combined"
    threshold: float = DEFAULT_ESCALATION_THRESHOLD
    strategy: CollaborationStrategy = "delegate"
    max_retries: int = Field(default=0, ge=0, le=10)
    selection_strategy: str = DEFAULT_STRATEGY

    @field_validator("primary", "secondary")
    @classmethod
    def _model_spec(cls, value: str) -> str:
        return str(ModelSpec.parse(value))

    @field_validator("selection_strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        parse_strategy(value)
        return value

    @field_validator("detector")
    @classmethod
    def _known_detector(cls, value: str) -> str:
        detector_class(value)
        return value

    @field_validator("threshold")
    @classmethod
    def _unit_interval(cls, value: float) -> float:
        return check_threshold(value)

    @model_validator(mode="after")
    def _two_models(self) -> PairConfig:
        if self.primary == self.secondary:
            raise ValueError(f"primary and secondary are the same model ({self.primary}); pick a larger secondary")
        return self

    def build_detector(self) -> StuckDetector:
        return make_detector(self.detector, self)

    def escalation_policy(self) -> EscalationPolicy:
        """The pair's escalation settings for one decision, its detector built."""
        return EscalationPolicy(detector=self.build_detector(), threshold=self.threshold, strategy=self.strategy,
                                max_retries=self.max_retries, temperature=self.temperature)


class CollaborationConfig(BaseModel):
    """The ``collaboration`` section: whether it is on, and its pairs."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    pairs: list[PairConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _pairs_when_enabled(self) -> CollaborationConfig:
        if self.enabled and not self.pairs:
            raise ValueError("collaboration is enabled but lists no pairs; add one under 'pairs' or set enabled: false")
        return self


MAX_CONFIG_BYTES = 100_000
MAX_CONFIG_DEPTH = 32


def load_collaboration_config(source: str | Path | dict[str, Any]) -> CollaborationConfig:
    """A validated config from a YAML file (or its parsed contents): ``collaboration: {enabled, pairs}``."""
    where = "collaboration config"
    if isinstance(source, dict):
        data = source
    else:
        path = Path(source)
        where = str(path)
        if not path.exists():
            raise CollaborationConfigError(f"Collaboration config {path} does not exist.")
        if not path.is_file():
            raise CollaborationConfigError(f"Collaboration config {path} is a directory, not a YAML file.")
        data = read_yaml(path, what="collaboration config", max_bytes=MAX_CONFIG_BYTES, max_depth=MAX_CONFIG_DEPTH,
                         fix="Write it as YAML holding collaboration: {enabled: true, pairs: [...]}.")
    if not isinstance(data, dict) or "collaboration" not in data:
        raise CollaborationConfigError(f"{where}: expected a top-level 'collaboration' section "
                                       "(collaboration: {enabled: true, pairs: [...]}).")
    try:
        return CollaborationConfig.model_validate(data["collaboration"])
    except ValidationError as error:
        raise CollaborationConfigError(f"{where}: {validation_problems(error, 'collaboration.')}") from None
