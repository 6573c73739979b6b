"""The README's loop table from ``toolsel eval loop`` run directories.

    python -m evals.benchmarks.loop_report LABEL=RUN_DIR [LABEL=RUN_DIR ...] [--same-tasks]

Per run: tasks, task success with its 95% interval, tool state reached, steps, calls, tool errors and errors
recovered per task, escalations per task, seconds per task and per solved task (the run's seconds over the tasks
it solved), and how the tasks ended. ``--same-tasks`` keeps only
the tasks every run finished, so that rows compare the same tasks. ``--paired`` compares each run after the first
with the first on the tasks both ran: the paired difference with its 95% interval, and McNemar's exact p for the
pass/fail columns (``evals.stats.compare_paired``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from evals.reports.loops import loop_table, paired_table

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.loop_report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="LABEL=RUN_DIR")
    parser.add_argument("--same-tasks", action="store_true", help="Only the tasks every run finished.")
    parser.add_argument("--paired", action="store_true", help="Also compare each run with the first, task by task.")
    args = parser.parse_args(argv)
    runs = {}
    for item in args.runs:
        label, _, run_dir = item.partition("=")
        runs[label] = pd.read_json(Path(run_dir) / "results.jsonl", lines=True).drop_duplicates("id", keep="last")
    if args.same_tasks:
        shared = set.intersection(*(set(frame["id"]) for frame in runs.values()))
        runs = {label: frame[frame["id"].isin(shared)] for label, frame in runs.items()}
    print(loop_table(runs))
    if args.paired and len(runs) > 1:
        print("\n" + paired_table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
