"""Keep the per-case rows behind the README's tables in the repository, where ``runs/`` (ignored) cannot lose them.

    python -m evals.benchmarks.keep_results runs/strategies results/strategies
    python -m evals.benchmarks.strategy_report --runs results/strategies     # the tables again, from the kept rows

Copies every finished run under SOURCE (a directory with ``summary.json``) to the same relative place under
DEST, text files only: ``results.jsonl`` (every case: request, expected and predicted calls, scores, the raw answer
of a parse failure), ``summary.json`` (parameters, commit, headline figures) and ``by_tag.csv``. The parquet table
is left out: ``load_results`` and ``toolsel eval rescore`` read the JSON Lines. A kept run is replaced by a newer
copy of the same run.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

__all__ = ["KEPT_FILES", "keep_results"]

KEPT_FILES = ("results.jsonl", "summary.json", "by_tag.csv")


def keep_results(source: str | Path, dest: str | Path) -> list[Path]:
    """Copy the finished runs under ``source`` to ``dest`` (text files only); the runs copied, as kept."""
    source, dest = Path(source), Path(dest)
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is not a directory of runs: give the directory 'toolsel eval --run-dir' "
                                "or measure_strategies.sh wrote to, such as runs/strategies.")
    kept = []
    for summary in sorted(source.rglob("summary.json")):
        run = summary.parent
        if not (run / "results.jsonl").exists():
            continue
        target = dest / run.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for name in KEPT_FILES:
            if (run / name).exists():
                shutil.copy2(run / name, target / name)
        kept.append(target)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.keep_results", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="Directory of finished runs (searched recursively).")
    parser.add_argument("dest", help="Where to keep them, under the same relative paths.")
    args = parser.parse_args(argv)
    kept = keep_results(args.source, args.dest)
    for path in kept:
        print(path)
    print(f"{len(kept)} runs kept under {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
