"""The relevance stage's trade-off as its threshold moves: abstention where no listed tool fits against false
abstention where one does, per group of test rows, with the shipped operating point marked.

    curve = tradeoff_curve(model, {"bfcl": rows, "domains": rows})
    plot_tradeoff(curve, "relevance-tradeoff.png")

A lower threshold overrules fewer calls: less false abstention, and fewer of the requests no tool can do refused.
``toolsel eval --relevance-threshold P`` runs another point of the curve.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from evals.metrics import summarize
from evals.relevance import apply_relevance
from tool_selection.relevance import RelevanceModel

__all__ = ["CURVE_THRESHOLDS", "plot_tradeoff", "tradeoff_curve"]

CURVE_THRESHOLDS = tuple(float(t) for t in np.round(np.linspace(0.0, 1.0, 41), 3))


def tradeoff_curve(model: RelevanceModel, groups: Mapping[str, pd.DataFrame],
                   thresholds: Iterable[float] = CURVE_THRESHOLDS) -> pd.DataFrame:
    """Per group and threshold (``thresholds`` and the model's own, marked ``operating``): correct abstention on
    the rows that need no call, false abstention on those that need one, and accuracy, all as fractions."""
    rows = []
    for group, table in groups.items():
        for threshold in sorted({*map(float, thresholds), float(model.threshold)}):
            summary = summarize(apply_relevance(table, model, threshold), with_ci=False)
            rows.append({"group": group, "threshold": threshold, "operating": threshold == float(model.threshold),
                         "abstention": summary.get("abstention_accuracy", np.nan),
                         "false_abstention": summary.get("false_abstention_rate", np.nan),
                         "accuracy": summary["accuracy"], "cases": len(table)})
    return pd.DataFrame(rows)


def plot_tradeoff(curve: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """One line per group: false abstention (x) against abstention (y), in percent, the operating point marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.8))
    for group, points in curve.groupby("group", sort=False):
        points = points.dropna(subset=["abstention", "false_abstention"]).sort_values("threshold")
        if points.empty:
            continue
        line, = axes.plot(100 * points["false_abstention"], 100 * points["abstention"], marker=".", label=group)
        chosen = points[points["operating"]]
        axes.scatter(100 * chosen["false_abstention"], 100 * chosen["abstention"], s=90, marker="*",
                     color=line.get_color(), zorder=3, edgecolors="black", linewidths=0.5)
    axes.set_xlabel("false abstention: no call where one was needed (%)")
    axes.set_ylabel("abstention where no listed tool fits (%)")
    axes.set_title(title or "Relevance threshold: refusals against false refusals (star: shipped threshold)")
    axes.grid(alpha=0.3)
    axes.legend()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
