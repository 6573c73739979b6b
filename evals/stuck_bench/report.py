"""The stuck benchmark's results in words: the end-of-run text report, and the flat metrics logged to MLflow."""

from __future__ import annotations

import pandas as pd

from evals.naming import slug
from evals.stuck_bench.routing import RECOMMENDATION_CRITERION
from evals.stuck_bench.tables import BenchResult

__all__ = ["format_report", "mlflow_metrics"]


def format_report(result: BenchResult) -> str:
    """The end-of-run report: per pair, each model alone and a summary row per detector."""
    lines = []
    test = result.summary
    for label, group in test.groupby("pair", sort=False):
        lines.append(f"\n== {label}")
        for role in ("primary", "secondary"):
            name = group[role].iloc[0]
            base = result.baselines[result.baselines["model"] == name].set_index("split")
            cells = ", ".join(f"{split} {100 * r['accuracy']:.1f}% [{100 * r['accuracy_ci_low']:.1f}, "
                              f"{100 * r['accuracy_ci_high']:.1f}] cost {r['cost']:.4g}, {r['seconds']:.2f} s/case"
                              for split, r in base.iterrows())
            lines.append(f"   {role:<9} {name}: {cells}")
        shown = group[group["available"]]
        if len(shown):
            table = pd.DataFrame({
                "detector": shown["detector"],
                "AUROC": shown.get("test_auroc"), "APGR": shown.get("test_apgr"),
                "esc@50%gap": shown.get("test_escalation_for_50pct_gap"),
                "esc@80%gap": shown.get("test_escalation_for_80pct_gap"),
                "oracle esc": shown.get("test_oracle_escalation"),
                "threshold(dev)": shown["recommended_threshold"],
                "met": shown["criterion_met_on_dev"],
                "test acc": shown["test_accuracy"], "test esc": shown["test_escalation_rate"],
                "cost/secondary": shown["test_cost_vs_secondary"],
                "s/secondary": shown["test_seconds_vs_secondary"],
                "pays": shown["test_pays"].map({True: "yes", False: "no"}),
            })
            lines.append(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            lines.append("   verdict on test, per detector at its dev threshold:")
            lines += [f"   - {line}" for line in shown["test_verdict"]]
        missing = group[~group["available"]]["detector"].tolist()
        if missing:
            lines.append(f"   unavailable: {', '.join(missing)}")
    if len(result.recommendations):
        lines.append("\nRecommended per pair (" + RECOMMENDATION_CRITERION + "):")
        for row in result.recommendations.to_dict("records"):
            lines.append(f"   {row['pair']}: {row['detector']} at {row['recommended_threshold']:.2f} -> test accuracy "
                         f"{100 * row['test_accuracy']:.1f}% (secondary {100 * row['test_secondary_accuracy']:.1f}%), "
                         f"escalation {100 * row['test_escalation_rate']:.0f}%, "
                         f"cost {row['test_cost_vs_secondary']:.2f}x, seconds "
                         f"{row['test_seconds_vs_secondary']:.2f}x the secondary's; "
                         f"{'pays' if row['test_pays'] else 'does not pay'}")
    if result.live is not None:
        lines.append("\nLive protocol runs:")
        lines.append(result.live.drop(columns=["run_dir"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    lines += [f"\nnote: {n}" for n in result.notes]
    return "\n".join(lines)


def mlflow_metrics(result: BenchResult) -> dict[str, float]:
    """The run's numbers as flat MLflow metrics: ``PRIMARY__SECONDARY.DETECTOR.test_apgr``, ``MODEL.test_accuracy``,
    ``PRIMARY__SECONDARY.live_STRATEGY.accuracy``, ..."""
    metrics: dict[str, float] = {}
    for row in result.summary.to_dict("records"):
        if not row.get("available"):
            continue
        prefix = f"{slug(row['primary'])}__{slug(row['secondary'])}.{row['detector']}"
        for key, value in row.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or key.endswith("_cost"):
                continue
            if key.startswith(("test_", "dev_", "recommended")):
                metrics[f"{prefix}.{key}"] = float(value)
    for row in result.baselines.to_dict("records"):
        metrics[f"{slug(row['model'])}.{row['split']}_accuracy"] = row["accuracy"]
        metrics[f"{slug(row['model'])}.{row['split']}_cost"] = row["cost"]
    if result.live is not None:
        for row in result.live.to_dict("records"):
            prefix = f"{slug(row['primary'])}__{slug(row['secondary'])}.live_{row['strategy']}"
            for key in ("accuracy", "escalation_rate", "cost_vs_secondary"):
                metrics[f"{prefix}.{key}"] = row[key]
    return metrics
