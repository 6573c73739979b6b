"""The routing maths of the stuck benchmark, on plain arrays and per-case tables (no models, no files).

At threshold t a case keeps the primary's answer when its detector score is below t and takes the secondary's
otherwise (``delegate``), and costs the primary's call (plus any detector overhead) plus the secondary's call when
escalated. A missing score (the detector could not score the case) counts as stuck.

AUROC of the score for the primary's errors; APGR (RouteLLM's average performance gap recovered: the area under
``(accuracy(x) - primary) / (secondary - primary)`` over escalation rate x in [0, 1]; 0.5 for a random router);
the escalation rate needed to recover 50% and 80% of the gap; and the recommended threshold
(``RECOMMENDATION_CRITERION``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evals.metrics import bootstrap_ci
from tool_selection.errors import ToolSelectionError

__all__ = [
    "RECOMMENDATION_CRITERION",
    "RoutingMetrics",
    "apgr",
    "auroc",
    "cheapest_by",
    "escalation_to_recover",
    "oracle_escalation",
    "parse_thresholds",
    "perfect_router_curve",
    "recommend",
    "routing_curve",
    "routing_metrics",
    "sweep_thresholds",
    "threshold_candidates",
]

RECOMMENDATION_CRITERION = ("the cheapest threshold (in measured seconds per case where the rows carry them, else "
                            "in price) whose accuracy is within 1 point of the secondary's accuracy; if none, the "
                            "one with the best accuracy (chosen on dev among the grid and every distinct dev score, "
                            "reported on test)")
TOLERANCE = 0.01


MAX_THRESHOLDS = 1000  # a finer grid says nothing more (every distinct score is swept anyway) and costs memory


def parse_thresholds(text: str) -> list[float]:
    """``START:STOP:STEP`` (inclusive) or a comma-separated list; every value within [0, 1]."""
    try:
        if ":" in text:
            start, stop, step = (float(p) for p in text.split(":"))
            if step <= 0:
                raise ValueError("the step must be positive")
            if (stop - start) / step > MAX_THRESHOLDS:
                raise ValueError(f"that is over {MAX_THRESHOLDS} thresholds; use a step of at least "
                                 f"{(stop - start) / MAX_THRESHOLDS:g}")
            values = list(np.round(np.arange(start, stop + step / 2, step), 10))
        else:
            values = [float(p) for p in text.split(",") if p.strip()]
    except ValueError as error:
        raise ToolSelectionError(f"Bad thresholds {text!r} ({error}): write START:STOP:STEP such as 0:1:0.05, "
                                 "or a list such as 0.2,0.5,0.8.") from None
    bad = [v for v in values if not 0.0 <= v <= 1.0]
    if not values or bad:
        raise ToolSelectionError(f"Thresholds must lie within [0, 1] (detector scores do); got {bad or 'none'} "
                                 f"from {text!r}.")
    return sorted(set(float(v) for v in values))


def auroc(scores: Sequence[float], errors: Sequence[float]) -> float:
    """Area under the ROC curve of ``scores`` for predicting ``errors`` (1 = the primary was wrong); ties count
    half (Mann-Whitney). NaN when all cases are errors or none is."""
    s, e = np.asarray(scores, dtype=float), np.asarray(errors, dtype=float) > 0.5
    positives, negatives = int(e.sum()), int((~e).sum())
    if positives == 0 or negatives == 0:
        return math.nan
    ranks = pd.Series(s).rank(method="average").to_numpy()
    return float((ranks[e].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def routing_curve(primary_correct: Sequence[float], secondary_correct: Sequence[float], scores: Sequence[float],
                  primary_cost: Sequence[float] | None = None, secondary_cost: Sequence[float] | None = None,
                  overhead_cost: Sequence[float] | None = None) -> pd.DataFrame:
    """Every operating point a threshold can reach: escalating the cases whose score is at least each distinct
    score, from none (escalation rate 0) to all (1). Columns: threshold, escalation_rate, accuracy, cost."""
    p, s, x = (np.asarray(v, dtype=float) for v in (primary_correct, secondary_correct, scores))
    n = len(p)
    pc = np.zeros(n) if primary_cost is None else np.asarray(primary_cost, dtype=float)
    sc = np.zeros(n) if secondary_cost is None else np.asarray(secondary_cost, dtype=float)
    oc = np.zeros(n) if overhead_cost is None else np.asarray(overhead_cost, dtype=float)
    points = [(math.inf, 0.0, float(p.mean()), float((pc + oc).mean()))]
    for t in sorted(set(x.tolist()), reverse=True):
        escalated = x >= t
        points.append((t, float(escalated.mean()), float(np.where(escalated, s, p).mean()),
                       float((pc + oc + escalated * sc).mean())))
    return pd.DataFrame(points, columns=["threshold", "escalation_rate", "accuracy", "cost"])


def _gap(primary_accuracy: float, secondary_accuracy: float) -> float:
    return secondary_accuracy - primary_accuracy


def apgr(curve: pd.DataFrame, primary_accuracy: float, secondary_accuracy: float) -> float:
    """Average performance gap recovered: the area under ``(accuracy - primary) / (secondary - primary)`` over
    escalation rate in [0, 1] (trapezoids between reachable points, i.e. ties broken at random). 0.5 is a random
    router, 1 recovers the whole gap at once; NaN when the secondary is not more accurate than the primary."""
    gap = _gap(primary_accuracy, secondary_accuracy)
    if not gap > 0:
        return math.nan
    points = curve.sort_values(["escalation_rate", "accuracy"])
    pgr = (points["accuracy"].to_numpy() - primary_accuracy) / gap
    return float(np.trapezoid(pgr, points["escalation_rate"].to_numpy()))


def escalation_to_recover(curve: pd.DataFrame, primary_accuracy: float, secondary_accuracy: float,
                          fraction: float) -> float:
    """The smallest reachable escalation rate that recovers ``fraction`` of the accuracy gap (NaN: no gap)."""
    gap = _gap(primary_accuracy, secondary_accuracy)
    if not gap > 0:
        return math.nan
    reached = curve[(curve["accuracy"] - primary_accuracy) / gap >= fraction - 1e-12]
    return float(reached["escalation_rate"].min()) if len(reached) else math.nan


def oracle_escalation(primary_correct: Sequence[float], secondary_correct: Sequence[float]) -> float:
    """The escalation rate at which a perfect detector reaches the secondary's accuracy: each escalated case can
    gain at most one correct answer, so no detector gets there escalating less than the accuracy gap."""
    p, s = np.asarray(primary_correct, dtype=float), np.asarray(secondary_correct, dtype=float)
    return float(max(0.0, s.mean() - p.mean())) if len(p) else math.nan


def perfect_router_curve(primary_correct: Sequence[float], secondary_correct: Sequence[float]
                         ) -> tuple[list[float], list[float]]:
    """(escalation rates, accuracies) of a detector that escalates first the cases only the secondary gets right,
    then those both get equally, last those only the primary gets right: the ceiling of every curve."""
    p, s = np.asarray(primary_correct, dtype=float) > 0.5, np.asarray(secondary_correct, dtype=float) > 0.5
    n = max(len(p), 1)
    gain, loss = float((s & ~p).sum()) / n, float((p & ~s).sum()) / n
    base = float(p.mean()) if len(p) else math.nan
    return [0.0, gain, 1.0 - loss, 1.0], [base, base + gain, base + gain, base + gain - loss]


def _spent(table: pd.DataFrame, role: str, overhead: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per case: the primary's, the secondary's and the detector's ``role`` (cost or seconds); NaN where the
    table has no such column."""
    missing = np.full(len(table), math.nan)
    primary, secondary = (table[f"{who}_{role}"].to_numpy(dtype=float) if f"{who}_{role}" in table else missing
                          for who in ("primary", "secondary"))
    detector = table[overhead].fillna(0.0).to_numpy(dtype=float) if overhead in table else np.zeros(len(table))
    return primary, secondary, detector


def sweep_thresholds(table: pd.DataFrame, score: str, thresholds: Sequence[float], *,
                     overhead: str | None = None, overhead_seconds: str | None = None, seed: int = 0) -> pd.DataFrame:
    """Routed accuracy (with its bootstrap CI), escalation rate, mean cost and seconds per case at each threshold.

    ``table`` has one row per case: ``primary_correct``, ``secondary_correct``, ``primary_cost``,
    ``secondary_cost`` (and ``primary_seconds``, ``secondary_seconds`` where measured; else the seconds are NaN)
    and the ``score`` column (NaN counts as stuck); ``overhead`` and ``overhead_seconds`` name the detector's own
    cost and seconds."""
    scores = table[score].fillna(1.0).to_numpy(dtype=float)
    p, s = table["primary_correct"].to_numpy(dtype=float), table["secondary_correct"].to_numpy(dtype=float)
    pc, sc, oc = _spent(table, "cost", overhead)
    ps, ss, os_ = _spent(table, "seconds", overhead_seconds)
    secondary_cost, secondary_seconds = float(sc.mean()), float(ss.mean()) if len(ss) else math.nan
    gap = _gap(float(p.mean()), float(s.mean()))
    rows = []
    for t in thresholds:
        escalated = scores >= t
        correct = np.where(escalated, s, p)
        accuracy, low, high = bootstrap_ci(correct, seed=seed)
        cost = float((pc + oc + escalated * sc).mean())
        seconds = float((ps + os_ + escalated * ss).mean()) if len(ss) else math.nan
        rows.append({
            "threshold": float(t), "accuracy": accuracy, "accuracy_ci_low": low, "accuracy_ci_high": high,
            "escalation_rate": float(escalated.mean()), "cost": cost,
            "cost_vs_secondary": cost / secondary_cost if secondary_cost > 0 else math.nan,
            "seconds": seconds,
            "seconds_vs_secondary": seconds / secondary_seconds if secondary_seconds > 0 else math.nan,
            "pgr": (accuracy - p.mean()) / gap if gap > 0 else math.nan,
        })
    return pd.DataFrame(rows)


def threshold_candidates(scores: pd.Series, grid: Sequence[float]) -> list[float]:
    """Thresholds the recommendation may choose: the grid, and every distinct score seen (each one a reachable
    operating point), so that scores bunched between two grid values still give intermediate escalation rates."""
    seen = scores.fillna(1.0).clip(0.0, 1.0).astype(float).tolist()
    return sorted(set(map(float, grid)) | set(seen))


def cheapest_by(sweep: pd.DataFrame) -> str:
    """What "cheapest" means for a sweep: measured seconds per case where every row has them, else price."""
    seconds = sweep.get("seconds")
    return "seconds" if seconds is not None and len(sweep) and bool((seconds > 0).all()) else "cost"


def recommend(sweep: pd.DataFrame, secondary_accuracy: float, tolerance: float = TOLERANCE) -> tuple[pd.Series, bool]:
    """The recommended row of a sweep and whether it met the tolerance (``RECOMMENDATION_CRITERION``): the
    cheapest row (``cheapest_by``) within ``tolerance`` of the secondary's accuracy (ties: more accurate, then
    higher threshold); if there is none, the most accurate (ties: cheaper, then higher threshold)."""
    by = cheapest_by(sweep)
    close = sweep[sweep["accuracy"] >= secondary_accuracy - tolerance - 1e-12]
    if len(close):
        ranked = close.sort_values([by, "accuracy", "threshold"], ascending=[True, False, False])
        return ranked.iloc[0], True
    ranked = sweep.sort_values(["accuracy", by, "threshold"], ascending=[False, True, False])
    return ranked.iloc[0], False


@dataclass(frozen=True)
class RoutingMetrics:
    """How well one detector's scores route one split's cases: each a number, NaN where it is undefined (no
    accuracy gap to recover, no error or no correct answer to rank)."""

    auroc: float
    apgr: float
    escalation_for_50pct_gap: float
    escalation_for_80pct_gap: float
    oracle_escalation: float
    primary_accuracy: float
    secondary_accuracy: float
    primary_cost: float
    secondary_cost: float


def routing_metrics(table: pd.DataFrame, score: str, curve: pd.DataFrame) -> RoutingMetrics:
    """The metrics of the ``score`` column of a per-case table (``primary_correct``, ``secondary_correct``,
    ``primary_cost``, ``secondary_cost``), given its ``routing_curve``."""
    p_acc, s_acc = table["primary_correct"].mean(), table["secondary_correct"].mean()
    return RoutingMetrics(
        auroc=auroc(table[score].fillna(1.0), 1 - table["primary_correct"]),
        apgr=apgr(curve, p_acc, s_acc),
        escalation_for_50pct_gap=escalation_to_recover(curve, p_acc, s_acc, 0.5),
        escalation_for_80pct_gap=escalation_to_recover(curve, p_acc, s_acc, 0.8),
        oracle_escalation=oracle_escalation(table["primary_correct"], table["secondary_correct"]),
        primary_accuracy=p_acc, secondary_accuracy=s_acc,
        primary_cost=table["primary_cost"].mean(), secondary_cost=table["secondary_cost"].mean(),
    )
