"""docs/results/descriptions.md, generated from the kept runs of ``evals/benchmarks/measure_descriptions.sh``.

    python -m evals.benchmarks.descriptions_report --results results/optimize/descriptions \
        --write docs/results/descriptions.md

The results folder holds, per suite, ``SUITE/program`` (the compiled selector: its manifest has the rewritten
descriptions and what compiling cost; ``program/dev_eval`` and ``program/dev_eval_unoptimized`` its dev runs,
the rewritten and the original descriptions, each scoring the selection alone) and the test runs ``SUITE/test-original`` and ``SUITE/test-optimized``; at the top,
``provenance.json`` (``evals.benchmarks.provenance``) and optionally ``notes.md`` (what the runs show, written by
hand; put on the page as it is).

Per suite and pooled over the suites: test accuracy with the original and the rewritten descriptions, the paired
difference with its 95% bootstrap interval and McNemar's exact p, balanced accuracy, abstention and false
abstention, seconds per case; then what GEPA spent and found on dev, and every rewritten description beside the
original.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from evals.benchmarks.provenance import provenance_table
from evals.metrics import balanced_accuracy
from evals.runner import load_results
from evals.stats import compare_paired
from evals.suite import load_suite, registry_for
from tool_selection.compiled import MANIFEST_FILE, Manifest
from tool_selection.conversations.summary import format_table
from tool_selection.descriptions import descriptions_of

__all__ = ["SuiteRuns", "description_changes", "load_suite_runs", "main", "paired_row", "results_page"]

COMMAND = ("python -m evals.benchmarks.descriptions_report --results results/optimize/descriptions "
           "--write docs/results/descriptions.md")
TEST_COLUMNS = ("suite", "test cases", "original %", "rewritten %", "rewritten - original, points [95% CI]",
                "McNemar p", "balanced % (original -> rewritten)", "abstention % on no-tool cases",
                "false abstention %", "s / case")
DEV_RUNS = {"rewritten": "dev_eval", "original": "dev_eval_unoptimized"}  # under the program's folder
SEARCH_COLUMNS = ("suite", "metric calls (cap)", "reflection steps", "rewrites tried", "better on their minibatch",
                  "candidates", "compile s", "model calls", "dev cases", "dev balanced % (original -> rewritten)",
                  "tools rewritten")
RUN_LOG = "optimizer_log/run_log.json"  # GEPA's log of its steps, under the program's folder


class SuiteRuns:
    """One suite's kept runs: the compiled selector's manifest, its test rows with the original and with the
    rewritten descriptions, and the original descriptions (from the suite's own catalog)."""

    def __init__(self, suite: str, manifest: Manifest, original: pd.DataFrame, rewritten: pd.DataFrame,
                 dev: dict[str, pd.DataFrame] | None = None, steps: list[dict] | None = None):
        self.suite, self.manifest, self.original, self.rewritten = suite, manifest, original, rewritten
        self.dev = dev or {}  # the dev rows: "rewritten" (the program) and "original" (the selector it started from)
        self.steps = steps  # GEPA's reflection steps (its run log), where kept
        self.original_descriptions = descriptions_of(registry_for(load_suite(suite).cases[0]))


def load_suite_runs(results: Path) -> list[SuiteRuns]:
    """Every suite under ``results`` whose program and both test runs were kept, in name order."""
    runs = []
    for program in sorted(results.glob(f"*/program/{MANIFEST_FILE}")):
        folder = program.parents[1]
        if not all((folder / run / "results.jsonl").exists() for run in ("test-original", "test-optimized")):
            continue
        manifest = Manifest.model_validate_json(program.read_text(encoding="utf-8"))
        dev = {side: load_results(program.parent / run) for side, run in DEV_RUNS.items()
               if (program.parent / run / "results.jsonl").exists()}
        log = program.parent / RUN_LOG
        runs.append(SuiteRuns(folder.name, manifest, load_results(folder / "test-original"),
                              load_results(folder / "test-optimized"), dev,
                              json.loads(log.read_text(encoding="utf-8")) if log.exists() else None))
    if not runs:
        raise FileNotFoundError(f"{results} holds no suite with a program and both test runs: run "
                                "evals/benchmarks/measure_descriptions.sh, which keeps them there.")
    return runs


def _percent(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.1f}"


def _pair(frame_a: pd.DataFrame, frame_b: pd.DataFrame, column: str) -> str:
    return f"{_percent(frame_a[column].mean())} -> {_percent(frame_b[column].mean())}"


def paired_row(label: str, original: pd.DataFrame, rewritten: pd.DataFrame) -> dict[str, str]:
    """One row of the test table: the two runs over the cases both scored, paired by case id."""
    shared = sorted(set(original["id"]) & set(rewritten["id"]))
    original = original.set_index("id").loc[shared].reset_index()
    rewritten = rewritten.set_index("id").loc[shared].reset_index()
    test = compare_paired(original, rewritten, {"accuracy": "full_match"}).iloc[0]
    p_value = "-" if test["p_value"] is None or math.isnan(test["p_value"]) else f"{test['p_value']:.3f}"
    return {
        "suite": label, "test cases": str(len(shared)),
        "original %": _percent(test["a"]), "rewritten %": _percent(test["b"]),
        "rewritten - original, points [95% CI]": f"{100 * test['difference']:+.1f} "
                                                  f"[{100 * test['ci_low']:+.1f}, {100 * test['ci_high']:+.1f}]",
        "McNemar p": p_value,
        "balanced % (original -> rewritten)": f"{_percent(balanced_accuracy(original))} -> "
                                              f"{_percent(balanced_accuracy(rewritten))}",
        "abstention % on no-tool cases": _pair(original, rewritten, "abstention_correct"),
        "false abstention %": _pair(original, rewritten, "false_abstention"),
        "s / case": f"{original['latency_s'].mean():.2f} -> {rewritten['latency_s'].mean():.2f}",
    }


def _pooled(runs: list[SuiteRuns]) -> tuple[pd.DataFrame, pd.DataFrame]:
    def stack(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
        return pd.concat([frame.assign(id=suite + "/" + frame["id"].astype(str)) for suite, frame in frames.items()],
                         ignore_index=True)

    return (stack({r.suite: r.original for r in runs}), stack({r.suite: r.rewritten for r in runs}))


def description_changes(runs: SuiteRuns) -> list[dict[str, str]]:
    """The tools whose description the compiled selector shows differently: the original and the rewrite."""
    return [{"tool": f"`{name}`", "original": runs.original_descriptions.get(name, "(not in the suite's catalog)"),
             "rewritten": text} for name, text in sorted(runs.manifest.descriptions.items())
            if text != runs.original_descriptions.get(name)]


def _search_row(runs: SuiteRuns) -> dict[str, str]:
    manifest, cost = runs.manifest, runs.manifest.cost
    cap = manifest.optimizer_args.get("max_metric_calls", "-")
    budget = manifest.optimizer_args.get("budget", "")

    def figure(name: str, digits: int = 0) -> str:
        return f"{cost[name]:.{digits}f}" if name in cost else "-"

    steps = runs.steps
    tried = [step for step in steps or [] if "new_subsample_scores" in step]
    better = sum(sum(step["new_subsample_scores"]) > sum(step["subsample_scores"]) for step in tried)
    return {
        "suite": runs.suite, "metric calls (cap)": f"{cap}" if cap != "-" else f"({budget})",
        "reflection steps": "-" if steps is None else str(len(steps)),
        "rewrites tried": "-" if steps is None else str(len(tried)),
        "better on their minibatch": "-" if steps is None else str(better),
        "candidates": figure("candidates"), "compile s": figure("compile_seconds"), "model calls": figure("model_calls"),
        "dev cases": str(len(runs.dev["rewritten"])) if "rewritten" in runs.dev else "-",
        "dev balanced % (original -> rewritten)": " -> ".join(
            _percent(balanced_accuracy(runs.dev[side])) if side in runs.dev else "-" for side in ("original", "rewritten")),
        "tools rewritten": f"{len(description_changes(runs))} of {len(runs.original_descriptions)}",
    }


def results_page(results: Path) -> str:
    """The whole page from ``results`` (see the module's docstring for what it holds)."""
    runs = load_suite_runs(results)
    first = runs[0].manifest
    rows = [paired_row(r.suite, r.original, r.rewritten) for r in runs]
    if len(runs) > 1:
        rows.append(paired_row(f"**pooled ({len(runs)} suites)**", *_pooled(runs)))
    parts = [
        "# Tool descriptions as what is optimized\n",
        f"GEPA rewrites the tool descriptions a selector shows (`toolsel optimize --target descriptions`; the tool "
        f"set itself is untouched). Student `{first.model}` with the `{first.strategy}` strategy, proposer "
        f"`{first.teacher}`; train to reflect on, dev to select, test never read while optimizing. Both test runs "
        "score the selection alone (`--relevance none`), uncached. How it works: "
        "[Optimize and ship](../guide/optimize.md).\n",
        "## Test split, original against rewritten descriptions (paired by case)\n",
        format_table(rows, TEST_COLUMNS) + "\n",
        "## What the search spent and found on dev\n",
        format_table([_search_row(r) for r in runs], SEARCH_COLUMNS) + "\n",
    ]
    notes = results / "notes.md"
    if notes.exists():
        parts += ["## What the rows show\n", notes.read_text(encoding="utf-8").strip() + "\n"]
    parts.append("## The rewritten descriptions\n")
    for suite_runs in runs:
        changes = description_changes(suite_runs)
        parts += [f"### {suite_runs.suite}\n",
                  (format_table(changes, ("tool", "original", "rewritten")) if changes
                   else "No description was rewritten: the search kept the originals.") + "\n"]
    if (results / "provenance.json").exists():
        parts += ["## Provenance\n", provenance_table(results / "provenance.json") + "\n"]
    parts.append(f"Generated by `{COMMAND}`.\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.descriptions_report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default="results/optimize/descriptions", help="The kept runs.")
    parser.add_argument("--write", help="Write the page here instead of printing it.")
    args = parser.parse_args(argv)
    page = results_page(Path(args.results))
    if args.write:
        Path(args.write).write_text(page, encoding="utf-8")
        print(f"wrote {args.write}")
    else:
        print(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
