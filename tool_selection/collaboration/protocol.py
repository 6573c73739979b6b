"""The collaboration protocol: a small primary model decides; when a stuck detector fires, a larger secondary helps.

    policy = EscalationPolicy(detector="confidence", threshold=0.6, strategy="delegate")
    protocol = ModelCollaborationProtocol("local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b",
                                          escalation=policy)
    prediction = protocol(request="Weather in Oslo?", tools=registry)
    prediction.decision, prediction.collaboration.path      # "primary", "secondary" or "guided"

The primary decides; the policy's detector scores the decision (``tool_selection.stuck``). A score at or above
the threshold is "stuck": the primary tries again (sampled, up to ``max_retries`` times), then the request
escalates: ``delegate`` lets the secondary decide; ``guide`` has the secondary write guidance (``WriteGuidance``)
that the primary decides with. Every decision records its path, both models' token usage and their cost from the
model catalog.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, Literal

import dspy
from dspy.utils.exceptions import AdapterParseError
from dspy.utils.usage_tracker import track_usage
from pydantic import BaseModel, Field

from tool_selection.collaboration.config import CollaborationConfig, PairConfig
from tool_selection.collaboration.models import CostFn, LMOptions, catalog_cost, check_cost, model_name, resolve_lm
from tool_selection.decision import MultiToolDecision
from tool_selection.errors import ToolSelectionError
from tool_selection.escalation import CollaborationStrategy, EscalationPolicy
from tool_selection.registry import ToolRegistry
from tool_selection.relevance.stage import recorded_signals
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter, render_tools
from tool_selection.stuck import (
    Attempt,
    StuckSignal,
    capture_generation,
    make_detector,
    make_sampler,
    usage_totals,
)
from tool_selection.toolset import ToolSet

__all__ = [
    "CollaborationRecord",
    "ModelCollaborationProtocol",
    "RoleUsage",
    "WriteGuidance",
    "build_protocols",
    "guided_request",
]

MAX_GUIDANCE_CHARS = 800
RETRY_ROLLOUT_BASE = 100  # retries use rollout ids 101, 102, ...; consistency samples use 1..k


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
    strategy: CollaborationStrategy
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


class ModelCollaborationProtocol(dspy.Module):
    """A (primary, secondary) pair behind one selector interface: ``forward(request, tools)`` returns a prediction
    with ``decision``, ``collaboration`` (a ``CollaborationRecord``) and ``row_extras`` for the harness.

    ``escalation``: when a decision is stuck and what then (``EscalationPolicy``). ``selector``: how both models
    are asked (default ``MultiToolSelector()``). ``cost_fn``: the price of a call (default: the model catalog).
    ``lm_options``: how models given as specs become LMs (``LMOptions``)."""

    def __init__(self, primary: str | dspy.BaseLM, secondary: str | dspy.BaseLM, *,
                 escalation: EscalationPolicy | None = None, selector: MultiToolSelector | None = None,
                 adapter: dspy.Adapter | None = None, cost_fn: CostFn | None = None,
                 lm_options: LMOptions | None = None):
        super().__init__()
        policy = escalation or EscalationPolicy()
        detector = "combined" if policy.detector is None else policy.detector  # the policy's default for one decision
        self.detector = (make_detector(detector, temperature=policy.temperature) if isinstance(detector, str)
                         else detector)
        self.threshold, self.strategy = policy.threshold, policy.strategy
        self.max_retries, self.temperature = policy.max_retries, policy.temperature
        self.primary_name, self.secondary_name = model_name(primary), model_name(secondary)
        self.cost_fn = cost_fn or catalog_cost
        for name in (self.primary_name, self.secondary_name):
            check_cost(self.cost_fn, name)
        options = asdict(lm_options or LMOptions())
        self.primary_lm = resolve_lm(primary, logprobs=self.detector.needs_logprobs, **options)
        self.secondary_lm = resolve_lm(secondary, logprobs=False, **options)
        self.selector = selector or MultiToolSelector()
        self.guide = dspy.Predict(WriteGuidance)
        self.adapter = adapter

    @classmethod
    def from_config(cls, pair: PairConfig, **kwargs: Any) -> ModelCollaborationProtocol:
        kwargs.setdefault("selector", MultiToolSelector(strategy=pair.selection_strategy))
        return cls(pair.primary, pair.secondary, escalation=pair.escalation_policy(), **kwargs)

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
                    prediction = self.selector(request=request, tools=registry)
                decision = prediction.decision
                attempt = Attempt(request=request, decision=decision, tools=registry, generation=captured.generation,
                                  sampler=make_sampler(self._decide, request, registry, lm),
                                  features=recorded_signals(getattr(prediction, "row_extras", None)))
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
