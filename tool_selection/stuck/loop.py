"""The tool-calling loop's stuck detector: scores each step of a turn from what the loop has seen so far."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.registry import ToolRegistry
from tool_selection.stuck.base import Attempt, DetectorUnavailable, StuckDetector
from tool_selection.transcript import Step

__all__ = ["GIVE_UP", "LoopStuckDetector"]

GIVE_UP = re.compile(r"\b(i (can ?not|can't|am unable to|'m unable to)|unable to (help|do|complete)|give up|"
                     r"no (listed |available )?(tool|function)s? (can|could|fits?))\b", re.IGNORECASE)


class LoopStuckDetector:
    """Scores a step in [0, 1] from what the loop sees: a failing call repeated with identical arguments, a
    successful call repeated after its last two runs returned the same result (a call that no longer changes
    anything), a give-up phrase with no call, no successful call for ``patience`` steps, and (optionally) a
    per-decision detector from ``tool_selection.stuck`` (its score is taken as is). The highest applicable signal
    wins."""

    def __init__(self, *, patience: int = 3, decision_detector: StuckDetector | None = None):
        self.patience = patience
        self.decision_detector = decision_detector

    def score(self, steps: Sequence[Step], decision: MultiToolDecision, request: str,
              registry: ToolRegistry) -> tuple[float, list[str]]:
        scores, reasons = [0.0], []
        failed_before = {(c.tool_name, _key(c.arguments)) for s in steps for c in s.calls if not c.ok}
        repeats = [c for c in decision.tool_calls if (c.tool_name, _key(c.arguments)) in failed_before]
        if repeats:
            scores.append(1.0)
            reasons.append(f"repeats a failed call: {repeats[0]}")
        no_ops = [c for c in decision.tool_calls if _returned_the_same_twice(c, steps)]
        if no_ops:
            scores.append(0.8)
            reasons.append(f"repeats a call that returned the same result twice: {no_ops[0]}")
        if not decision.tool_calls and GIVE_UP.search(decision.reasoning or ""):
            scores.append(0.8)
            reasons.append("gives up")
        if decision.parse_error:
            scores.append(0.9)
            reasons.append("unreadable answer")
        recent = steps[-self.patience:]
        if len(recent) == self.patience and not any(c.ok for s in recent for c in s.calls):
            scores.append(0.7)
            reasons.append(f"no successful call in {self.patience} steps")
        if self.decision_detector is not None:
            try:
                signal = self.decision_detector(Attempt(request=request, decision=decision, tools=registry))
            except DetectorUnavailable:
                signal = None
            if signal is not None:
                scores.append(signal.score)
                if signal.score >= 0.5:
                    reasons.append(f"{signal.detector} {signal.score:.2f}")
        return max(scores), reasons


def _key(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, default=str)


def _returned_the_same_twice(call: ToolCall, steps: Sequence[Step]) -> bool:
    """Whether ``call``'s last two successful runs with identical arguments returned the same result: running it
    a third time changes nothing (``move(north)`` twice goes somewhere new each time; ``lockDoors()`` does not)."""
    results = [_key({"result": c.result}) for s in steps for c in s.calls
               if c.ok and c.tool_name == call.tool_name and c.arguments == call.arguments]
    return len(results) >= 2 and results[-1] == results[-2]
