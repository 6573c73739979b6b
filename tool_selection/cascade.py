"""A live cascade: the selector's model decides, a router reads that decision's relevance signals, and where it
judges the decision likely wrong a larger model's selector decides instead.

    spec = SelectorSpec(cascade="auto")          # the router shipped for the model names the larger one
    selector = MultiToolSelector.from_spec(spec, model="local:qwen2.5-coder-0.5b")
    selector(request="...", tools=registry).row_extras["cascade_decided_by"]     # "primary" or "secondary"

The router (``tool_selection.stuck.learned.RouterModel``) reads only what the relevance stage records (its signals,
and the stage's own verdict), so the primary's decision costs nothing more; an escalated request costs the
secondary's decision on top. Each row records who decided, the router's probability and each model's seconds and
tokens (``cascade_*`` columns); the secondary's own relevance columns are kept under ``secondary_``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dspy
from dspy.utils.usage_tracker import track_usage

from tool_selection.stuck.capture import usage_totals
from tool_selection.stuck.learned import RouterModel, router_inputs

__all__ = ["CASCADE_PREFIX", "Cascade"]

CASCADE_PREFIX = "cascade_"
SECONDARY_PREFIX = "secondary_"


@dataclass(frozen=True)
class Cascade:
    """What escalates a selector's decisions: the ``router``, and the secondary model's selector (``decide``: a
    callable ``(request, tools) -> prediction``, a ``MultiToolSelector``) with its LM."""

    router: RouterModel
    decide: Callable[..., Any]
    lm: dspy.BaseLM

    def describe(self) -> str:
        return (f"cascade to {self.router.secondary} (router {self.router.fingerprint} at P(wrong) >= "
                f"{self.router.threshold:.3f})")

    def after(self, prediction: dspy.Prediction, request: str, tools: Any, primary_seconds: float,
              **options: Any) -> dspy.Prediction:
        """The primary's ``prediction``, or the secondary's where the router escalates; ``row_extras`` gain the
        cascade's columns either way. ``options``: what the secondary is asked with (conversation, tool_choice)."""
        extras = dict(getattr(prediction, "row_extras", None) or {})
        wrong = self.router.probability(router_inputs(extras))
        escalate = wrong >= self.router.threshold
        columns: dict[str, Any] = {
            "wrong_p": wrong, "escalated": float(escalate), "decided_by": "secondary" if escalate else "primary",
            "primary_seconds": primary_seconds, "secondary_seconds": 0.0, "secondary_input_tokens": 0.0,
            "secondary_output_tokens": 0.0,
            "primary_calls": json.dumps([call.tool_name for call in prediction.decision.tool_calls]),
        }
        if escalate:
            start = time.perf_counter()
            with track_usage() as tracker, dspy.context(lm=self.lm):
                prediction = self.decide(request=request, tools=tools, **options)
            columns["secondary_seconds"] = time.perf_counter() - start
            columns["secondary_input_tokens"], columns["secondary_output_tokens"] = map(float, usage_totals(tracker))
            extras.update({SECONDARY_PREFIX + key: value
                           for key, value in (getattr(prediction, "row_extras", None) or {}).items()})
        prediction.row_extras = {**extras, **{CASCADE_PREFIX + key: value for key, value in columns.items()}}
        return prediction
