"""The README's strategy tables from the runs ``measure_strategies.sh`` leaves under ``runs/strategies``.

    python -m evals.benchmarks.strategy_report [--runs runs/strategies] [--plot docs/figures/strategies.png]

For every model, strategy and suite: cases, accuracy (full match) with its 95% interval, tool-set exact match,
abstention accuracy, false abstention, parse failures, seconds and output tokens per case, and seconds per
correct decision. ``gate+native`` runs were made with the gate open: their selection rows are the ``native`` rows
(the gate's own time and tokens are kept apart), and the gate at the threshold chosen on the BFCL dev rows is
reported on the test rows. Paired differences (bootstrap interval, McNemar's exact p) compare strategies on
the cases both ran.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from evals.reports.strategies import (
    NAMED_PAIRS,
    accuracy_figure,
    fastest_per_correct,
    pair_heading,
    paired_table,
    plot_accuracy,
    run_spec,
    run_strategy,
    strategy_pairs,
    strategy_sections,
)
from evals.runner import load_results

# the report's names that tests import from here, kept importable (evals.reports.strategies holds them)
__all__ = ["NAMED_PAIRS", "accuracy_figure", "fastest_per_correct", "main", "pair_heading", "paired_table",
           "plot_accuracy", "run_spec", "strategy_pairs"]


def _load_runs(root: Path) -> dict[tuple[str, str, str], pd.DataFrame]:
    runs = {}
    for results in sorted(root.glob("*/*/*/results.*")):
        label, strategy, model = results.parent.name, run_strategy(results.parent), results.parent.parent.parent.name
        if (model, strategy, label) not in runs:
            runs[(model, strategy, label)] = load_results(results.parent)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.strategy_report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", default="runs/strategies", help="Where measure_strategies.sh wrote its runs.")
    parser.add_argument("--plot", type=Path, help="Also draw accuracy per suite and strategy to this PNG file.")
    args = parser.parse_args(argv)
    runs = _load_runs(Path(args.runs))
    if not runs:
        print(f"No runs under {args.runs}: run evals/benchmarks/measure_strategies.sh first.")
        return 1
    print("\n\n".join(strategy_sections(runs)))
    if args.plot:
        print(f"\nPlot: {plot_accuracy(runs, args.plot)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
