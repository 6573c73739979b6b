"""The stuck-detection benchmark: which detector, at which threshold, routes best for each model pair.

Each model is evaluated alone once per split through the harness (``evaluate``); a primary runs as a
``StuckScoredSelector``, which adds every detector's score for its decision to the case's row. Escalation by
``delegate`` is then exactly computable offline from the two per-case tables: at threshold t a case keeps the
primary's answer when its score is below t and takes the secondary's otherwise, and costs the primary's call
(plus any detector overhead, e.g. consistency samples) plus the secondary's call when escalated. So thresholds
are swept without running the models again. The ``guide`` strategy changes what the primary answers and needs
live runs: ``live_threshold=`` runs ``ModelCollaborationProtocol`` over the test split at one threshold.

Reported per pair and detector: accuracy, escalation rate and cost at each threshold (the cost-quality curve);
AUROC of the score for the primary's errors; APGR (RouteLLM's average performance gap recovered: the area under
``(accuracy(x) - primary) / (secondary - primary)`` over escalation rate x in [0, 1]; 0.5 for a random router);
the escalation rate needed to recover 50% and 80% of the gap; and the recommended threshold, chosen on dev and
reported on test (``RECOMMENDATION_CRITERION``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import dspy
import numpy as np
import pandas as pd
from dspy.utils.usage_tracker import UsageTracker

from evals.evaluate import evaluate
from evals.metrics import bootstrap_ci
from evals.runner import TABLE_FILE, Evaluator
from evals.suite import Suite, load_suite
from evals.tracking import git_commit, log_run, write_json
from tool_selection.collaboration import (
    CostFn,
    ModelCollaborationProtocol,
    catalog_cost,
    check_cost,
    model_name,
    resolve_lm,
)
from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter
from tool_selection.strategies import DEFAULT_STRATEGY, parse_strategy
from tool_selection.stuck import (
    DETECTORS,
    Attempt,
    DetectorUnavailable,
    StuckDetector,
    capture_generation,
    make_detector,
    make_sampler,
)
from tool_selection.toolset import ToolSet

__all__ = [
    "GUIDE_NOTE",
    "RECOMMENDATION_CRITERION",
    "BenchResult",
    "StuckScoredSelector",
    "apgr",
    "auroc",
    "escalation_to_recover",
    "oracle_escalation",
    "parse_thresholds",
    "perfect_router_curve",
    "recommend",
    "routing_curve",
    "run_stuck_bench",
    "sweep_thresholds",
    "threshold_candidates",
]

log = logging.getLogger(__name__)

RECOMMENDATION_CRITERION = ("the cheapest threshold whose accuracy is within 1 point of the secondary's accuracy; "
                            "if none, the one with the best accuracy (chosen on dev among the grid and every "
                            "distinct dev score, reported on test)")
GUIDE_NOTE = ("Sweeps are the delegate strategy, computed offline from the per-case tables of each model alone. "
              "The guide strategy changes the primary's answer and needs live runs "
              "(--live-threshold T --strategy guide).")
TOLERANCE = 0.01
DEFAULT_BENCH_DIR = Path("runs") / "stuck_bench"
Model = str | dspy.BaseLM


# ------------------------------------------------------------------------------------------------ scoring program


class StuckScoredSelector(MultiToolSelector):
    """A ``MultiToolSelector`` that also scores its decision with each detector. Scores go to ``row_extras``
    (``stuck_<name>``, ``stuck_<name>_evidence``; NaN with ``stuck_<name>_unavailable`` where a detector cannot
    score); detector calls (consistency samples) are tracked apart, as ``stuck_<name>_overhead_*_tokens``, so
    the harness's token counts stay those of the decision itself."""

    def __init__(self, detectors: Sequence[StuckDetector], tools: ToolRegistry | ToolSet | None = None, *,
                 constrain: bool = True, strategy: str = DEFAULT_STRATEGY):
        super().__init__(tools, constrain=constrain, strategy=strategy)
        ordered = sorted(detectors, key=lambda d: d.name == "combined")  # combined reuses the others' signals
        self.detectors = ordered

    @classmethod
    def wrap(cls, selector: MultiToolSelector, detectors: Sequence[StuckDetector]) -> StuckScoredSelector:
        """The same (possibly compiled) selector, with detectors."""
        scored = cls(detectors, selector.tools, constrain=selector.constrain, strategy=selector.strategy_name)
        scored.load_state(selector.dump_state())
        return scored

    def forward(self, request: str, tools: ToolRegistry | ToolSet | None = None) -> dspy.Prediction:
        with capture_generation() as captured:
            prediction = super().forward(request, tools)
        registry = self._registry(tools)
        attempt = Attempt(request=request, decision=prediction.decision, tools=registry,
                          generation=captured.generation,
                          sampler=make_sampler(lambda r, t: MultiToolSelector.forward(self, r, t), request, registry))
        extras: dict[str, Any] = {}
        with dspy.context(usage_tracker=UsageTracker()):  # detector calls are not the decision's cost
            for detector in self.detectors:
                extras.update(_score(detector, attempt))
        prediction.row_extras = extras
        return prediction


def _score(detector: StuckDetector, attempt: Attempt) -> dict[str, Any]:
    key = f"stuck_{detector.name}"
    try:
        signal = detector(attempt)
    except DetectorUnavailable as error:
        return {key: math.nan, f"{key}_unavailable": str(error)}
    except Exception as error:
        return {key: math.nan, f"{key}_unavailable": f"{type(error).__name__}: {error}"[:500]}
    parts = signal.evidence.get("components", {}) if detector.name == "combined" else {}
    used = [attempt.signals[n] for n in parts] or [signal]
    return {
        key: signal.score,
        f"{key}_evidence": json.dumps(signal.evidence, ensure_ascii=False, default=str),
        f"{key}_overhead_input_tokens": sum(int(s.evidence.get("input_tokens", 0)) for s in used),
        f"{key}_overhead_output_tokens": sum(int(s.evidence.get("output_tokens", 0)) for s in used),
    }


# ------------------------------------------------------------------------------------------------ sweep math


def parse_thresholds(text: str) -> list[float]:
    """``START:STOP:STEP`` (inclusive) or a comma-separated list; every value within [0, 1]."""
    try:
        if ":" in text:
            start, stop, step = (float(p) for p in text.split(":"))
            if step <= 0:
                raise ValueError("the step must be positive")
            values = list(np.round(np.arange(start, stop + step / 2, step), 10))
        else:
            values = [float(p) for p in text.split(",") if p.strip()]
    except ValueError as error:
        raise ToolSelectionError(f"Bad thresholds {text!r} ({error}): write START:STOP:STEP such as 0:1:0.05, "
                                 "or a list such as 0.2,0.5,0.8.") from None
    bad = [v for v in values if not 0.0 <= v <= 1.0]
    if not values or bad:
        raise ToolSelectionError(f"Thresholds must lie within [0, 1] (detector scores do); got {bad or 'none'} "
                                 f"from {text!r}.")
    return sorted(set(float(v) for v in values))


def auroc(scores: Sequence[float], errors: Sequence[float]) -> float:
    """Area under the ROC curve of ``scores`` for predicting ``errors`` (1 = the primary was wrong); ties count
    half (Mann-Whitney). NaN when all cases are errors or none is."""
    s, e = np.asarray(scores, dtype=float), np.asarray(errors, dtype=float) > 0.5
    positives, negatives = int(e.sum()), int((~e).sum())
    if positives == 0 or negatives == 0:
        return math.nan
    ranks = pd.Series(s).rank(method="average").to_numpy()
    return float((ranks[e].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def routing_curve(primary_correct: Sequence[float], secondary_correct: Sequence[float], scores: Sequence[float],
                  primary_cost: Sequence[float] | None = None, secondary_cost: Sequence[float] | None = None,
                  overhead_cost: Sequence[float] | None = None) -> pd.DataFrame:
    """Every operating point a threshold can reach: escalating the cases whose score is at least each distinct
    score, from none (escalation rate 0) to all (1). Columns: threshold, escalation_rate, accuracy, cost."""
    p, s, x = (np.asarray(v, dtype=float) for v in (primary_correct, secondary_correct, scores))
    n = len(p)
    pc = np.zeros(n) if primary_cost is None else np.asarray(primary_cost, dtype=float)
    sc = np.zeros(n) if secondary_cost is None else np.asarray(secondary_cost, dtype=float)
    oc = np.zeros(n) if overhead_cost is None else np.asarray(overhead_cost, dtype=float)
    points = [(math.inf, 0.0, float(p.mean()), float((pc + oc).mean()))]
    for t in sorted(set(x.tolist()), reverse=True):
        escalated = x >= t
        points.append((t, float(escalated.mean()), float(np.where(escalated, s, p).mean()),
                       float((pc + oc + escalated * sc).mean())))
    return pd.DataFrame(points, columns=["threshold", "escalation_rate", "accuracy", "cost"])


def _gap(primary_accuracy: float, secondary_accuracy: float) -> float:
    return secondary_accuracy - primary_accuracy


def apgr(curve: pd.DataFrame, primary_accuracy: float, secondary_accuracy: float) -> float:
    """Average performance gap recovered: the area under ``(accuracy - primary) / (secondary - primary)`` over
    escalation rate in [0, 1] (trapezoids between reachable points, i.e. ties broken at random). 0.5 is a random
    router, 1 recovers the whole gap at once; NaN when the secondary is not more accurate than the primary."""
    gap = _gap(primary_accuracy, secondary_accuracy)
    if not gap > 0:
        return math.nan
    points = curve.sort_values(["escalation_rate", "accuracy"])
    pgr = (points["accuracy"].to_numpy() - primary_accuracy) / gap
    return float(np.trapezoid(pgr, points["escalation_rate"].to_numpy()))


def escalation_to_recover(curve: pd.DataFrame, primary_accuracy: float, secondary_accuracy: float,
                          fraction: float) -> float:
    """The smallest reachable escalation rate that recovers ``fraction`` of the accuracy gap (NaN: no gap)."""
    gap = _gap(primary_accuracy, secondary_accuracy)
    if not gap > 0:
        return math.nan
    reached = curve[(curve["accuracy"] - primary_accuracy) / gap >= fraction - 1e-12]
    return float(reached["escalation_rate"].min()) if len(reached) else math.nan


def oracle_escalation(primary_correct: Sequence[float], secondary_correct: Sequence[float]) -> float:
    """The escalation rate at which a perfect detector reaches the secondary's accuracy: each escalated case can
    gain at most one correct answer, so no detector gets there escalating less than the accuracy gap."""
    p, s = np.asarray(primary_correct, dtype=float), np.asarray(secondary_correct, dtype=float)
    return float(max(0.0, s.mean() - p.mean())) if len(p) else math.nan


def perfect_router_curve(primary_correct: Sequence[float], secondary_correct: Sequence[float]
                         ) -> tuple[list[float], list[float]]:
    """(escalation rates, accuracies) of a detector that escalates first the cases only the secondary gets right,
    then those both get equally, last those only the primary gets right: the ceiling of every curve."""
    p, s = np.asarray(primary_correct, dtype=float) > 0.5, np.asarray(secondary_correct, dtype=float) > 0.5
    n = max(len(p), 1)
    gain, loss = float((s & ~p).sum()) / n, float((p & ~s).sum()) / n
    base = float(p.mean()) if len(p) else math.nan
    return [0.0, gain, 1.0 - loss, 1.0], [base, base + gain, base + gain, base + gain - loss]


def sweep_thresholds(table: pd.DataFrame, score: str, thresholds: Sequence[float], *,
                     overhead: str | None = None, seed: int = 0) -> pd.DataFrame:
    """Routed accuracy (with its bootstrap CI), escalation rate and mean cost per case at each threshold.

    ``table`` has one row per case: ``primary_correct``, ``secondary_correct``, ``primary_cost``,
    ``secondary_cost`` and the ``score`` column (NaN counts as stuck); ``overhead`` names a detector-cost column."""
    scores = table[score].fillna(1.0).to_numpy(dtype=float)
    p, s = table["primary_correct"].to_numpy(dtype=float), table["secondary_correct"].to_numpy(dtype=float)
    pc, sc = table["primary_cost"].to_numpy(dtype=float), table["secondary_cost"].to_numpy(dtype=float)
    oc = table[overhead].fillna(0.0).to_numpy(dtype=float) if overhead else np.zeros(len(table))
    secondary_cost = float(sc.mean())
    gap = _gap(float(p.mean()), float(s.mean()))
    rows = []
    for t in thresholds:
        escalated = scores >= t
        correct = np.where(escalated, s, p)
        accuracy, low, high = bootstrap_ci(correct, seed=seed)
        cost = float((pc + oc + escalated * sc).mean())
        rows.append({
            "threshold": float(t), "accuracy": accuracy, "accuracy_ci_low": low, "accuracy_ci_high": high,
            "escalation_rate": float(escalated.mean()), "cost": cost,
            "cost_vs_secondary": cost / secondary_cost if secondary_cost > 0 else math.nan,
            "pgr": (accuracy - p.mean()) / gap if gap > 0 else math.nan,
        })
    return pd.DataFrame(rows)


def threshold_candidates(scores: pd.Series, grid: Sequence[float]) -> list[float]:
    """Thresholds the recommendation may choose: the grid, and every distinct score seen (each one a reachable
    operating point), so that scores bunched between two grid values still give intermediate escalation rates."""
    seen = scores.fillna(1.0).clip(0.0, 1.0).astype(float).tolist()
    return sorted(set(map(float, grid)) | set(seen))


def recommend(sweep: pd.DataFrame, secondary_accuracy: float, tolerance: float = TOLERANCE) -> tuple[pd.Series, bool]:
    """The recommended row of a sweep and whether it met the tolerance (``RECOMMENDATION_CRITERION``): the
    cheapest row within ``tolerance`` of the secondary's accuracy (ties: more accurate, then higher threshold);
    if there is none, the most accurate (ties: cheaper, then higher threshold)."""
    close = sweep[sweep["accuracy"] >= secondary_accuracy - tolerance - 1e-12]
    if len(close):
        ranked = close.sort_values(["cost", "accuracy", "threshold"], ascending=[True, False, False])
        return ranked.iloc[0], True
    ranked = sweep.sort_values(["accuracy", "cost", "threshold"], ascending=[False, True, False])
    return ranked.iloc[0], False


# ------------------------------------------------------------------------------------------------ the benchmark


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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:60]


def pair_label(primary: str, secondary: str) -> str:
    return f"{primary} -> {secondary}"


def run_stuck_bench(
    suite: str | Suite,
    pairs: Sequence[tuple[Model, Model]],
    *,
    detectors: Sequence[str] = DETECTORS,
    thresholds: Sequence[float] | str = "0:1:0.05",
    dev_split: str = "dev",
    test_split: str = "test",
    limit: int | None = None,
    consistency_k: int = 3,
    temperature: float = 0.7,
    out: str | Path | None = None,
    mlflow: bool = True,
    tracking_uri: str | None = None,
    threads: int = 1,
    max_tokens: int = 512,
    cache: bool = True,
    cost_fn: CostFn | None = None,
    live_threshold: float | None = None,
    strategy: Literal["delegate", "guide"] = "guide",
    live_detector: str | None = None,
    progress: bool = True,
    selection_strategy: str = DEFAULT_STRATEGY,
) -> BenchResult:
    """Run the benchmark (see the module docstring); returns the tables, also saved under ``out``."""
    suite_obj = suite if isinstance(suite, Suite) else load_suite(suite)
    parse_strategy(selection_strategy)  # an unknown name stops here, before any model loads
    detectors = _check_detectors(detectors)
    grid = parse_thresholds(thresholds) if isinstance(thresholds, str) else sorted(set(map(float, thresholds)))
    if any(not 0 <= t <= 1 for t in grid) or not grid:
        raise ToolSelectionError(f"Thresholds must lie within [0, 1]; got {grid}.")
    if live_threshold is not None and not 0 <= live_threshold <= 1:
        raise ToolSelectionError(f"--live-threshold must lie within [0, 1], got {live_threshold}.")
    if live_detector is not None and live_detector not in detectors:
        raise ToolSelectionError(f"The live detector {live_detector!r} is not among the benchmarked detectors "
                                 f"({', '.join(detectors)}).")
    if not pairs:
        raise ToolSelectionError("Give at least one model pair (PRIMARY,SECONDARY).")
    splits = list(dict.fromkeys([dev_split, test_split]))
    for split in splits:
        if not len(suite_obj.split(split).limit(limit)):
            raise ToolSelectionError(f"Suite {suite_obj.name!r} has no {split!r} cases (it has "
                                     f"{dict(suite_obj.split_counts())}); choose splits with --dev-split/--test-split.")
    cost_fn = cost_fn or catalog_cost
    names = [(model_name(a), model_name(b)) for a, b in pairs]
    for primary, secondary in names:
        if primary == secondary:
            raise ToolSelectionError(f"Pair {primary},{secondary}: the primary and secondary are the same model.")
    models: dict[str, Model] = {}
    for pair in pairs:
        for model in pair:
            models.setdefault(model_name(model), model)
    primaries = {p for p, _ in names}
    for name in models:
        check_cost(cost_fn, name)

    detector_options = {"consistency_k": consistency_k, "temperature": temperature}
    needs_logprobs = any(make_detector(d, **detector_options).needs_logprobs for d in detectors)
    params = {
        "kind": "stuck_bench", "suite": suite_obj.name, "suite_fingerprint": suite_obj.fingerprint,
        "pairs": [list(p) for p in names], "detectors": list(detectors), "thresholds": grid,
        "dev_split": dev_split, "test_split": test_split, "limit": limit, "consistency_k": consistency_k,
        "temperature": temperature, "max_tokens": max_tokens, "live_threshold": live_threshold,
        "strategy": strategy if live_threshold is not None else "delegate (offline)",
        "selection_strategy": selection_strategy,
        "dspy_version": dspy.__version__, "git_commit": git_commit(),
    }
    digest = hashlib.sha256(json.dumps({k: params[k] for k in ("suite_fingerprint", "pairs", "detectors", "limit",
                                                               "consistency_k", "temperature", "max_tokens",
                                                               "selection_strategy")},
                                       sort_keys=True).encode()).hexdigest()[:8]
    out_dir = Path(out) if out else DEFAULT_BENCH_DIR / f"{_slug(suite_obj.name)}-{digest}"
    out_dir.mkdir(parents=True, exist_ok=True)
    notes = [GUIDE_NOTE, f"Recommended threshold: {RECOMMENDATION_CRITERION}."]

    lms = {name: resolve_lm(model, logprobs=needs_logprobs and name in primaries, max_tokens=max_tokens, cache=cache)
           for name, model in models.items()}
    from tool_selection.lm import prepare_lm

    for lm in lms.values():
        prepare_lm(lm)
    per_model = {}
    for split in splits:
        for name, lm in lms.items():
            table = _run_model(suite_obj, name, lm, split, out_dir, detectors=detectors if name in primaries else (),
                               detector_options=detector_options, limit=limit, threads=threads, progress=progress,
                               mlflow=mlflow, tracking_uri=tracking_uri, strategy=selection_strategy)
            per_model[(name, split)] = _priced(table, name, cost_fn, detectors)
            if not (table["input_tokens"] + table["output_tokens"]).any():
                notes.append(f"{name} ({split}): every token count is 0, so its costs are 0 (DSPy cache hits carry "
                             "no usage); run with --no-cache or a fresh --out for costs.")

    tables = _assemble(names, splits, detectors, grid, per_model, notes)
    sweep, summary, curves, cases, baselines = tables
    recommendations = _recommendations(summary)
    result = BenchResult(sweep=sweep, summary=summary, recommendations=recommendations, curves=curves, cases=cases,
                         baselines=baselines, out_dir=out_dir, notes=notes)

    if live_threshold is not None:
        result.live = _live_runs(result, names, lms, suite_obj.split(test_split).limit(limit), test_split,
                                 live_threshold, strategy, live_detector, detector_options, cost_fn, threads,
                                 progress, out_dir)
    _save(result, params)
    if mlflow:
        result.mlflow_run_id = log_run(params={**params, "out_dir": str(out_dir)}, summary=_metrics(result),
                                       artifacts=result.files, run_name=f"stuck-bench-{out_dir.name}",
                                       uri=tracking_uri)
    return result


def _check_detectors(detectors: Sequence[str]) -> list[str]:
    detectors = list(dict.fromkeys(d.strip() for d in detectors if d.strip()))
    unknown = [d for d in detectors if d not in DETECTORS]
    if unknown or not detectors:
        raise ToolSelectionError(f"Unknown detector(s) {unknown or '(none given)'}: "
                                 f"choose from {', '.join(DETECTORS)}.")
    return detectors


def _run_model(suite: Suite, name: str, lm: dspy.BaseLM, split: str, out_dir: Path, *, detectors: Sequence[str],
               detector_options: dict[str, Any], limit: int | None, threads: int, progress: bool,
               mlflow: bool = False, tracking_uri: str | None = None,
               strategy: str = DEFAULT_STRATEGY) -> pd.DataFrame:
    """One model alone on one split, through the harness; scored by ``detectors`` when it is a primary. Logged
    as an ordinary zero-shot eval run (the detectors do not change the prompt), so ``toolsel eval compare`` and
    the optimization notebook find it."""
    name = _slug(name)
    if detectors:
        key = hashlib.sha256(json.dumps([list(detectors), detector_options], sort_keys=True).encode()).hexdigest()[:6]
        program = StuckScoredSelector([make_detector(d, **detector_options) for d in detectors], strategy=strategy)
        run_dir = out_dir / "runs" / split / f"{name}-scored-{key}"
    else:
        program, run_dir = MultiToolSelector(strategy=strategy), out_dir / "runs" / split / name
    if strategy != DEFAULT_STRATEGY:
        run_dir = run_dir.with_name(f"{run_dir.name}-{_slug(strategy)}")
    result = evaluate(suite, lm, split=split, limit=limit, threads=threads, program=program, adapter="json",
                      run_dir=run_dir, mlflow=mlflow, tracking_uri=tracking_uri, progress=progress)
    return result.results.copy()


def _priced(table: pd.DataFrame, name: str, cost_fn: CostFn, detectors: Sequence[str]) -> pd.DataFrame:
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


def _case_table(primary: pd.DataFrame, secondary: pd.DataFrame, detectors: Sequence[str]) -> pd.DataFrame:
    left = primary.set_index("id")
    right = secondary.set_index("id").loc[left.index]
    table = pd.DataFrame({
        "id": left.index, "tags": left["tags"].to_numpy(),
        "primary_correct": left["full_match"].to_numpy(dtype=float),
        "secondary_correct": right["full_match"].to_numpy(dtype=float),
        "primary_cost": left["cost"].to_numpy(dtype=float), "secondary_cost": right["cost"].to_numpy(dtype=float),
    })
    for d in detectors:
        table[f"score_{d}"] = left.get(f"stuck_{d}", pd.Series(math.nan, index=left.index)).to_numpy(dtype=float)
        table[f"overhead_cost_{d}"] = left.get(f"stuck_{d}_overhead_cost",
                                               pd.Series(0.0, index=left.index)).fillna(0.0).to_numpy(dtype=float)
    return table.reset_index(drop=True)


def _assemble(names, splits, detectors, grid, per_model, notes):
    sweeps, summaries, curves, cases, baselines = [], [], [], [], []
    for (name, split), table in per_model.items():
        mean, low, high = bootstrap_ci(table["full_match"])
        baselines.append({"model": name, "split": split, "cases": len(table), "accuracy": mean,
                          "accuracy_ci_low": low, "accuracy_ci_high": high, "cost": float(table["cost"].mean()),
                          "input_tokens": float(table["input_tokens"].mean()),
                          "output_tokens": float(table["output_tokens"].mean())})
    for primary, secondary in names:
        label = pair_label(primary, secondary)
        for split in splits:
            table = _case_table(per_model[(primary, split)], per_model[(secondary, split)], detectors)
            cases.append(table.assign(pair=label, primary=primary, secondary=secondary, split=split))
            p_acc, s_acc = table["primary_correct"].mean(), table["secondary_correct"].mean()
            for d in detectors:
                scores = table[f"score_{d}"]
                key = {"pair": label, "primary": primary, "secondary": secondary, "detector": d, "split": split}
                if scores.isna().all():
                    if split == splits[-1]:
                        reason = per_model[(primary, split)].get(f"stuck_{d}_unavailable", pd.Series(["?"])).dropna()
                        notes.append(f"{label}: detector {d} was unavailable "
                                     f"({reason.iloc[0] if len(reason) else 'no scores'}); left out.")
                    summaries.append({**key, "available": False})
                    continue
                if scores.isna().any() and split == splits[-1]:
                    notes.append(f"{label}: detector {d} could not score {int(scores.isna().sum())} case(s) "
                                 f"({split}); they count as stuck.")
                filled = scores.fillna(1.0)
                sweep = sweep_thresholds(table, f"score_{d}", grid, overhead=f"overhead_cost_{d}")
                sweeps.append(sweep.assign(**key, primary_accuracy=p_acc, secondary_accuracy=s_acc, cases=len(table)))
                curve = routing_curve(table["primary_correct"], table["secondary_correct"], filled,
                                      table["primary_cost"], table["secondary_cost"], table[f"overhead_cost_{d}"])
                curves.append(curve.assign(**key))
                summaries.append({
                    **key, "available": True, "cases": len(table), "primary_accuracy": p_acc,
                    "secondary_accuracy": s_acc, "primary_cost": table["primary_cost"].mean(),
                    "secondary_cost": table["secondary_cost"].mean(),
                    "oracle_escalation": oracle_escalation(table["primary_correct"], table["secondary_correct"]),
                    "auroc": auroc(filled, 1 - table["primary_correct"]),
                    "apgr": apgr(curve, p_acc, s_acc),
                    "escalation_for_50pct_gap": escalation_to_recover(curve, p_acc, s_acc, 0.5),
                    "escalation_for_80pct_gap": escalation_to_recover(curve, p_acc, s_acc, 0.8),
                    "_table": table, "_score": f"score_{d}", "_overhead": f"overhead_cost_{d}", "_grid": grid,
                })
    summary = _pivot_summary(pd.DataFrame(summaries), splits)
    columns = ["pair", "primary", "secondary", "detector", "split", "threshold", "accuracy", "accuracy_ci_low",
               "accuracy_ci_high", "escalation_rate", "cost", "cost_vs_secondary", "pgr", "primary_accuracy",
               "secondary_accuracy", "cases"]
    sweep = pd.concat(sweeps, ignore_index=True)[columns] if sweeps else pd.DataFrame(columns=columns)
    return (sweep, summary, pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(),
            pd.concat(cases, ignore_index=True), pd.DataFrame(baselines))


SPLIT_METRICS = ("auroc", "apgr", "escalation_for_50pct_gap", "escalation_for_80pct_gap", "oracle_escalation",
                 "primary_accuracy",
                 "secondary_accuracy", "primary_cost", "secondary_cost")


def _pivot_summary(rows: pd.DataFrame, splits: list[str]) -> pd.DataFrame:
    """One row per pair and detector: metrics per split, and the threshold chosen on dev applied to test."""
    dev, test = splits[0], splits[-1]
    out = []
    for (label, detector), group in rows.groupby(["pair", "detector"], sort=False):
        by_split = {r["split"]: r for r in group.to_dict("records")}
        first = by_split[test]
        row = {"pair": label, "primary": first["primary"], "secondary": first["secondary"], "detector": detector,
               "available": all(bool(r["available"]) for r in by_split.values())}
        if row["available"]:
            for split, r in by_split.items():
                for tag in [t for t, name in (("dev", dev), ("test", test)) if name == split]:
                    row.update({f"{tag}_{metric}": r[metric] for metric in SPLIT_METRICS})
            dev_row, test_row = by_split[dev], by_split[test]
            candidates = threshold_candidates(dev_row["_table"][dev_row["_score"]], dev_row["_grid"])
            dev_sweep = sweep_thresholds(dev_row["_table"], dev_row["_score"], candidates, overhead=dev_row["_overhead"])
            chosen, met = recommend(dev_sweep, dev_row["secondary_accuracy"])
            applied = sweep_thresholds(test_row["_table"], test_row["_score"], [float(chosen["threshold"])],
                                       overhead=test_row["_overhead"]).iloc[0]
            row.update({
                "recommended_threshold": float(chosen["threshold"]), "criterion_met_on_dev": met,
                "dev_accuracy_at_threshold": float(chosen["accuracy"]), "dev_cost_at_threshold": float(chosen["cost"]),
                "test_accuracy": float(applied["accuracy"]), "test_accuracy_ci_low": float(applied["accuracy_ci_low"]),
                "test_accuracy_ci_high": float(applied["accuracy_ci_high"]),
                "test_escalation_rate": float(applied["escalation_rate"]),
                "test_cost_vs_secondary": float(applied["cost_vs_secondary"]),
            })
        out.append(row)
    return pd.DataFrame(out)


def _recommendations(summary: pd.DataFrame) -> pd.DataFrame:
    """Per pair, the detector whose dev-chosen threshold best meets the criterion (judged on dev)."""
    rows = []
    available = summary[summary["available"]] if "available" in summary else summary
    for _label, group in available.groupby("pair", sort=False):
        met = group[group["criterion_met_on_dev"]]
        if len(met):
            best = met.sort_values(["dev_cost_at_threshold", "dev_accuracy_at_threshold"], ascending=[True, False])
        else:
            best = group.sort_values(["dev_accuracy_at_threshold", "dev_cost_at_threshold"], ascending=[False, True])
        best = best.iloc[0]
        rows.append({k: best[k] for k in ("pair", "primary", "secondary", "detector", "recommended_threshold",
                                          "criterion_met_on_dev", "test_accuracy", "test_accuracy_ci_low",
                                          "test_accuracy_ci_high", "test_escalation_rate", "test_cost_vs_secondary",
                                          "test_primary_accuracy", "test_secondary_accuracy")})
    return pd.DataFrame(rows)


def _live_runs(result: BenchResult, names, lms, cases: Suite, split: str, threshold: float, strategy: str,
               live_detector: str | None, detector_options: dict[str, Any], cost_fn: CostFn, threads: int,
               progress: bool, out_dir: Path) -> pd.DataFrame:
    """The protocol run for real on the test split at one threshold (the only way to measure ``guide``)."""
    rows = []
    for primary, secondary in names:
        label = pair_label(primary, secondary)
        detector = live_detector
        if detector is None:
            chosen = result.recommendations[result.recommendations["pair"] == label]
            detector = str(chosen["detector"].iloc[0]) if len(chosen) else "validation"
        protocol = ModelCollaborationProtocol(lms[primary], lms[secondary],
                                              detector=make_detector(detector, **detector_options),
                                              threshold=threshold, strategy=strategy, cost_fn=cost_fn,
                                              temperature=detector_options["temperature"])
        run_dir = out_dir / "live" / f"{_slug(primary)}__{_slug(secondary)}-{detector}-{strategy}-{threshold:g}"
        run = Evaluator(suite=cases, threads=threads, progress=progress)(protocol, adapter=ToolSelectionAdapter(),
                                                                         run_dir=run_dir)
        run.results.to_parquet(run_dir / TABLE_FILE, index=False)
        secondary_cost = result.baselines.query("model == @secondary and split == @split")["cost"].iloc[0]
        cases_table = result.cases.query("pair == @label and split == @split")
        offline = sweep_thresholds(cases_table, f"score_{detector}", [threshold], overhead=f"overhead_cost_{detector}")
        mean, low, high = bootstrap_ci(run.results["full_match"])
        cost = float(run.results["cost"].mean()) if "cost" in run.results else math.nan
        rows.append({
            "pair": label, "primary": primary, "secondary": secondary, "detector": detector, "strategy": strategy,
            "threshold": threshold, "split": split, "cases": len(run.results), "accuracy": mean,
            "accuracy_ci_low": low, "accuracy_ci_high": high,
            "escalation_rate": float(run.results["collab_escalated"].mean()),
            "cost": cost, "cost_vs_secondary": cost / secondary_cost if secondary_cost > 0 else math.nan,
            "offline_delegate_accuracy": float(offline["accuracy"].iloc[0]),
            "offline_delegate_escalation_rate": float(offline["escalation_rate"].iloc[0]),
            "run_dir": str(run_dir),
        })
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ output


def _save(result: BenchResult, params: dict[str, Any]) -> None:
    out = result.out_dir
    files = []
    tables = {"sweep": result.sweep, "summary": result.summary, "recommendations": result.recommendations,
              "curves": result.curves, "baselines": result.baselines}
    if result.live is not None:
        tables["live"] = result.live
    for name, frame in tables.items():
        frame.to_csv(out / f"{name}.csv", index=False)
        frame.to_parquet(out / f"{name}.parquet", index=False)
        files += [out / f"{name}.csv", out / f"{name}.parquet"]
    cases = result.cases.copy()
    cases["tags"] = cases["tags"].apply(list)
    cases.to_parquet(out / "cases.parquet", index=False)
    files.append(out / "cases.parquet")
    files += plot(result)
    write_json(out / "bench.json", {"params": params, "notes": result.notes, "criterion": RECOMMENDATION_CRITERION})
    files.append(out / "bench.json")
    result.files = files


def plot(result: BenchResult) -> list[Path]:
    """Per pair (test split): accuracy vs escalation rate per detector, and the cost-quality curve. Drawn on bare
    ``Figure``s (rendered by Agg), so that no global pyplot backend is touched."""
    from matplotlib.figure import Figure

    paths = []
    test = result.sweep["split"].iloc[-1] if len(result.sweep) else None
    for label, sweep in result.sweep[result.sweep["split"] == test].groupby("pair", sort=False):
        slug = _slug(label.replace(" -> ", "__"))
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
        paths.append(result.out_dir / f"accuracy_vs_escalation_{slug}.png")
        fig.savefig(paths[-1], dpi=110)

        fig = Figure(figsize=(6.5, 4.5))
        ax = fig.subplots()
        for detector, rows in sweep.groupby("detector", sort=False):
            ordered = rows.sort_values("cost_vs_secondary")
            ax.plot(ordered["cost_vs_secondary"], ordered["accuracy"], marker="o", ms=3, label=detector)
        base = result.baselines[result.baselines["split"] == test].set_index("model")
        s_cost = base.loc[sweep["secondary"].iloc[0], "cost"]
        for role, color in (("primary", "black"), ("secondary", "grey")):
            name = sweep[role].iloc[0]
            x = base.loc[name, "cost"] / s_cost if s_cost > 0 else math.nan
            ax.scatter([x], [base.loc[name, "accuracy"]], marker="*", s=140, color=color, zorder=3,
                       label=f"{role} alone")
        ax.set(xlabel="cost relative to always using the secondary", ylabel="accuracy",
               title=f"cost-quality: {label} ({test})")
        ax.legend(fontsize=8)
        fig.tight_layout()
        paths.append(result.out_dir / f"cost_quality_{slug}.png")
        fig.savefig(paths[-1], dpi=110)
    return paths


def _metrics(result: BenchResult) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for row in result.summary.to_dict("records"):
        if not row.get("available"):
            continue
        prefix = f"{_slug(row['primary'])}__{_slug(row['secondary'])}.{row['detector']}"
        for key, value in row.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or key.endswith("_cost"):
                continue
            if key.startswith(("test_", "dev_", "recommended")):
                metrics[f"{prefix}.{key}"] = float(value)
    for row in result.baselines.to_dict("records"):
        metrics[f"{_slug(row['model'])}.{row['split']}_accuracy"] = row["accuracy"]
        metrics[f"{_slug(row['model'])}.{row['split']}_cost"] = row["cost"]
    if result.live is not None:
        for row in result.live.to_dict("records"):
            prefix = f"{_slug(row['primary'])}__{_slug(row['secondary'])}.live_{row['strategy']}"
            for key in ("accuracy", "escalation_rate", "cost_vs_secondary"):
                metrics[f"{prefix}.{key}"] = row[key]
    return metrics


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
                              f"{100 * r['accuracy_ci_high']:.1f}] cost {r['cost']:.4g}"
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
            })
            lines.append(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        missing = group[~group["available"]]["detector"].tolist()
        if missing:
            lines.append(f"   unavailable: {', '.join(missing)}")
    if len(result.recommendations):
        lines.append("\nRecommended per pair (" + RECOMMENDATION_CRITERION + "):")
        for row in result.recommendations.to_dict("records"):
            lines.append(f"   {row['pair']}: {row['detector']} at {row['recommended_threshold']:.2f} -> test accuracy "
                         f"{100 * row['test_accuracy']:.1f}% (secondary {100 * row['test_secondary_accuracy']:.1f}%), "
                         f"escalation {100 * row['test_escalation_rate']:.0f}%, "
                         f"cost {row['test_cost_vs_secondary']:.2f}x "
                         "the secondary's")
    if result.live is not None:
        lines.append("\nLive protocol runs:")
        lines.append(result.live.drop(columns=["run_dir"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    lines += [f"\nnote: {n}" for n in result.notes]
    return "\n".join(lines)
