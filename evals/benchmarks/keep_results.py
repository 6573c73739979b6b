"""Keep the per-case rows behind the README's tables in the repository, where ``runs/`` (ignored) cannot lose them.

    python -m evals.benchmarks.keep_results runs/strategies results/strategies
    python -m evals.benchmarks.strategy_report --runs results/strategies     # the tables again, from the kept rows

Copies every finished run under SOURCE (a directory with ``summary.json``) to the same relative place under
DEST, text files only: ``results.jsonl`` (every case: request, expected and predicted calls, scores, the raw answer
of a parse failure), ``summary.json`` (parameters, commit, headline figures) and ``by_tag.csv``. The parquet table
is left out: ``load_results`` and ``toolsel eval rescore`` read the JSON Lines. A ``:`` in a path (``text:call``) becomes ``_``, which
``strategy_report`` reads back. A compiled selector under SOURCE
(``toolsel optimize --out``: ``program.json`` and ``manifest.json``) is kept too, so it can be loaded and scored
again (``toolsel eval --program``). A kept run is replaced by a newer copy of the same run.

    python -m evals.benchmarks.keep_results programs results/optimize/qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from evals.reports.strategies import safe_name
from tool_selection.compiled import MANIFEST_FILE, PROGRAM_FILE

__all__ = ["KEPT_FILES", "KEPT_PROGRAM_FILES", "keep_results"]

KEPT_FILES = ("results.jsonl", "summary.json", "by_tag.csv")
KEPT_PROGRAM_FILES = (PROGRAM_FILE, MANIFEST_FILE)


def keep_results(source: str | Path, dest: str | Path) -> list[Path]:
    """Copy the finished runs and compiled selectors under ``source`` to ``dest`` (text files only); what was
    copied, as kept."""
    source, dest = Path(source), Path(dest)
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is not a directory of runs: give the directory 'toolsel eval --run-dir' "
                                "or measure_strategies.sh wrote to, such as runs/strategies.")
    finished_runs = {summary.parent for summary in source.rglob("summary.json")
                     if (summary.parent / "results.jsonl").exists()}
    programs = {manifest.parent for manifest in source.rglob(MANIFEST_FILE)
                if (manifest.parent / PROGRAM_FILE).exists()}
    kept = []
    for directory in sorted(finished_runs | programs):
        target = dest / safe_name(str(directory.relative_to(source)))  # no ':' in a path: Windows cannot hold it
        target.mkdir(parents=True, exist_ok=True)
        names = (KEPT_FILES if directory in finished_runs else ()) + (
            KEPT_PROGRAM_FILES if directory in programs else ())
        for name in names:
            if (directory / name).exists():
                shutil.copy2(directory / name, target / name)
        if (target / "summary.json").exists() and directory in finished_runs:
            _suite_file_relative(target / "summary.json", Path.cwd())
        kept.append(target)
    return kept


def _suite_file_relative(summary: Path, root: Path) -> None:
    """A run on a suite file records the file's absolute path (``suite_ref``); kept in a repository, a path under
    ``root`` is written relative to it, so that the kept rows name no machine's folders."""
    meta = json.loads(summary.read_text())
    reference = (meta.get("params") or {}).get("suite_ref")
    if not isinstance(reference, str) or not Path(reference).is_absolute():
        return
    try:
        meta["params"]["suite_ref"] = Path(reference).relative_to(root.resolve()).as_posix()
    except ValueError:
        return
    summary.write_text(json.dumps(meta, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.keep_results", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="Directory of finished runs or compiled selectors (searched recursively).")
    parser.add_argument("dest", help="Where to keep them, under the same relative paths.")
    args = parser.parse_args(argv)
    kept = keep_results(args.source, args.dest)
    for path in kept:
        print(path)
    print(f"{len(kept)} runs and programs kept under {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
