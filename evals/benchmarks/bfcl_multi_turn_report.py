"""The BFCL multi-turn table from ``toolsel eval loop --suite bfcl:multi_turn_...`` run directories (or rows kept
under ``results/loop/bfcl_multi_turn/``).

    python -m evals.benchmarks.bfcl_multi_turn_report LABEL=RUN_DIR [LABEL=RUN_DIR ...]

Per run: tasks, task success (BFCL's checker) with its 95% interval, turn success (turns passed before a task's
first failing turn, over all turns), the pass rate of turns 1-3, calls, tool errors, errors recovered and escalations
per task, turns summarised to fit the context, seconds per task and per solved task (the run's seconds over the tasks
it solved), and how the tasks failed. With ``--paired``, each run after
the first is compared with the first on the tasks both ran: the paired difference with its 95% interval, and
McNemar's exact p for the pass/fail columns (``evals.stats.compare_paired``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from evals.bfcl_multi_turn import summarize_multi_turn
from evals.reports.loops import paired_table as paired_runs
from evals.reports.loops import seconds_per_solved

__all__ = ["main", "multi_turn_table", "paired_table"]

PAIRED_COLUMNS = {"task success": "success", "turn 1 passed": "turn_1_passed", "turn success (per task)": "turn_success",
                  "calls / task": "calls", "tool errors / task": "tool_errors", "s / task": "seconds"}


def multi_turn_table(runs: dict[str, pd.DataFrame]) -> str:
    lines = ["| run | tasks | task success % [95% CI] | turn success % | turn 1 / 2 / 3 passed % | calls / task | "
             "tool errors / task | errors recovered / task | escalations / task | reminders / task | turns summarised | "
             "s / task | s / solved task | failures |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, frame in runs.items():
        s = summarize_multi_turn(frame)
        turns = " / ".join(f"{100 * s[f'turn_{p}_passed']:.0f}" for p in (1, 2, 3) if f"turn_{p}_passed" in s)
        reminders = f"{s['reminders']:.2f}" if "reminders" in s else "-"  # runs before reminders existed: none
        escalations = f"{s['escalations']:.2f}" if "escalations" in s else "-"
        failures = ", ".join(f"{kind.removeprefix('multi_turn:')} {count}"
                             for kind, count in frame["error_type"].dropna().value_counts().items())
        lines.append(f"| {label} | {len(frame)} | {100 * s['task_success']:.1f} [{100 * s['task_success_ci_low']:.0f}, "
                     f"{100 * s['task_success_ci_high']:.0f}] | {100 * s['turn_success']:.1f} | {turns} | "
                     f"{s['calls']:.2f} | {s['tool_errors']:.2f} | {s['errors_recovered']:.2f} | "
                     f"{escalations} | {reminders} | "
                     f"{frame['turns_summarised'].sum():.0f} | {s['seconds']:.1f} | {seconds_per_solved(frame)} | {failures or '-'} |")
    return "\n".join(lines)


def paired_table(runs: dict[str, pd.DataFrame]) -> str:
    """Each run after the first against the first, on the tasks both ran."""
    return paired_runs({label: _with_turn_1(frame) for label, frame in runs.items()}, PAIRED_COLUMNS)


def _with_turn_1(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(turn_1_passed=(frame["turns_passed"] > 0).astype(float))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.bfcl_multi_turn_report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="LABEL=RUN_DIR")
    parser.add_argument("--paired", action="store_true", help="Also compare each run with the first, task by task.")
    args = parser.parse_args(argv)
    runs = {}
    for item in args.runs:
        label, _, run_dir = item.partition("=")
        runs[label] = pd.read_json(Path(run_dir) / "results.jsonl", lines=True).drop_duplicates("id", keep="last")
    print(multi_turn_table(runs))
    if args.paired and len(runs) > 1:
        print("\n" + paired_table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
