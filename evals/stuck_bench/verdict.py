"""Whether a cascade pays, in measured seconds: the cascade at one threshold against the secondary alone on the same
cases (paired), and the escalation rate past which no detector can make it pay.

A cascade pays when its accuracy is not significantly below the secondary's (paired bootstrap interval and
McNemar's exact p) at fewer seconds per case. It spends the primary's seconds and the detector's on every case and
the secondary's on each escalated one, so it can only pay below the *break-even escalation*
``(secondary - primary - detector) / secondary`` (seconds per case). A perfect detector must escalate at least the
accuracy gap (``oracle_escalation``) to match the secondary: where that exceeds the break-even escalation, no
detector can make the cascade pay, and the verdict says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evals.stats import mcnemar_exact, paired_bootstrap_ci
from evals.stuck_bench.routing import oracle_escalation

__all__ = ["ALPHA", "Comparison", "Verdict", "break_even_escalation", "cascade_cases", "compare_to_secondary", "pays",
           "verdict"]

ALPHA = 0.05
SECONDS_COLUMNS = ("primary_seconds", "secondary_seconds")


@dataclass(frozen=True)
class Comparison:
    """The cascade against the secondary alone on the same cases (cascade - secondary)."""

    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    cascade_only: int
    secondary_only: int

    @property
    def significantly_below(self) -> bool:
        return self.ci_high < 0 and self.p_value < ALPHA

    def points(self) -> str:
        """The difference and its interval in points, e.g. ``-2.9 [-5.3, -1.0]``."""
        return f"{100 * self.difference:+.1f} [{100 * self.ci_low:+.1f}, {100 * self.ci_high:+.1f}]"


def compare_to_secondary(cascade_correct: Sequence[float], secondary_correct: Sequence[float],
                         seed: int = 0) -> Comparison:
    """Paired bootstrap 95% interval of the mean difference and McNemar's exact p."""
    c, s = np.asarray(cascade_correct, dtype=float), np.asarray(secondary_correct, dtype=float)
    low, high = paired_bootstrap_ci(c - s, seed=seed)
    p_value, cascade_only, secondary_only = mcnemar_exact(c, s)
    return Comparison(float((c - s).mean()), low, high, p_value, cascade_only, secondary_only)


def pays(comparison: Comparison, cascade_seconds: float, secondary_seconds: float) -> bool:
    """The cascade pays when its accuracy is not significantly below the secondary's (paired: p >= 0.05 or the
    interval holds 0) at fewer seconds per case."""
    return not comparison.significantly_below and cascade_seconds < secondary_seconds


def break_even_escalation(primary_seconds: float, detector_seconds: float, secondary_seconds: float) -> float:
    """The escalation rate at which the cascade spends as many seconds per case as the secondary alone (negative
    when the primary and the detector alone already spend more); NaN without the secondary's seconds."""
    if not secondary_seconds > 0:
        return math.nan
    return (secondary_seconds - primary_seconds - detector_seconds) / secondary_seconds


@dataclass(frozen=True)
class Verdict:
    """The cascade at one threshold on one split's cases, against the secondary alone."""

    detector: str
    threshold: float
    cases: int
    escalation_rate: float
    accuracy: float
    primary_accuracy: float
    secondary_accuracy: float
    seconds: float            # the cascade's seconds per case: primary + detector + secondary where escalated
    primary_seconds: float    # the primary's decision alone, without the detector
    detector_seconds: float
    secondary_seconds: float
    comparison: Comparison
    oracle_escalation: float  # the least escalation at which a perfect detector matches the secondary

    @property
    def measured(self) -> bool:
        """Whether the cases carry seconds (rows of ``toolsel eval``; cached answers carry almost none)."""
        return self.secondary_seconds > 0 and not math.isnan(self.seconds)

    @property
    def seconds_vs_secondary(self) -> float:
        return self.seconds / self.secondary_seconds if self.measured else math.nan

    @property
    def break_even(self) -> float:
        return break_even_escalation(self.primary_seconds, self.detector_seconds, self.secondary_seconds)

    @property
    def pays(self) -> bool:
        return self.measured and pays(self.comparison, self.seconds, self.secondary_seconds)

    @property
    def out_of_reach(self) -> bool:
        """No detector can make it pay: matching the secondary needs more escalation than the break-even point."""
        return self.measured and self.oracle_escalation > max(self.break_even, 0.0)

    def line(self) -> str:
        """One sentence: does the cascade pay on these cases, and could any detector make it?"""
        c = self.comparison
        below = "significantly below" if c.significantly_below else "not significantly below"
        head = "pays" if self.pays else "does not pay" if self.measured else "cannot be judged (no seconds)"
        text = (f"{self.detector}: {head} - {100 * self.accuracy:.1f}% against the secondary's "
                f"{100 * self.secondary_accuracy:.1f}% ({below}: {c.points()} points, McNemar p {c.p_value:.3g}), "
                f"escalating {100 * self.escalation_rate:.1f}% of {self.cases} cases")
        if not self.measured:
            return text + "."
        text += (f", at {self.seconds:.2f} s per case against {self.secondary_seconds:.2f} "
                 f"({self.seconds_vs_secondary:.2f}x).")
        if self.break_even <= 0:
            spent = self.primary_seconds + self.detector_seconds
            return text + (f" The primary and the detector alone spend {spent:.2f} s per case, no less than the "
                           "secondary: no cascade of this pair can pay.")
        reach = (f" Even a perfect detector must escalate {100 * self.oracle_escalation:.1f}% to match the "
                 "secondary, more than that: no detector can make it pay" if self.out_of_reach
                 else f" A perfect detector would match the secondary escalating {100 * self.oracle_escalation:.1f}%")
        return text + (f" The cascade is faster than the secondary only below {100 * self.break_even:.1f}% escalation."
                       f"{reach}.")


def cascade_cases(table: pd.DataFrame, escalated: np.ndarray,
                  detector_seconds: pd.Series | np.ndarray) -> tuple[np.ndarray, pd.Series]:
    """Per case of ``table`` (``primary_correct``, ``secondary_correct``, ``primary_seconds``,
    ``secondary_seconds``): right or wrong when the ``escalated`` cases take the secondary's answer, and the seconds
    spent (primary, detector, and secondary where escalated; a missing column of seconds reads NaN)."""
    primary, secondary = (table[c].to_numpy(dtype=float) for c in ("primary_correct", "secondary_correct"))
    seconds = _seconds(table)
    return (np.where(escalated, secondary, primary),
            seconds["primary_seconds"] + detector_seconds + escalated * seconds["secondary_seconds"])


def _seconds(table: pd.DataFrame) -> dict[str, pd.Series]:
    return {c: table[c].astype(float) if c in table else pd.Series(math.nan, index=table.index)
            for c in SECONDS_COLUMNS}


def _mean(values: pd.Series) -> float:
    return float(values.mean()) if len(values) else math.nan


def verdict(table: pd.DataFrame, detector: str, score: str, threshold: float, *,
            overhead_seconds: str | None = None, seed: int = 0) -> Verdict:
    """The ``Verdict`` of escalating the cases of ``table`` (one row per case: ``primary_correct``,
    ``secondary_correct``, ``primary_seconds``, ``secondary_seconds``) whose ``score`` is at least ``threshold``
    (a missing score counts as stuck); ``overhead_seconds`` names the detector's own seconds per case."""
    escalated = table[score].fillna(1.0).to_numpy(dtype=float) >= threshold
    primary, secondary = (table[c].to_numpy(dtype=float) for c in ("primary_correct", "secondary_correct"))
    detector_seconds = (table[overhead_seconds].fillna(0.0).astype(float) if overhead_seconds in table
                        else pd.Series(0.0, index=table.index))
    correct, per_case = cascade_cases(table, escalated, detector_seconds)
    seconds = _seconds(table)
    return Verdict(
        detector=detector, threshold=float(threshold), cases=len(table), escalation_rate=float(escalated.mean()),
        accuracy=float(correct.mean()), primary_accuracy=float(primary.mean()),
        secondary_accuracy=float(secondary.mean()), seconds=_mean(per_case),
        primary_seconds=_mean(seconds["primary_seconds"]), detector_seconds=_mean(detector_seconds),
        secondary_seconds=_mean(seconds["secondary_seconds"]),
        comparison=compare_to_secondary(correct, secondary, seed=seed),
        oracle_escalation=oracle_escalation(primary, secondary),
    )
