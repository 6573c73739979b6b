"""Markdown tables of measured results: zero-shot vs optimized selectors, and the stuck-detection benchmark.

    python -m evals.benchmarks.report ecommerce finance language bfcl

Reads what ``evals/benchmarks/measure_suite.sh SUITE`` leaves behind: ``runs/stuck_bench/SUITE`` (each model
alone, uncached, and the detector sweep) and ``programs/SUITE-OPTIMIZER`` (compiled selectors with their test
evaluation), plus the MLflow runs of the optimizations for wall time and model calls.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from evals.naming import slug
from evals.optimization import optimizer_names
from evals.runner import load_results
from evals.stats import compare_paired
from tool_selection.defaults import DEFAULT_MODEL, DEFAULT_SECONDARY_MODEL
from tool_selection.run_config import add_tracking_flag

SMALL, LARGE = DEFAULT_MODEL, DEFAULT_SECONDARY_MODEL
MAX_ESCALATION = 0.4  # the stuck-detection target: the secondary's accuracy with at most this share escalated


def _pct(value: float, low: float | None = None, high: float | None = None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    text = f"{100 * value:.1f}"
    if low is not None and high is not None and not math.isnan(low):
        text += f" [{100 * low:.0f}, {100 * high:.0f}]"
    return text


def _share(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.0f}%"


def _optimize_run(out_dir: Path, tracking_uri: str) -> dict[str, float]:
    """wall_time_s and model_calls of the newest MLflow optimize run that wrote ``out_dir``."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri)
    runs = mlflow.search_runs(experiment_names=["tool-selection"],
                              filter_string=f"params.program_dir = '{out_dir}'", order_by=["start_time DESC"],
                              max_results=1)
    if runs.empty:
        return {}
    row = runs.iloc[0]
    return {k: float(row.get(f"metrics.{k}", math.nan)) for k in ("wall_time_s", "model_calls")}


def zero_shot_results(suite: str, model: str, split: str = "test") -> pd.DataFrame | None:
    """Per-case rows of ``model`` alone on ``split``, from the stuck benchmark's harness runs."""
    runs = sorted((Path("runs/stuck_bench") / suite / "runs" / split).glob(f"{slug(model)}*"))
    return load_results(runs[0]) if runs else None


def paired_accuracy(before: pd.DataFrame | None, after: pd.DataFrame) -> str:
    """``after - before`` in accuracy points over the same cases, with its paired 95% interval and McNemar's p."""
    if before is None:
        return "-"
    table = compare_paired(before, after, {"accuracy": "full_match"})
    if table.empty:
        return "-"
    r = table.iloc[0]
    p_value = "" if r["p_value"] is None or pd.isna(r["p_value"]) else f", p={r['p_value']:.3f}"
    return (f"{100 * r['difference']:+.1f} [{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}]{p_value}"
            + ("" if r["significant"] else " (n.s.)"))


def optimization_rows(suite: str, tracking_uri: str) -> list[dict[str, str]]:
    rows = []
    small_zero_shot = zero_shot_results(suite, SMALL)
    baselines = Path("runs/stuck_bench") / suite / "baselines.csv"
    if baselines.exists():
        base = pd.read_csv(baselines).set_index(["model", "split"])
        for model in (SMALL, LARGE):
            if (model, "test") in base.index:
                r = base.loc[(model, "test")]
                rows.append({"suite": suite, "selector": f"{model.split('-')[-1]} zero-shot", "cases": int(r["cases"]),
                             "test accuracy % [95% CI]": _pct(r["accuracy"], r["accuracy_ci_low"],
                                                              r["accuracy_ci_high"]),
                             "dev %": _pct(base.loc[(model, "dev"), "accuracy"]) if (model, "dev") in base.index else "-",
                             "paired vs 0.5b zero-shot": "-", "wall time": "-", "model calls": "-"})
    for optimizer in optimizer_names():
        program = Path("programs") / f"{suite}-{optimizer}"
        summary_file = program / "test_eval" / "summary.json"
        if not summary_file.exists():
            continue
        summary = json.loads(summary_file.read_text())["summary"]
        manifest = json.loads((program / "manifest.json").read_text())
        cost = _optimize_run(program, tracking_uri)
        args = manifest.get("optimizer_args", {})
        rows.append({
            "suite": suite, "selector": f"0.5b + {optimizer} ({args.get('budget', '?')})",
            "cases": int(summary["cases"]),
            "test accuracy % [95% CI]": _pct(summary["accuracy"], summary.get("accuracy_ci_low"),
                                             summary.get("accuracy_ci_high")),
            "dev %": _pct(manifest["scores"].get("dev_accuracy", math.nan)),
            "paired vs 0.5b zero-shot": paired_accuracy(small_zero_shot, load_results(program / "test_eval")),
            "wall time": f"{cost['wall_time_s']:.0f} s" if cost else "-",
            "model calls": f"{cost['model_calls']:.0f}" if cost else "-",
        })
    return rows


def eval_rows(suite: str, split: str = "test") -> list[dict[str, str]]:
    """Each model alone on ``split``, from the benchmark's uncached harness runs."""
    rows = []
    for summary_file in sorted((Path("runs/stuck_bench") / suite / "runs" / split).glob("*/summary.json")):
        data = json.loads(summary_file.read_text())
        p, m = data["params"], data["summary"]
        rows.append({
            "suite (split)": f"{suite} ({split})", "model": p["model"].split("-")[-1], "cases": int(m["cases"]),
            "accuracy % [95% CI]": _pct(m["accuracy"], m["accuracy_ci_low"], m["accuracy_ci_high"]),
            "tool-set exact match %": _pct(m["tool_exact_match"], m["tool_exact_match_ci_low"],
                                           m["tool_exact_match_ci_high"]),
            "abstention accuracy %": _pct(m["abstention_accuracy"]),
            "false abstention %": _pct(m["false_abstention_rate"]),
            "parse failures %": _pct(m["parse_failure_rate"]),
            "s/case": f"{m['latency_s']:.1f}",
            "tokens in / out": f"{m['input_tokens']:.0f} / {m['output_tokens']:.0f}",
        })
    return rows


def routed_vs_secondary(cases: pd.DataFrame, detector: str, threshold: float) -> str:
    """The cascade at ``threshold`` (delegate: stuck cases take the secondary's answer) against the secondary
    alone, paired over the same test cases."""
    score = cases.get(f"score_{detector}")
    if score is None or cases.empty:
        return "-"
    escalated = score.fillna(1.0) >= threshold  # as the sweep counts an unscored case: stuck
    routed = cases["primary_correct"].where(~escalated, cases["secondary_correct"])
    return paired_accuracy(cases.assign(full_match=cases["secondary_correct"]), cases.assign(full_match=routed))


def stuck_rows(suite: str) -> list[dict[str, str]]:
    path = Path("runs/stuck_bench") / suite / "summary.csv"
    if not path.exists():
        return []
    curves = pd.read_parquet(path.parent / "curves.parquet")
    cases = pd.read_parquet(path.parent / "cases.parquet")
    rows = []
    for r in pd.read_csv(path).to_dict("records"):
        if not r.get("available", True):
            continue
        test_curve = curves[(curves["detector"] == r["detector"]) & (curves["split"] == "test")]
        within = test_curve[test_curve["escalation_rate"] <= MAX_ESCALATION + 1e-9]
        rows.append({
            "suite": suite, "detector": r["detector"], "AUROC": f"{r['test_auroc']:.2f}",
            "APGR": f"{r['test_apgr']:.2f}",
            "esc. for 50% / 80% of gap": f"{_share(r['test_escalation_for_50pct_gap'])} / "
                                         f"{_share(r['test_escalation_for_80pct_gap'])}",
            "oracle esc.": _share(r.get("test_oracle_escalation", math.nan)),
            f"best test % at <= {MAX_ESCALATION:.0%} esc.": _pct(within["accuracy"].max()),
            "threshold (dev)": f"{r['recommended_threshold']:.3f}",
            "test accuracy %": _pct(r["test_accuracy"], r["test_accuracy_ci_low"], r["test_accuracy_ci_high"]),
            "escalated": _share(r["test_escalation_rate"]),
            "paired vs 1.5B alone": routed_vs_secondary(
                cases[(cases["split"] == "test") & (cases["pair"] == r["pair"])], r["detector"],
                r["recommended_threshold"]),
            "cost vs 1.5B": f"{r['test_cost_vs_secondary']:.2f}x",
            "0.5B / 1.5B test %": f"{100 * r['test_primary_accuracy']:.1f} / {100 * r['test_secondary_accuracy']:.1f}",
        })
    return rows


def markdown(rows: list[dict[str, str]]) -> str:
    if not rows:
        return "(no results)"
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", help="Suite slugs as measure_suite.sh names them (e.g. ecommerce, bfcl).")
    add_tracking_flag(parser)
    args = parser.parse_args(argv)
    print("## Each model alone\n")
    print(markdown([row for s in args.suites for row in eval_rows(s)]))
    print("\n## Optimization\n")
    print(markdown([row for s in args.suites for row in optimization_rows(s, args.tracking_uri)]))
    print("\n## Stuck detection\n")
    print(markdown([row for s in args.suites for row in stuck_rows(s)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
