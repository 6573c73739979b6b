"""Two runs side by side: each metric of A and B, and the paired difference B - A over the cases both scored,
in one unit per metric (rates in percent, their differences in points; seconds; tokens). A side whose answers
came from DSPy's cache recorded no time or tokens, so those metrics are left out and the comparison says why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evals.runs import Run

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COST_METRICS", "Comparison", "comparison", "format_comparison", "metric_scale"]

COST_METRICS = ("latency_s", "input_tokens", "output_tokens")  # measured, not scored: a cached answer has none


def metric_scale(metric: str) -> tuple[float, str]:
    """How a metric is shown: (factor, unit); rates as percent (their differences in points)."""
    if metric == "latency_s":
        return 1.0, "s"
    if metric in ("input_tokens", "output_tokens"):
        return 1.0, "tokens"
    return 100.0, "%"


@dataclass
class Comparison:
    a: Run
    b: Run
    table: pd.DataFrame  # evals.stats.compare_runs, the cost metrics dropped where a side was cached
    left_out: list[str] = field(default_factory=list)  # why metrics were left out


def comparison(a: Run, b: Run, *, seed: int = 0) -> Comparison:
    from evals.stats import compare_runs

    table = compare_runs(a.rows, b.rows, seed=seed)
    left_out = [f"{side} ({run.label}): {run.cached} of {len(run.rows)} answers came from DSPy's cache, which "
                "records no time or tokens" for side, run in (("A", a), ("B", b)) if run.cached]
    if left_out and not table.empty:
        table = table[~table["metric"].isin(COST_METRICS)].reset_index(drop=True)
    return Comparison(a, b, table, left_out)


def _number(value: float, metric: str, signed: bool = False) -> str:
    if value is None or value != value:
        return ""
    factor, _ = metric_scale(metric)
    return f"{factor * value:{'+' if signed else ''}.{2 if metric == 'latency_s' else 1}f}"


def format_comparison(result: Comparison) -> str:
    """The header (what each run is), the table, and the notes."""
    a, b, table = result.a, result.b, result.table
    lines = [f"A: {a.ref}\n   {a.description}; {len(a.rows)} cases",
             f"B: {b.ref}\n   {b.description}; {len(b.rows)} cases", ""]
    differing = [key for key in ("suite", "split", "model", "strategy", "program")
                 if a.params.get(key) != b.params.get(key)]
    if differing:
        lines += [f"differ in: {', '.join(differing)}", ""]
    if table.empty:
        return "\n".join(lines + ["The runs share no scored case: nothing to compare (do they run the same suite?)."])
    rows = [["metric", "unit", "cases", "A", "B", "B-A", "B-A 95% CI", "McNemar p", "verdict"]]
    for row in table.to_dict("records"):
        metric = row["metric"]
        unit = metric_scale(metric)[1]
        p_value = row["McNemar p"]
        rows.append([metric, unit, str(row["cases"]), _number(row["A"], metric),
                     _number(row["B"], metric), _number(row["B-A"], metric, signed=True), row["B-A 95% CI"],
                     "" if p_value is None or p_value != p_value else f"{p_value:.3g}", row["verdict"]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  ".join(cell.rjust(w) if 1 < i < 7 else cell.ljust(w) for i, (cell, w) in
                               enumerate(zip(r, widths))).rstrip())
    lines.append("")
    lines.append("Rates are percent, their differences percentage points; latency in seconds and tokens per case. "
                 "Paired over the cases both runs scored: B-A with its 95% bootstrap interval; McNemar's exact test "
                 "for 0/1 metrics. 'not significant' means the interval includes 0 (or p >= 0.05).")
    for note in result.left_out:
        lines.append(f"note: {note}; latency and tokens are not compared (rerun that side with --no-cache).")
    return "\n".join(lines)
