"""When a small model counts as stuck and what a larger model does then: one policy for a single decision
(``ModelCollaborationProtocol``) and for the steps of a tool-calling loop (``AgentLoop``, ``Speaker``).

    EscalationPolicy(detector="confidence", threshold=0.6)             # one decision, a pair of models
    EscalationPolicy(secondary_lm=large, strategy="guide", threshold=0.7)  # the loop's stuck steps
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from tool_selection.errors import ToolSelectionError

if TYPE_CHECKING:
    import dspy

__all__ = [
    "COLLABORATION_STRATEGIES",
    "DEFAULT_ESCALATION_THRESHOLD",
    "CollaborationConfigError",
    "CollaborationStrategy",
    "EscalationPolicy",
    "check_threshold",
]

CollaborationStrategy = Literal["delegate", "guide"]
"""What a stuck primary's request escalates to: ``delegate`` (the secondary decides) or ``guide`` (the secondary
writes guidance and the primary decides again)."""
COLLABORATION_STRATEGIES: tuple[str, ...] = get_args(CollaborationStrategy)
DEFAULT_ESCALATION_THRESHOLD = 0.5
"""The stuck score at or above which a decision escalates, wherever no threshold is given."""


class CollaborationConfigError(ToolSelectionError, ValueError):
    """A collaboration config is invalid; the message names the field and the fix."""


def check_threshold(value: float) -> float:
    """A stuck threshold: within [0, 1], as detector scores are."""
    if not 0.0 <= value <= 1.0:
        raise CollaborationConfigError(f"threshold must be within [0, 1] (detector scores are), got {value}")
    return value


@dataclass(frozen=True)
class EscalationPolicy:
    """When a primary's decision counts as stuck and what happens then. ``detector`` scores each decision (a
    registered name or a ``StuckDetector``; for a loop a ``LoopStuckDetector``; None: ``combined`` for one decision,
    a ``LoopStuckDetector`` for a loop that has a ``secondary_lm``). At or above ``threshold`` (within [0, 1], or
    -inf/inf for always/never) the request escalates with ``strategy``: ``delegate`` (the secondary decides) or
    ``guide`` (the secondary writes guidance the primary decides with).

    One decision (``ModelCollaborationProtocol``): the primary first tries again, sampled at ``temperature``, up
    to ``max_retries`` times. A loop (``AgentLoop``): ``secondary_lm`` takes or guides a stuck step, at most
    ``max_escalations`` times per turn; without it nothing escalates."""

    detector: Any = None  # str | StuckDetector | LoopStuckDetector | None
    threshold: float = DEFAULT_ESCALATION_THRESHOLD
    strategy: CollaborationStrategy = "delegate"
    max_retries: int = 0
    temperature: float = 0.7
    secondary_lm: dspy.BaseLM | None = None
    max_escalations: int = 2

    def __post_init__(self) -> None:
        if self.strategy not in COLLABORATION_STRATEGIES:
            raise CollaborationConfigError(f"escalation strategy must be 'delegate' or 'guide', got {self.strategy!r}.")
        if math.isnan(self.threshold):
            raise CollaborationConfigError("threshold (--threshold) is NaN, which no stuck score reaches; give a "
                                           "number.")
        if not math.isinf(self.threshold):
            check_threshold(self.threshold)
        if self.max_retries < 0:
            raise CollaborationConfigError(f"max_retries must be 0 or more, got {self.max_retries}")
