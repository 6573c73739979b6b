"""The BFCL multi-turn table from ``toolsel eval loop --suite bfcl:multi_turn_...`` run directories (or rows kept
under ``results/loop/bfcl_multi_turn/``).

    python -m evals.benchmarks.bfcl_multi_turn_report LABEL=RUN_DIR [LABEL=RUN_DIR ...]

Per run: tasks, task success (BFCL's checker) with its 95% interval, turn success (turns passed before a task's
first failing turn, over all turns), the pass rate of turns 1-3, calls, tool errors and errors recovered per task,
turns summarised to fit the context, seconds per task, and how the tasks failed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from evals.bfcl_multi_turn import summarize_multi_turn

__all__ = ["main", "multi_turn_table"]


def multi_turn_table(runs: dict[str, pd.DataFrame]) -> str:
    lines = ["| run | tasks | task success % [95% CI] | turn success % | turn 1 / 2 / 3 passed % | calls / task | "
             "tool errors / task | errors recovered / task | turns summarised | s / task | failures |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, frame in runs.items():
        s = summarize_multi_turn(frame)
        turns = " / ".join(f"{100 * s[f'turn_{p}_passed']:.0f}" for p in (1, 2, 3) if f"turn_{p}_passed" in s)
        failures = ", ".join(f"{kind.removeprefix('multi_turn:')} {count}"
                             for kind, count in frame["error_type"].dropna().value_counts().items())
        lines.append(f"| {label} | {len(frame)} | {100 * s['task_success']:.1f} [{100 * s['task_success_ci_low']:.0f}, "
                     f"{100 * s['task_success_ci_high']:.0f}] | {100 * s['turn_success']:.1f} | {turns} | "
                     f"{s['calls']:.2f} | {s['tool_errors']:.2f} | {s['errors_recovered']:.2f} | "
                     f"{frame['turns_summarised'].sum():.0f} | {s['seconds']:.1f} | {failures or '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.bfcl_multi_turn_report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="LABEL=RUN_DIR")
    args = parser.parse_args(argv)
    runs = {}
    for item in args.runs:
        label, _, run_dir = item.partition("=")
        runs[label] = pd.read_json(Path(run_dir) / "results.jsonl", lines=True).drop_duplicates("id", keep="last")
    print(multi_turn_table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
