"""Figures of finished runs, as bare matplotlib ``Figure``s (rendered by Agg; no global pyplot state): the paired
differences of a comparison, and accuracy with its interval per run."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from evals.figure_files import FORMATS, check_figure_path, figure_png, save_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from evals.reports.compare import Comparison
    from evals.runs import Run

__all__ = ["FORMATS", "accuracy_figure", "check_figure_path", "figure_png", "paired_figure", "save_figure"]



def _interval(text: str) -> tuple[float, float]:
    low, high = (float(v) for v in re.findall(r"[-+]?\d+(?:\.\d+)?", text)[:2])
    return low, high


def paired_figure(result: Comparison) -> Figure:
    """B - A in points, with its 95% interval, for every rate metric of the comparison; filled markers where the
    difference is significant."""
    from matplotlib.figure import Figure

    from evals.reports.compare import metric_scale

    rows = [r for r in result.table.to_dict("records") if metric_scale(r["metric"])[1] == "%"]
    fig = Figure(figsize=(7.5, 0.38 * max(len(rows), 3) + 1.6))
    ax = fig.subplots()
    for y, row in enumerate(reversed(rows)):
        low, high = _interval(row["B-A 95% CI"])
        difference = 100 * row["B-A"]
        significant = row["verdict"] != "not significant"
        ax.errorbar(difference, y, xerr=[[difference - low], [high - difference]], fmt="o", capsize=3,
                    color="C0" if significant else "0.45", mfc="C0" if significant else "white")
    ax.axvline(0, color="0.2", lw=0.8)
    ax.set_yticks(range(len(rows)), [r["metric"] for r in reversed(rows)])
    ax.set_xlabel("B - A, percentage points (95% paired bootstrap interval; filled: significant)")
    ax.set_title(f"A: {result.a.label}\nB: {result.b.label}", fontsize=8, loc="left")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def accuracy_figure(runs: list[Run]) -> Figure:
    """Accuracy (full match) with its 95% interval, one row per run."""
    from matplotlib.figure import Figure

    from evals.metrics import bootstrap_ci

    fig = Figure(figsize=(8, 0.4 * max(len(runs), 3) + 1.2))
    ax = fig.subplots()
    for y, run in enumerate(reversed(runs)):
        accuracy, low, high = bootstrap_ci(run.rows["full_match"])
        ax.errorbar(100 * accuracy, y, xerr=[[100 * (accuracy - low)], [100 * (high - accuracy)]], fmt="o",
                    capsize=3, color="C0")
    ax.set_yticks(range(len(runs)), [run.label for run in reversed(runs)], fontsize=8)
    ax.set(xlabel="accuracy (full match), % with 95% CI", xlim=(0, 100))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
