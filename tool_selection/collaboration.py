"""Model collaboration: a small primary model decides; when a stuck detector fires, a larger secondary helps.

    protocol = ModelCollaborationProtocol("local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b",
                                          detector="confidence", threshold=0.6, strategy="delegate")
    prediction = protocol(request="Weather in Oslo?", tools=registry)
    prediction.decision, prediction.collaboration.path      # "primary", "secondary" or "guided"

The primary decides; the detector scores the decision (``tool_selection.stuck``). A score at or above the
threshold is "stuck": the primary tries again (sampled, up to ``max_retries`` times), then the request escalates:
``delegate`` lets the secondary decide; ``guide`` has the secondary write guidance (``WriteGuidance``) that the
primary decides with. Every decision records its path, both models' token usage and their cost from the model
catalog. Pairs are configured in YAML (``load_collaboration_config``):

    collaboration:
      enabled: true
      pairs:
        - primary: local:qwen2.5-coder-0.5b
          secondary: local:qwen2.5-coder-1.5b
          detector: confidence
          threshold: 0.6
          strategy: delegate
          max_retries: 2
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import dspy
import yaml
from dspy.utils.exceptions import AdapterParseError
from dspy.utils.usage_tracker import track_usage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tool_selection.decision import MultiToolDecision
from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter, render_tools
from tool_selection.stuck import (
    DEFAULT_COMPONENTS,
    DETECTORS,
    Attempt,
    StuckDetector,
    StuckSignal,
    capture_generation,
    make_detector,
    make_sampler,
    usage_totals,
)
from tool_selection.toolset import ToolSet

__all__ = [
    "CollaborationConfig",
    "CollaborationConfigError",
    "CollaborationRecord",
    "ModelCollaborationProtocol",
    "PairConfig",
    "RoleUsage",
    "WriteGuidance",
    "build_protocols",
    "catalog_cost",
    "check_cost",
    "guided_request",
    "load_collaboration_config",
    "model_name",
    "resolve_lm",
    "validate_model_spec",
]

Strategy = Literal["delegate", "guide"]
CostFn = Callable[[str, int, int], float]
MAX_GUIDANCE_CHARS = 800
RETRY_ROLLOUT_BASE = 100  # retries use rollout ids 101, 102, ...; consistency samples use 1..k


class CollaborationConfigError(ToolSelectionError, ValueError):
    """A collaboration config is invalid; the message names the field and the fix."""


# ------------------------------------------------------------------------------------------------ config

_LITELLM_SPEC = re.compile(r"^[A-Za-z0-9][\w.\-:@]*(/[\w.\-:@]+)*$")


def validate_model_spec(spec: str) -> str:
    """``local:NAME`` (an embedded model) or a LiteLLM model string such as ``openai/gpt-4o-mini``."""
    spec = spec.strip()
    if spec.startswith("local:"):
        if not re.fullmatch(r"[\w.\-]+", spec.removeprefix("local:")):
            raise ValueError(f"bad model spec {spec!r}: write local:NAME, e.g. local:qwen2.5-coder-0.5b")
        return spec
    if not _LITELLM_SPEC.match(spec):
        raise ValueError(f"bad model spec {spec!r}: use local:NAME or a LiteLLM model string like openai/gpt-4o-mini")
    return spec


class PairConfig(BaseModel):
    """One (primary, secondary) pair and how the primary's stuck decisions escalate."""

    model_config = ConfigDict(extra="forbid")

    primary: str
    secondary: str
    detector: str = "combined"
    threshold: float = 0.5
    strategy: Strategy = "delegate"
    max_retries: int = Field(default=0, ge=0, le=10)
    consistency_k: int = Field(default=3, ge=2, le=20)
    temperature: float = Field(default=0.7, gt=0.0, le=2.0, description="Sampling temperature of retries and "
                                                                           "consistency samples.")
    combine: Literal["max", "mean"] = "max"
    components: list[str] = Field(default_factory=lambda: list(DEFAULT_COMPONENTS))
    weights: list[float] | None = None

    @field_validator("primary", "secondary")
    @classmethod
    def _model_spec(cls, value: str) -> str:
        return validate_model_spec(value)

    @field_validator("detector")
    @classmethod
    def _known_detector(cls, value: str) -> str:
        if value not in DETECTORS:
            raise ValueError(f"unknown detector {value!r}; choose one of: {', '.join(DETECTORS)}")
        return value

    @field_validator("threshold")
    @classmethod
    def _unit_interval(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"threshold must be within [0, 1] (detector scores are), got {value}")
        return value

    @field_validator("components")
    @classmethod
    def _known_components(cls, value: list[str]) -> list[str]:
        allowed = [d for d in DETECTORS if d != "combined"]
        bad = [c for c in value if c not in allowed]
        if bad or not value:
            raise ValueError(f"components must be a non-empty list of {', '.join(allowed)}; got {value}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> PairConfig:
        if self.primary == self.secondary:
            raise ValueError(f"primary and secondary are the same model ({self.primary}); pick a larger secondary")
        if self.weights is not None and len(self.weights) != len(self.components):
            raise ValueError(f"weights needs one number per component ({len(self.components)}), got {self.weights}")
        return self

    def build_detector(self) -> StuckDetector:
        return make_detector(self.detector, consistency_k=self.consistency_k, temperature=self.temperature,
                             components=self.components, mode=self.combine, weights=self.weights)


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
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise CollaborationConfigError(f"{path}: not valid YAML ({error}).") from None
    if not isinstance(data, dict) or "collaboration" not in data:
        raise CollaborationConfigError(f"{where}: expected a top-level 'collaboration' section "
                                       "(collaboration: {enabled: true, pairs: [...]}).")
    try:
        return CollaborationConfig.model_validate(data["collaboration"])
    except ValidationError as error:
        problems = "; ".join(
            f"collaboration.{'.'.join(str(p) for p in e['loc']) or '(section)'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in error.errors(include_url=False)
        )
        raise CollaborationConfigError(f"{where}: {problems}") from None


# ------------------------------------------------------------------------------------------------ costs


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


# ------------------------------------------------------------------------------------------------ protocol


class WriteGuidance(dspy.Signature):
    """A smaller model is stuck choosing tools for a request. Write short, concrete guidance for it: which of the
    available tools fit (by exact name) and where each argument value comes from in the request, or that no tool
    fits. Do not answer the request yourself."""

    tools: str = dspy.InputField(desc="The available tools: name, description and arguments of each.")
    request: str = dspy.InputField(desc="What the user asked for.")
    stuck_attempt: str = dspy.InputField(desc="The smaller model's attempt and why it looks stuck.")
    guidance: str = dspy.OutputField(desc="Two or three sentences of guidance.")


class RoleUsage(BaseModel):
    """One model's share of a decision: invocations (decisions or guidance written), tokens and cost."""

    model: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


class CollaborationRecord(BaseModel):
    """How one decision was reached: the path taken, the detector's signals, usage and cost per model."""

    path: Literal["primary", "secondary", "guided"]
    escalated: bool
    detector: str
    threshold: float
    strategy: Strategy
    tries: int = Field(description="Primary decisions made before the verdict (1 + retries used).")
    signals: list[StuckSignal]
    guidance: str | None = None
    primary: RoleUsage
    secondary: RoleUsage

    @property
    def cost(self) -> float:
        return self.primary.cost + self.secondary.cost

    def row_extras(self) -> dict[str, Any]:
        return {
            "collab_path": self.path, "collab_escalated": float(self.escalated), "collab_tries": self.tries,
            "stuck_score": self.signals[-1].score if self.signals else float("nan"),
            "primary_input_tokens": self.primary.input_tokens, "primary_output_tokens": self.primary.output_tokens,
            "secondary_input_tokens": self.secondary.input_tokens,
            "secondary_output_tokens": self.secondary.output_tokens,
            "cost_primary": self.primary.cost, "cost_secondary": self.secondary.cost, "cost": self.cost,
        }


def model_name(model: str | dspy.BaseLM) -> str:
    """A model spec as given, or an LM object's ``model``."""
    return model if isinstance(model, str) else str(getattr(model, "model", type(model).__name__))


def resolve_lm(model: str | dspy.BaseLM, *, logprobs: bool = False, max_tokens: int = 512, cache: bool = True,
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


class ModelCollaborationProtocol(dspy.Module):
    """A (primary, secondary) pair behind one selector interface: ``forward(request, tools)`` returns a prediction
    with ``decision``, ``collaboration`` (a ``CollaborationRecord``) and ``row_extras`` for the harness."""

    def __init__(self, primary: str | dspy.BaseLM, secondary: str | dspy.BaseLM, *,
                 detector: str | StuckDetector = "combined", threshold: float = 0.5, strategy: Strategy = "delegate",
                 max_retries: int = 0, temperature: float = 0.7, selector: MultiToolSelector | None = None,
                 adapter: dspy.Adapter | None = None, cost_fn: CostFn | None = None, max_tokens: int = 512,
                 cache: bool = True, constrained: bool = True):
        super().__init__()
        if not 0.0 <= threshold <= 1.0:
            raise CollaborationConfigError(f"threshold must be within [0, 1], got {threshold}")
        if strategy not in ("delegate", "guide"):
            raise CollaborationConfigError(f"strategy must be 'delegate' or 'guide', got {strategy!r}")
        if max_retries < 0:
            raise CollaborationConfigError(f"max_retries must be 0 or more, got {max_retries}")
        self.detector = make_detector(detector, temperature=temperature) if isinstance(detector, str) else detector
        self.threshold, self.strategy = threshold, strategy
        self.max_retries, self.temperature = max_retries, temperature
        self.primary_name, self.secondary_name = model_name(primary), model_name(secondary)
        self.cost_fn = cost_fn or catalog_cost
        for name in (self.primary_name, self.secondary_name):
            check_cost(self.cost_fn, name)
        options = {"max_tokens": max_tokens, "cache": cache, "constrained": constrained}
        self.primary_lm = resolve_lm(primary, logprobs=self.detector.needs_logprobs, **options)
        self.secondary_lm = resolve_lm(secondary, logprobs=False, **options)
        self.selector = selector or MultiToolSelector()
        self.guide = dspy.Predict(WriteGuidance)
        self.adapter = adapter

    @classmethod
    def from_config(cls, pair: PairConfig, **kwargs: Any) -> ModelCollaborationProtocol:
        return cls(pair.primary, pair.secondary, detector=pair.build_detector(), threshold=pair.threshold,
                   strategy=pair.strategy, max_retries=pair.max_retries, temperature=pair.temperature, **kwargs)

    def forward(self, request: str, tools: ToolRegistry | ToolSet | None = None) -> dspy.Prediction:
        registry = _registry(tools, self.selector)
        primary, secondary = RoleUsage(model=self.primary_name), RoleUsage(model=self.secondary_name)
        signals: list[StuckSignal] = []
        decision: MultiToolDecision | None = None
        for attempt_index in range(self.max_retries + 1):
            lm = self.primary_lm if attempt_index == 0 else self.primary_lm.copy(
                rollout_id=RETRY_ROLLOUT_BASE + attempt_index, temperature=self.temperature)
            with self._role(primary, lm):
                with capture_generation() as captured:
                    decision = self.selector(request=request, tools=registry).decision
                attempt = Attempt(request=request, decision=decision, tools=registry, generation=captured.generation,
                                  sampler=make_sampler(self._decide, request, registry, lm))
                signals.append(self.detector(attempt))
            if signals[-1].score < self.threshold:
                return self._finish("primary", decision, signals, primary, secondary, None)

        if self.strategy == "delegate":
            with self._role(secondary, self.secondary_lm):
                decision = self.selector(request=request, tools=registry).decision
            return self._finish("secondary", decision, signals, primary, secondary, None)

        with self._role(secondary, self.secondary_lm):
            try:
                guidance = self.guide(tools=render_tools(registry), request=request,
                                      stuck_attempt=_describe(decision, signals[-1])).guidance
            except AdapterParseError as error:  # guidance is prose: use the raw answer rather than fail the case
                guidance = (error.lm_response or "")[:MAX_GUIDANCE_CHARS]
        with self._role(primary, self.primary_lm):
            decision = self.selector(request=guided_request(request, guidance), tools=registry).decision
        return self._finish("guided", decision, signals, primary, secondary, guidance)

    def _decide(self, request: str, tools: ToolRegistry | None) -> dspy.Prediction:
        return self.selector(request=request, tools=tools)

    @contextmanager
    def _role(self, usage: RoleUsage, lm: dspy.BaseLM) -> Iterator[None]:
        """Runs a block as one invocation of a role's model; its tokens (rolled up to any outer tracker too) are
        added to ``usage``."""
        adapter = self.adapter or dspy.settings.adapter or ToolSelectionAdapter()
        with track_usage() as tracker, dspy.context(lm=lm, adapter=adapter):
            yield
        input_tokens, output_tokens = usage_totals(tracker)
        usage.calls += 1
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens

    def _finish(self, path, decision, signals, primary: RoleUsage, secondary: RoleUsage, guidance) -> dspy.Prediction:
        for usage, name in ((primary, self.primary_name), (secondary, self.secondary_name)):
            usage.cost = float(self.cost_fn(name, usage.input_tokens, usage.output_tokens)) if usage.calls else 0.0
        record = CollaborationRecord(path=path, escalated=path != "primary", detector=self.detector.name,
                                     threshold=self.threshold, strategy=self.strategy, tries=len(signals),
                                     signals=signals, guidance=guidance, primary=primary, secondary=secondary)
        return dspy.Prediction(decision=decision, reasoning=decision.reasoning, tool_calls=decision.tool_calls,
                               collaboration=record, row_extras=record.row_extras())


def guided_request(request: str, guidance: str) -> str:
    """The request as the primary sees it after the secondary's guidance."""
    return f"{request}\n\nGuidance from a more capable model: {guidance.strip()}"


def _describe(decision: MultiToolDecision, signal: StuckSignal) -> str:
    if decision.parse_error:
        answer = f"Its answer could not be parsed ({decision.parse_error[:200]})."
    elif decision.tool_calls:
        answer = "It proposed: " + "; ".join(str(c) for c in decision.tool_calls) + "."
    else:
        answer = "It made no tool call."
    problems = " ".join(f"Problem: {p.detail}." for p in decision.problems)
    return (f"Reasoning: {decision.reasoning[:400] or '(none)'}\n{answer} {problems}\n"
            f"Stuck detector {signal.detector} scored it {signal.score:.2f}.").strip()


def _registry(tools: ToolRegistry | ToolSet | None, selector: MultiToolSelector) -> ToolRegistry:
    if isinstance(tools, ToolSet):
        return tools.registry()
    if isinstance(tools, ToolRegistry):
        return tools
    if selector.tools is not None:
        return selector.tools
    raise ToolSelectionError("ModelCollaborationProtocol has no tools: pass tools=... (a ToolSet or ToolRegistry) to "
                             "the call, or give the selector a default catalog.")


def build_protocols(config: CollaborationConfig, **kwargs: Any) -> list[ModelCollaborationProtocol]:
    """One protocol per configured pair (none when collaboration is disabled)."""
    return [ModelCollaborationProtocol.from_config(pair, **kwargs) for pair in config.pairs] if config.enabled else []
