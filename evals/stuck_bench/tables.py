"""From each model's per-case results to the benchmark's tables: per-case routing tables, threshold sweeps,
routing curves, the per-detector summary with the threshold chosen on dev, and the recommendation per pair.
Pandas only: no models and no files (``bench`` runs the models, ``plots`` and ``report`` show the tables)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from evals.metrics import bootstrap_ci
from evals.stuck_bench.routing import (
    RoutingMetrics,
    cheapest_by,
    recommend,
    routing_curve,
    routing_metrics,
    sweep_thresholds,
    threshold_candidates,
)
from evals.stuck_bench.verdict import verdict
from tool_selection.collaboration import CostFn

__all__ = [
    "BenchResult",
    "BenchTables",
    "DetectorSplit",
    "assemble",
    "baselines",
    "case_table",
    "overhead_column",
    "overhead_seconds_column",
    "pair_label",
    "price",
    "recommendations",
    "score_column",
    "summarize",
]

SWEEP_COLUMNS = ["pair", "primary", "secondary", "detector", "split", "threshold", "accuracy", "accuracy_ci_low",
                 "accuracy_ci_high", "escalation_rate", "cost", "cost_vs_secondary", "seconds",
                 "seconds_vs_secondary", "pgr", "primary_accuracy", "secondary_accuracy", "cases"]
RECOMMENDATION_COLUMNS = ("pair", "primary", "secondary", "detector", "recommended_threshold", "criterion_met_on_dev",
                          "test_accuracy", "test_accuracy_ci_low", "test_accuracy_ci_high", "test_escalation_rate",
                          "test_cost_vs_secondary", "test_seconds_vs_secondary", "test_pays", "test_verdict",
                          "test_primary_accuracy", "test_secondary_accuracy")


@dataclass
class BenchResult:
    """Tidy tables of a benchmark run, and where they were saved."""

    sweep: pd.DataFrame            # one row per pair, detector, split and threshold
    summary: pd.DataFrame          # one row per pair and detector
    recommendations: pd.DataFrame  # one row per pair: the best detector and threshold (dev) and its test metrics
    curves: pd.DataFrame           # every reachable operating point, per pair, detector and split
    cases: pd.DataFrame            # per case: both models' correctness and cost, every detector's score
    baselines: pd.DataFrame        # each model alone, per split: accuracy with CI, mean cost per case
    out_dir: Path
    live: pd.DataFrame | None = None
    mlflow_run_id: str | None = None
    notes: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


class BenchTables(NamedTuple):
    """What ``assemble`` makes of the per-model results (the tables of a ``BenchResult``), and its notes."""

    sweep: pd.DataFrame
    summary: pd.DataFrame
    recommendations: pd.DataFrame
    curves: pd.DataFrame
    cases: pd.DataFrame
    baselines: pd.DataFrame
    notes: list[str]


@dataclass(frozen=True)
class DetectorSplit:
    """One detector on one split of one pair: the per-case table it routes and, when it scored any case, how well."""

    pair: str
    primary: str
    secondary: str
    detector: str
    split: str
    cases: pd.DataFrame
    metrics: RoutingMetrics | None  # None: the detector was unavailable on every case

    @property
    def score(self) -> str:
        return score_column(self.detector)

    @property
    def overhead(self) -> str:
        return overhead_column(self.detector)

    @property
    def overhead_seconds(self) -> str:
        return overhead_seconds_column(self.detector)

    def sweep(self, thresholds: Sequence[float]) -> pd.DataFrame:
        """``sweep_thresholds`` of this detector's scores on this split."""
        return sweep_thresholds(self.cases, self.score, thresholds, overhead=self.overhead,
                                overhead_seconds=self.overhead_seconds)


def pair_label(primary: str, secondary: str) -> str:
    return f"{primary} -> {secondary}"


def score_column(detector: str) -> str:
    """The per-case table's column of a detector's scores."""
    return f"score_{detector}"


def overhead_column(detector: str) -> str:
    """The per-case table's column of what a detector's own model calls cost (e.g. consistency samples)."""
    return f"overhead_cost_{detector}"


def overhead_seconds_column(detector: str) -> str:
    """The per-case table's column of a detector's own seconds."""
    return f"overhead_seconds_{detector}"


def _column(rows: pd.DataFrame, name: str, default: float) -> pd.Series:
    return pd.to_numeric(rows[name], errors="coerce") if name in rows else pd.Series(default, index=rows.index)


def price(table: pd.DataFrame, name: str, cost_fn: CostFn, detectors: Sequence[str]) -> pd.DataFrame:
    """Adds each case's cost from the catalog (``cost``) and the cost of detector calls (``stuck_*_overhead_cost``)."""
    table["cost"] = [float(cost_fn(name, int(i), int(o)))
                     for i, o in zip(table["input_tokens"], table["output_tokens"])]
    for d in detectors:
        tokens = table.get(f"stuck_{d}_overhead_input_tokens")
        if tokens is not None:
            outputs = table[f"stuck_{d}_overhead_output_tokens"].fillna(0)
            table[f"stuck_{d}_overhead_cost"] = [float(cost_fn(name, int(i), int(o))) if (i or o) else 0.0
                                                 for i, o in zip(tokens.fillna(0), outputs)]
    return table


def case_table(primary: pd.DataFrame, secondary: pd.DataFrame, detectors: Sequence[str]) -> pd.DataFrame:
    """Per case of one split: both models' correctness, cost and seconds (the primary's without its detectors'),
    each detector's score, overhead cost and seconds. Rows without ``latency_s`` have NaN seconds."""
    left = primary.set_index("id")
    right = secondary.set_index("id").loc[left.index]
    table = pd.DataFrame({
        "id": left.index, "tags": left["tags"].to_numpy(),
        "primary_correct": left["full_match"].to_numpy(dtype=float),
        "secondary_correct": right["full_match"].to_numpy(dtype=float),
        "primary_cost": left["cost"].to_numpy(dtype=float), "secondary_cost": right["cost"].to_numpy(dtype=float),
        "primary_seconds": (_column(left, "latency_s", math.nan)
                            - _column(left, "stuck_seconds", 0.0).fillna(0.0)).to_numpy(dtype=float),
        "secondary_seconds": _column(right, "latency_s", math.nan).to_numpy(dtype=float),
    })
    for d in detectors:
        table[score_column(d)] = _column(left, f"stuck_{d}", math.nan).to_numpy(dtype=float)
        table[overhead_column(d)] = _column(left, f"stuck_{d}_overhead_cost", 0.0).fillna(0.0).to_numpy(dtype=float)
        table[overhead_seconds_column(d)] = _column(left, f"stuck_{d}_seconds", 0.0).fillna(0.0).to_numpy(dtype=float)
    return table.reset_index(drop=True)


def baselines(per_model: dict[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Each model alone, per split: accuracy with its CI, mean cost, seconds (without detectors) and tokens per
    case."""
    rows = []
    for (name, split), table in per_model.items():
        mean, low, high = bootstrap_ci(table["full_match"])
        seconds = _column(table, "latency_s", math.nan) - _column(table, "stuck_seconds", 0.0).fillna(0.0)
        rows.append({"model": name, "split": split, "cases": len(table), "accuracy": mean,
                     "accuracy_ci_low": low, "accuracy_ci_high": high, "cost": float(table["cost"].mean()),
                     "seconds": float(seconds.mean()),
                     "input_tokens": float(table["input_tokens"].mean()),
                     "output_tokens": float(table["output_tokens"].mean())})
    return pd.DataFrame(rows)


def assemble(names: Sequence[tuple[str, str]], splits: Sequence[str], detectors: Sequence[str],
             grid: Sequence[float], per_model: dict[tuple[str, str], pd.DataFrame]) -> BenchTables:
    """Every table of the benchmark from each model's priced per-case results (``per_model[(model, split)]``)."""
    sweeps, runs, curves, cases, notes = [], [], [], [], []
    for primary, secondary in names:
        label = pair_label(primary, secondary)
        for split in splits:
            table = case_table(per_model[(primary, split)], per_model[(secondary, split)], detectors)
            cases.append(table.assign(pair=label, primary=primary, secondary=secondary, split=split))
            p_acc, s_acc = table["primary_correct"].mean(), table["secondary_correct"].mean()
            for d in detectors:
                scores = table[score_column(d)]
                key = {"pair": label, "primary": primary, "secondary": secondary, "detector": d, "split": split}
                if scores.isna().all():
                    if split == splits[-1]:
                        reason = per_model[(primary, split)].get(f"stuck_{d}_unavailable", pd.Series(["?"])).dropna()
                        notes.append(f"{label}: detector {d} was unavailable "
                                     f"({reason.iloc[0] if len(reason) else 'no scores'}); left out.")
                    runs.append(DetectorSplit(**key, cases=table, metrics=None))
                    continue
                if scores.isna().any() and split == splits[-1]:
                    notes.append(f"{label}: detector {d} could not score {int(scores.isna().sum())} case(s) "
                                 f"({split}); they count as stuck.")
                run = DetectorSplit(**key, cases=table, metrics=None)
                sweeps.append(run.sweep(grid).assign(**key, primary_accuracy=p_acc, secondary_accuracy=s_acc,
                                                     cases=len(table)))
                curve = routing_curve(table["primary_correct"], table["secondary_correct"], scores.fillna(1.0),
                                      table["primary_cost"], table["secondary_cost"], table[run.overhead])
                seconds = routing_curve(table["primary_correct"], table["secondary_correct"], scores.fillna(1.0),
                                        table["primary_seconds"], table["secondary_seconds"],
                                        table[run.overhead_seconds])["cost"]
                curves.append(curve.assign(seconds=seconds.to_numpy(), **key))
                runs.append(dataclasses.replace(run, metrics=routing_metrics(table, score_column(d), curve)))
    summary = summarize(runs, splits, grid)
    sweep = pd.concat(sweeps, ignore_index=True)[SWEEP_COLUMNS] if sweeps else pd.DataFrame(columns=SWEEP_COLUMNS)
    return BenchTables(sweep=sweep, summary=summary, recommendations=recommendations(summary),
                       curves=pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(),
                       cases=pd.concat(cases, ignore_index=True), baselines=baselines(per_model), notes=notes)


def summarize(runs: Sequence[DetectorSplit], splits: Sequence[str], grid: Sequence[float]) -> pd.DataFrame:
    """One row per pair and detector: the metrics per split (``dev_*``, ``test_*``), and the threshold chosen on
    dev (among ``grid`` and every distinct dev score) applied to test."""
    dev, test = splits[0], splits[-1]
    groups: dict[tuple[str, str], dict[str, DetectorSplit]] = {}
    for run in runs:
        groups.setdefault((run.pair, run.detector), {})[run.split] = run
    rows = []
    for (label, detector), by_split in groups.items():
        first = by_split[test]
        row = {"pair": label, "primary": first.primary, "secondary": first.secondary, "detector": detector,
               "available": all(r.metrics is not None for r in by_split.values())}
        if row["available"]:
            for split, run in by_split.items():
                for tag in [t for t, name in (("dev", dev), ("test", test)) if name == split]:
                    row.update({f"{tag}_{metric}": value for metric, value in dataclasses.asdict(run.metrics).items()})
            row.update(_recommended(by_split[dev], by_split[test], grid))
        rows.append(row)
    return pd.DataFrame(rows)


def _recommended(dev_run: DetectorSplit, test_run: DetectorSplit, grid: Sequence[float]) -> dict:
    """The threshold chosen on dev (``recommend``), what it gives on test, and the test verdict."""
    candidates = threshold_candidates(dev_run.cases[dev_run.score], grid)
    dev_sweep = dev_run.sweep(candidates)
    chosen, met = recommend(dev_sweep, dev_run.metrics.secondary_accuracy)
    threshold = float(chosen["threshold"])
    applied = test_run.sweep([threshold]).iloc[0]
    judged = verdict(test_run.cases, test_run.detector, test_run.score, threshold,
                     overhead_seconds=test_run.overhead_seconds)
    c = judged.comparison
    return {
        "recommended_threshold": threshold, "criterion_met_on_dev": met, "cheapest_by": cheapest_by(dev_sweep),
        "dev_accuracy_at_threshold": float(chosen["accuracy"]), "dev_cost_at_threshold": float(chosen["cost"]),
        "dev_seconds_at_threshold": float(chosen["seconds"]),
        "test_accuracy": float(applied["accuracy"]), "test_accuracy_ci_low": float(applied["accuracy_ci_low"]),
        "test_accuracy_ci_high": float(applied["accuracy_ci_high"]),
        "test_escalation_rate": float(applied["escalation_rate"]),
        "test_cost_vs_secondary": float(applied["cost_vs_secondary"]),
        "test_seconds": judged.seconds, "test_secondary_seconds": judged.secondary_seconds,
        "test_seconds_vs_secondary": judged.seconds_vs_secondary,
        "test_vs_secondary": c.difference, "test_vs_secondary_ci_low": c.ci_low,
        "test_vs_secondary_ci_high": c.ci_high, "test_vs_secondary_p": c.p_value,
        "test_break_even_escalation": judged.break_even, "test_pays": judged.pays,
        "test_out_of_reach": judged.out_of_reach, "test_verdict": judged.line(),
    }


def recommendations(summary: pd.DataFrame) -> pd.DataFrame:
    """Per pair, the detector whose dev-chosen threshold best meets the criterion (judged on dev)."""
    rows = []
    available = summary[summary["available"]] if "available" in summary else summary
    for _label, group in available.groupby("pair", sort=False):
        met = group[group["criterion_met_on_dev"]]
        spent = ("dev_seconds_at_threshold" if (group["cheapest_by"] == "seconds").all()
                 else "dev_cost_at_threshold")
        if len(met):
            best = met.sort_values([spent, "dev_accuracy_at_threshold"], ascending=[True, False])
        else:
            best = group.sort_values(["dev_accuracy_at_threshold", spent], ascending=[False, True])
        best = best.iloc[0]
        rows.append({k: best[k] for k in RECOMMENDATION_COLUMNS})
    return pd.DataFrame(rows)
