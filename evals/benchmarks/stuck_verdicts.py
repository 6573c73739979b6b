"""The stuck page's verdicts in seconds, generated from kept benchmark rows (no model runs).

    toolsel bench stuck --suite bfcl:multiple --pair local:qwen2.5-coder-0.5b,local:qwen2.5-coder-1.5b \\
        --detectors validation,confidence,learned --limit 40 --no-cache --run-dir runs/stuck/bfcl-multiple
    python -m evals.benchmarks.stuck_verdicts keep runs/stuck/bfcl-multiple results/stuck/bfcl-multiple
    python -m evals.benchmarks.stuck_verdicts page results/stuck --out results/stuck/verdicts.md

``page`` computes every benchmark kept under the folder again (``evals.stuck_bench.kept.reassemble``) and writes,
per suite and pair, each model alone, each detector at its dev threshold on test (paired against the secondary, in
measured seconds) and one verdict line per detector, and a learned detector's line at the threshold its router
ships with (what ``--cascade auto`` escalates at) where the rows were scored by the shipped router;
``provenance.json`` beside the kept runs (a list of ``{"what", "kept", "command", "commit", "machine", "date",
"notes"}``) becomes the provenance table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

from evals.runner import load_results
from evals.stuck_bench.kept import BENCH_FILE, keep, kept_run_dir, reassemble
from evals.stuck_bench.tables import BenchTables, overhead_seconds_column, score_column
from evals.stuck_bench.verdict import verdict
from tool_selection.conversations.summary import format_table
from tool_selection.stuck.learned import LearnedDetector, shipped_router

__all__ = ["main", "markdown_page"]

PROVENANCE_FILE = "provenance.json"
PROVENANCE_COLUMNS = ("what", "kept", "command", "commit", "machine", "date", "notes")


def _pct(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.1f}"


def _num(value: float, digits: int = 2) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _table(rows: list[dict]) -> list[str]:
    return format_table(rows, list(rows[0])).splitlines() if rows else []


def _models_rows(baselines: pd.DataFrame, split: str) -> list[dict]:
    return [{"model": r["model"], "cases": int(r["cases"]),
             "accuracy % [95% CI]": f"{_pct(r['accuracy'])} [{_pct(r['accuracy_ci_low'])}, "
                                    f"{_pct(r['accuracy_ci_high'])}]",
             "s/case": _num(r["seconds"])}
            for r in baselines[baselines["split"] == split].to_dict("records")]


def _detector_rows(summary: pd.DataFrame) -> list[dict]:
    rows = []
    for r in summary[summary["available"]].to_dict("records"):
        rows.append({
            "detector": r["detector"], "AUROC": _num(r["test_auroc"]), "APGR": _num(r["test_apgr"]),
            "esc. for 50% / 80% of gap": f"{_pct(r['test_escalation_for_50pct_gap'])}% / "
                                         f"{_pct(r['test_escalation_for_80pct_gap'])}%",
            "oracle esc. %": _pct(r["test_oracle_escalation"]),
            "threshold (dev)": _num(r["recommended_threshold"], 3),
            "test accuracy %": _pct(r["test_accuracy"]), "escalated %": _pct(r["test_escalation_rate"]),
            "s/case (vs secondary)": f"{_num(r['test_seconds'])} ({_num(r['test_seconds_vs_secondary'])}x)",
            "vs secondary, points [95% CI], p": f"{100 * r['test_vs_secondary']:+.1f} "
                                                f"[{100 * r['test_vs_secondary_ci_low']:+.1f}, "
                                                f"{100 * r['test_vs_secondary_ci_high']:+.1f}], "
                                                f"p {r['test_vs_secondary_p']:.3g}",
            "break-even esc. %": _pct(r["test_break_even_escalation"]),
            "pays": "yes" if r["test_pays"] else "no",
        })
    return rows


def _routers_scoring(root: Path, split: str, primary: str) -> set[str]:
    """The fingerprints of the routers that scored the primary's kept rows on ``split`` (the learned evidence)."""
    rows = load_results(kept_run_dir(root, split, primary, scored=True))
    evidence = rows.get(f"stuck_{LearnedDetector.name}_evidence", pd.Series(dtype=object)).dropna()
    return {json.loads(found).get("router") for found in evidence if found}


def shipped_threshold_lines(root: Path, tables: BenchTables, test: str) -> list[str]:
    """Per pair, the learned detector on test at the threshold its shipped router escalates at, where the kept rows
    were scored by that router (a router shipped since is not the one these scores came from)."""
    lines = []
    cases = tables.cases[tables.cases["split"] == test]
    for (label, primary), pair_cases in cases.groupby(["pair", "primary"], sort=False):
        router = shipped_router(primary)
        if score_column(LearnedDetector.name) not in pair_cases or router is None:
            continue
        if _routers_scoring(root, test, primary) != {router.fingerprint}:
            continue
        judged = verdict(pair_cases, LearnedDetector.name, score_column(LearnedDetector.name), router.threshold,
                         overhead_seconds=overhead_seconds_column(LearnedDetector.name))
        lines.append(f"- {label}, at the shipped router's own threshold (router {router.fingerprint}, P(wrong) >= "
                     f"{router.threshold:.3f}, what `--cascade auto` escalates at): {judged.line()}")
    return lines


def bench_section(root: Path) -> list[str]:
    """One kept benchmark: per pair, each model alone on test, each detector, and the verdict lines."""
    params = json.loads((root / BENCH_FILE).read_text())["params"]
    tables = reassemble(root)
    test = params["test_split"]
    limit = f", the first {params['limit']} cases of each split" if params.get("limit") else ""
    lines = [f"### {params['suite']}", "",
             f"Threshold chosen on `{params['dev_split']}`, reported on `{test}`{limit}; selector "
             f"`{params['selection_strategy']}`, relevance "
             f"{'on (each model its own)' if params.get('selector', {}).get('relevance') else 'off'}; commit "
             f"`{params['git_commit']}`.", ""]
    for label, summary in tables.summary.groupby("pair", sort=False):
        models = set(summary[["primary", "secondary"]].iloc[0])
        lines += [f"**{label}**", "", *_table(_models_rows(tables.baselines[tables.baselines["model"].isin(models)],
                                                           test)), "",
                  *_table(_detector_rows(summary)), "", "Verdict on test, per detector at its dev threshold:", "",
                  *(f"- {line}" for line in summary.loc[summary["available"], "test_verdict"]), ""]
    shipped = shipped_threshold_lines(root, tables, test)
    if shipped:
        lines += ["The learned detector as it runs live:", "", *shipped, ""]
    return lines


def markdown_page(results: Path) -> str:
    """Every benchmark kept under ``results`` (folders holding ``bench.json``), and their provenance."""
    roots = sorted(p.parent for p in results.rglob(BENCH_FILE))
    lines = ["<!-- generated by: python -m evals.benchmarks.stuck_verdicts page "
             f"{results.as_posix()} (from kept rows; edit the generator, not this file) -->", ""]
    for root in roots:
        lines += bench_section(root)
    provenance = results / PROVENANCE_FILE
    if provenance.exists():
        entries = json.loads(provenance.read_text())
        lines += ["#### Provenance", "", *_table([{k: e.get(k, "") for k in PROVENANCE_COLUMNS} for e in entries]), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.stuck_verdicts", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    kept = sub.add_parser("keep", help="Copy a finished benchmark's bench.json and per-case rows.")
    kept.add_argument("bench_dir", type=Path)
    kept.add_argument("dest", type=Path)
    page = sub.add_parser("page", help="The verdict section from every kept benchmark under a folder.")
    page.add_argument("results", type=Path)
    page.add_argument("--out", type=Path, help="Write here (default: print).")
    args = parser.parse_args(argv)
    if args.command == "keep":
        for path in keep(args.bench_dir, args.dest):
            print(path)
        return 0
    text = markdown_page(args.results)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
