"""The loop table, from the per-task rows of ``toolsel eval loop`` runs keyed by label: tasks, task success with its
95% interval, tool state reached, steps, calls, tool errors and errors recovered per task, escalations per task,
seconds per task and per solved task, and how the tasks ended; and each run against the first, task by task
(``paired_table``). ``toolsel report`` and the script ``evals.benchmarks.loop_report`` print them.
"""

from __future__ import annotations

import pandas as pd

from evals.metrics import bootstrap_ci

__all__ = ["LOWER_IS_BETTER", "PAIRED_COLUMNS", "loop_table", "paired_table", "seconds_per_solved"]

PAIRED_COLUMNS = {"task success": "success", "calls / task": "calls", "tool errors / task": "tool_errors",
                  "errors recovered / task": "errors_recovered", "s / task": "seconds"}
LOWER_IS_BETTER = frozenset({"tool errors / task", "s / task"})


def loop_table(runs: dict[str, pd.DataFrame]) -> str:
    lines = ["| run | tasks | task success % [95% CI] | tool state reached % | steps / task | calls / task | "
             "tool errors / task | errors recovered / task | escalations / task | s / task | s / solved task | "
             "how tasks ended |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, frame in runs.items():
        success, low, high = bootstrap_ci(frame["success"])
        ended = ", ".join(f"{reason} {count}" for reason, count in frame["stop_reason"].value_counts().items())
        lines.append(f"| {label} | {len(frame)} | {100 * success:.1f} [{100 * low:.0f}, {100 * high:.0f}] | "
                     f"{100 * frame['state_ok'].mean():.1f} | {frame['steps'].mean():.2f} | "
                     f"{frame['calls'].mean():.2f} | {frame['tool_errors'].mean():.2f} | "
                     f"{frame['errors_recovered'].mean():.2f} | {frame['escalations'].mean():.2f} | "
                     f"{frame['seconds'].mean():.1f} | {seconds_per_solved(frame)} | {ended} |")
    return "\n".join(lines)


def seconds_per_solved(frame: pd.DataFrame) -> str:
    """All of a run's seconds over the tasks it solved, or "-" when it solved none."""
    solved = frame["success"].sum()
    return f"{frame['seconds'].sum() / solved:.1f}" if solved else "-"


def paired_table(runs: dict[str, pd.DataFrame], columns: dict[str, str] | None = None, *,
                 lower_is_better: frozenset[str] = LOWER_IS_BETTER) -> str:
    """Each run after the first against the first, on the tasks both ran: per metric (``{name: column}``), both
    means, the paired difference with its 95% interval, McNemar's p for pass/fail columns. Rates read in percent,
    metrics named "... / task" as they are."""
    from evals.stats import compare_paired

    (base_label, base), *others = runs.items()
    lines = [f"| run vs {base_label} | metric | tasks | {base_label} | run | difference [95% CI] | McNemar p |",
             "|---|---|---|---|---|---|---|"]
    for label, frame in others:
        table = compare_paired(base, frame, columns or PAIRED_COLUMNS, lower_is_better=lower_is_better)
        for row in table.itertuples():
            scale = 1 if "/ task" in row.metric else 100  # counts per task as they are, rates in percent
            p_value = "-" if row.p_value is None or pd.isna(row.p_value) else f"{row.p_value:.3f}"
            lines.append(f"| {label} | {row.metric} | {row.n} | {scale * row.a:.1f} | {scale * row.b:.1f} | "
                         f"{scale * row.difference:+.1f} [{scale * row.ci_low:+.1f}, {scale * row.ci_high:+.1f}] | "
                         f"{p_value} |")
    return "\n".join(lines)
