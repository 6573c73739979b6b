"""A finished stuck benchmark again, from its kept files alone: no model runs.

``keep`` copies what the tables are computed from (``bench.json`` and each model's per-case rows, as text) out of a
benchmark's folder; ``reassemble`` prices those rows and computes every table again (``assemble``), so a results
page is generated from kept rows and agrees with the run that made them.

    python -m evals.benchmarks.stuck_verdicts keep runs/stuck_bench/bfcl-multiple-1a2b3c4d results/stuck/bfcl-multiple
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evals.benchmarks.keep_results import keep_results
from evals.naming import slug
from evals.runner import load_results
from evals.stuck_bench.tables import BenchTables, assemble, price
from tool_selection.collaboration import CostFn, catalog_cost
from tool_selection.errors import ToolSelectionError

__all__ = ["BENCH_FILE", "keep", "reassemble"]

BENCH_FILE = "bench.json"
SCORED = "-scored-"


def keep(bench_dir: str | Path, dest: str | Path) -> list[Path]:
    """Copy a finished benchmark's ``bench.json`` and its models' per-case rows (JSON Lines) to ``dest``."""
    bench_dir, dest = Path(bench_dir), Path(dest)
    if not (bench_dir / BENCH_FILE).exists():
        raise ToolSelectionError(f"{bench_dir} holds no {BENCH_FILE}: give the folder a finished 'toolsel bench "
                                 "stuck' run wrote (its results line names it).")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(bench_dir / BENCH_FILE, dest / BENCH_FILE)
    return [dest / BENCH_FILE, *keep_results(bench_dir / "runs", dest / "runs")]


def kept_run_dir(root: Path, split: str, model: str, *, scored: bool) -> Path:
    """The folder of ``model``'s kept rows on ``split`` (its scored run for a primary)."""
    name = slug(model)
    found = sorted(d for d in (root / "runs" / split).glob(f"{name}*")
                   if d.is_dir() and (SCORED in d.name) == scored
                   and d.name.removeprefix(name)[:1] in ("", "-"))
    if len(found) != 1:
        raise ToolSelectionError(f"{root}: expected one {'scored ' if scored else ''}run of {model} on {split}, found "
                                 f"{[d.name for d in found] or 'none'}: keep the whole benchmark folder.")
    return found[0]


def reassemble(root: str | Path, cost_fn: CostFn | None = None) -> BenchTables:
    """Every table of the benchmark kept in ``root`` (``keep``), computed again from its per-case rows."""
    root = Path(root)
    params = json.loads((root / BENCH_FILE).read_text())["params"]
    names = [tuple(pair) for pair in params["pairs"]]
    primaries = {primary for primary, _ in names}
    splits = list(dict.fromkeys([params["dev_split"], params["test_split"]]))
    per_model = {}
    for split in splits:
        for model in dict.fromkeys(m for pair in names for m in pair):
            rows = load_results(kept_run_dir(root, split, model, scored=model in primaries))
            per_model[(model, split)] = price(rows, model, cost_fn or catalog_cost, params["detectors"])
    return assemble(names, splits, params["detectors"], params["thresholds"], per_model)
