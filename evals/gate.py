"""Choosing the relevance gate's threshold on dev, offline, and reading what it does on test.

Run a gated strategy once per split with the gate open (``--strategy gate+NAME --gate-threshold -inf``): every
row then holds the gate's score and the selection's own decision. A threshold ``t`` closes the gate on the rows
scoring below ``t``, which become abstentions (right on no-tool cases, a false abstention elsewhere), so every
threshold is scored without another model call. The threshold is chosen on dev (best balanced accuracy: cases
that need a call and cases that need none count half each; ties to the lower threshold) and reported on test,
with the paired difference against the open gate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evals.metrics import balanced_accuracy, summarize

__all__ = ["GateChoice", "abstain_where", "choose_threshold", "gated_results", "sweep_gate"]

_ABSTAINED_RIGHT = {"full_match": 1.0, "tool_exact": 1.0, "precision": 1.0, "recall": 1.0, "f1": 1.0,
                    "abstention_correct": 1.0}
_ABSTAINED_WRONG = {"full_match": 0.0, "tool_exact": 0.0, "precision": 0.0, "recall": 0.0, "f1": 0.0,
                    "false_abstention": 1.0}
_CLEARED = {"args_correct": math.nan, "unknown_tool": 0.0, "invalid_arguments": 0.0, "parse_failure": 0.0}


def _require_scores(results: pd.DataFrame) -> None:
    if "gate_score" not in results:
        from tool_selection.errors import ToolSelectionError

        raise ToolSelectionError("These results have no gate_score column: evaluate a gate+NAME strategy with "
                                 "--gate-threshold -inf so that every case is scored by the gate and selected.")


def abstain_where(results: pd.DataFrame, mask: pd.Series | np.ndarray) -> pd.DataFrame:
    """The per-case rows as they would be had the selector answered with no call where ``mask`` holds: right
    on a case that needs no call, a false abstention elsewhere. Adds ``gate_closed`` (the mask)."""
    closed = pd.Series(np.asarray(mask, dtype=bool), index=results.index)
    no_tool = results["abstention_correct"].notna()
    out = results.copy()
    for rows, scores in ((closed & no_tool, _ABSTAINED_RIGHT), (closed & ~no_tool, _ABSTAINED_WRONG)):
        for column, value in {**scores, **_CLEARED}.items():
            if column in out:
                out.loc[rows, column] = value
    if "predicted" in out:
        out.loc[closed, "predicted"] = "[]"
    out["gate_closed"] = closed.astype(float)
    return out


def gated_results(results: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The per-case rows as they would be with the gate closed below ``threshold``."""
    _require_scores(results)
    return abstain_where(results, pd.to_numeric(results["gate_score"], errors="coerce").fillna(0.0) < threshold)


def sweep_gate(results: pd.DataFrame, thresholds: Iterable[float] | None = None) -> pd.DataFrame:
    """Accuracy, abstention accuracy, false abstention and the share of closed gates per threshold (default:
    the open gate and every distinct score)."""
    _require_scores(results)
    if thresholds is None:
        scores = pd.to_numeric(results["gate_score"], errors="coerce").dropna().unique()
        thresholds = [-math.inf, *sorted(scores), math.inf]
    rows = []
    for threshold in thresholds:
        table = gated_results(results, threshold)
        summary = summarize(table, with_ci=False)
        rows.append({"threshold": threshold, "accuracy": summary["accuracy"],
                     "balanced_accuracy": balanced_accuracy(table),
                     "abstention_accuracy": summary.get("abstention_accuracy", math.nan),
                     "false_abstention_rate": summary.get("false_abstention_rate", math.nan),
                     "gate_closed": float(table["gate_closed"].mean())})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class GateChoice:
    threshold: float
    dev: pd.DataFrame  # the dev sweep
    dev_accuracy: float


def choose_threshold(dev_results: pd.DataFrame) -> GateChoice:
    """The dev threshold with the best balanced accuracy (``metrics.balanced_accuracy``: cases that need a call
    and cases that need none count half each, so closing the gate on everything cannot win; ties: the lowest,
    which closes the gate least)."""
    sweep = sweep_gate(dev_results)
    best = sweep["balanced_accuracy"].max()
    threshold = float(sweep.loc[np.isclose(sweep["balanced_accuracy"], best), "threshold"].min())
    accuracy = float(sweep.loc[sweep["threshold"] == threshold, "accuracy"].iloc[0])
    return GateChoice(threshold, sweep, accuracy)
