"""The stuck benchmark's figures, per pair on the test split: accuracy against escalation rate per detector (with
the random and the perfect router), and the cost-quality frontier (in measured seconds per case where the rows carry
them, else in price)."""

from __future__ import annotations

import math
from pathlib import Path

from evals.naming import slug
from evals.stuck_bench.routing import perfect_router_curve
from evals.stuck_bench.tables import BenchResult

__all__ = ["plot"]


def plot(result: BenchResult) -> list[Path]:
    """Per pair (test split): accuracy vs escalation rate per detector, and the cost-quality curve. Drawn on bare
    ``Figure``s (rendered by Agg), so that no global pyplot backend is touched."""
    from matplotlib.figure import Figure

    paths = []
    test = result.sweep["split"].iloc[-1] if len(result.sweep) else None
    for label, sweep in result.sweep[result.sweep["split"] == test].groupby("pair", sort=False):
        stem = slug(label.replace(" -> ", "__"))
        p_acc, s_acc = sweep["primary_accuracy"].iloc[0], sweep["secondary_accuracy"].iloc[0]
        fig = Figure(figsize=(6.5, 4.5))
        ax = fig.subplots()
        for detector, rows in sweep.groupby("detector", sort=False):
            curve = result.curves.query("pair == @label and detector == @detector and split == @test")
            line, = ax.plot(curve["escalation_rate"], curve["accuracy"], label=detector, alpha=0.8)
            ax.scatter(rows["escalation_rate"], rows["accuracy"], s=10, color=line.get_color())
        ax.plot([0, 1], [p_acc, s_acc], "k:", label="random router")
        cases = result.cases.query("pair == @label and split == @test")
        ax.plot(*perfect_router_curve(cases["primary_correct"], cases["secondary_correct"]), color="grey", lw=0.8,
                ls="-.", label="perfect detector")
        ax.axhline(s_acc, color="grey", lw=0.8, ls="--")
        ax.set(xlabel="escalation rate", ylabel="accuracy", title=f"{label} ({test})", xlim=(0, 1))
        ax.legend(fontsize=8)
        fig.tight_layout()
        paths.append(result.out_dir / f"accuracy_vs_escalation_{stem}.png")
        fig.savefig(paths[-1], dpi=110)

        fig = Figure(figsize=(6.5, 4.5))
        ax = fig.subplots()
        measure = "seconds" if sweep["seconds_vs_secondary"].notna().all() else "cost"
        for detector, rows in sweep.groupby("detector", sort=False):
            ordered = rows.sort_values(f"{measure}_vs_secondary")
            ax.plot(ordered[f"{measure}_vs_secondary"], ordered["accuracy"], marker="o", ms=3, label=detector)
        base = result.baselines[result.baselines["split"] == test].set_index("model")
        s_spent = base.loc[sweep["secondary"].iloc[0], measure]
        for role, color in (("primary", "black"), ("secondary", "grey")):
            name = sweep[role].iloc[0]
            x = base.loc[name, measure] / s_spent if s_spent > 0 else math.nan
            ax.scatter([x], [base.loc[name, "accuracy"]], marker="*", s=140, color=color, zorder=3,
                       label=f"{role} alone")
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        what = "measured seconds per case" if measure == "seconds" else "cost"
        ax.set(xlabel=f"{what} relative to always using the secondary", ylabel="accuracy",
               title=f"cost-quality: {label} ({test})")
        ax.legend(fontsize=8)
        fig.tight_layout()
        paths.append(result.out_dir / f"cost_quality_{stem}.png")
        fig.savefig(paths[-1], dpi=110)
    return paths
