"""A learned stuck detector for a 0.5B -> 1.5B cascade, measured offline on kept relevance rows (issue #49, item 1).

    python -m evals.benchmarks.learned_router [--out docs/results/learned-router.md]

For each suite group (``GROUPS``) a logistic regression reads the primary's (0.5B) relevance signals on its train
rows and predicts that the primary's decision is wrong. Its escalation threshold is chosen on dev
(``THRESHOLD_RULE``), and on test the cascade (the primary's answer, or the secondary's (1.5B) where the detector
escalates) is set against each model alone: each signal's AUROC beside the combination's, APGR, the escalation that
recovers 50% and 80% of the gap, the paired change against the secondary (bootstrap interval, McNemar's exact p)
and seconds per case. Two detectors: the free signals only, and with the paid ``verify`` signal too. No model is
called: both models' per-case rows are read from ``results/relevance/<model>/<suite>/``.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from evals.rescore import run_params
from evals.stuck_bench.routing import (
    RoutingMetrics,
    auroc,
    perfect_router_curve,
    recommend,
    routing_curve,
    routing_metrics,
)
from evals.stuck_bench.verdict import Comparison, cascade_cases, compare_to_secondary, pays
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance.signals import SIGNAL_PREFIX
from tool_selection.stuck.learned import ROUTERS_DIR, STAGE_INPUTS, RouterModel, fit_router

__all__ = [
    "Cascade", "Comparison", "GroupData", "VariantResult", "choose_threshold", "compare_to_secondary",
    "evaluate_variant", "fit_detector", "main", "markdown_page", "pair_rows", "pays", "run_cascade",
    "signal_aurocs", "wrong_probability",
]

PRIMARY, SECONDARY = "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"
RESULTS = Path("results/relevance")
GROUPS = {"bfcl": ("bfcl_multiple", "bfcl_irrelevance"), "domains": ("events", "treasure_hunt")}
SPLITS = ("train", "dev", "test")
FREE_SIGNALS = ("call_open", "name_logprob", "name_logprob_min", "unlisted", "grounded_args", "dense_best",
                "dense_chosen", "bm25_best")
PAID_SIGNALS = ("verify",)
VARIANTS = {"free": FREE_SIGNALS, "free + verify": FREE_SIGNALS + PAID_SIGNALS}
POOLED = "pooled"  # the free detector on every group's rows together
BOARD = Path("results/board")  # the board's whole-category runs of each model's default selector
BOARD_GROUP, BOARD_STRATEGY = "bfcl, default selector", "native-strict-cover"
BOARD_CATEGORIES = ("multiple", "irrelevance")
BOARD_VARIANTS = {"free": FREE_SIGNALS, "free + stage": FREE_SIGNALS + STAGE_INPUTS}
SHIPPED = (BOARD_GROUP, "free + stage")  # the router that ships: it reads the decisions the default selector makes
LEFT_OUT = {
    "tools_listed": "the number of tools listed tells the suites apart (one function in every bfcl_irrelevance "
                    "case, 2-4 in bfcl_multiple; a fixed tool set per domain suite), so it would learn which suite "
                    "a case comes from, which no deployment shares; the 0.5B rows also hold it for few cases",
}
TEST_ONLY = ("ecommerce", "finance", "language")
TOLERANCE = 0.01
THRESHOLD_RULE = ("the lowest escalation rate whose dev cascade accuracy is within 1 point of the secondary's "
                  "own dev accuracy; if no threshold gets there, the best dev cascade accuracy (ties: less "
                  "escalation). Candidates: every distinct dev score, and escalating nothing")
CASE_COLUMNS = ("id", "split", "full_match", "latency_s")  # what each model's rows must hold
ON_DEV, OUT_OF_FOLD = "dev", "train + dev, out of fold"  # where a threshold is chosen
FOLDS = 5


# --- the per-case table ---------------------------------------------------------------------------------------

def column_of(name: str) -> str:
    """A router input's column in a run's rows: ``rel_<signal>``, or the relevance stage's own column."""
    return name if name in STAGE_INPUTS else SIGNAL_PREFIX + name


def _require_columns(rows: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [column for column in columns if column not in rows]
    if not missing:
        return
    signals = [c for c in missing if c.startswith(SIGNAL_PREFIX)]
    fix = ("record the signal with `toolsel eval --split all --relevance-signals cheap` "
           "(evals/benchmarks/measure_relevance.sh MODEL SUITE), or leave it out of the detector's signals"
           if signals else "run the model with its relevance model (relevance auto, the default), which records "
           "the stage's verdict, or leave it out of the detector" if set(missing) & set(STAGE_INPUTS)
           else "give the per-case rows of `toolsel eval` (results.parquet), which hold them")
    raise ToolSelectionError(f"{what} have no column {', '.join(missing)}: {fix}.")


def _check_unique(rows: pd.DataFrame, what: str) -> None:
    repeated = sorted(set(rows["id"][rows["id"].duplicated()]))
    if repeated:
        raise ToolSelectionError(f"{what} hold case ids more than once ({', '.join(map(str, repeated[:5]))}): give "
                                 "one run per model and suite (each case answered once).")


def _check_outcomes(rows: pd.DataFrame, what: str) -> None:
    values = pd.to_numeric(rows["full_match"], errors="coerce")
    if values.isna().any() or not values.isin((0.0, 1.0)).all():
        raise ToolSelectionError(f"{what} have full_match values other than 0 and 1 (or missing): the cascade needs "
                                 "every case scored right or wrong; rescore the run (toolsel eval rescore).")


def _stage_seconds(rows: pd.DataFrame) -> pd.Series:
    if "relevance_seconds" not in rows:
        return pd.Series(0.0, index=rows.index)
    return pd.to_numeric(rows["relevance_seconds"], errors="coerce").fillna(0.0)


def _side(rows: pd.DataFrame, role: str, signals: Sequence[str]) -> pd.DataFrame:
    """One model's columns: whether it was right, its seconds without its relevance stage, the stage's seconds."""
    stage = _stage_seconds(rows)
    side = pd.DataFrame({"id": rows["id"], "split": rows["split"],
                         f"{role}_correct": pd.to_numeric(rows["full_match"]).astype(float),
                         f"{role}_seconds": pd.to_numeric(rows["latency_s"]).astype(float) - stage,
                         f"{role}_stage_seconds": stage})
    for name in signals:
        side[column_of(name)] = pd.to_numeric(rows[column_of(name)], errors="coerce")
    return side.reset_index(drop=True)


def pair_rows(primary: pd.DataFrame, secondary: pd.DataFrame, suite: str, signals: Sequence[str]) -> pd.DataFrame:
    """One row per case of ``suite`` answered by both models (paired by ``id``): ``primary_correct``,
    ``secondary_correct``, each model's seconds without its relevance stage, the stage's ``detector_seconds``
    (the primary's) and the primary's ``rel_<signal>`` columns. Refuses rows that do not pair."""
    _require_columns(primary, [*CASE_COLUMNS, *map(column_of, signals)], f"The primary's {suite} rows")
    _require_columns(secondary, CASE_COLUMNS, f"The secondary's {suite} rows")
    for name, rows in (("primary", primary), ("secondary", secondary)):
        _check_unique(rows, f"The {name}'s {suite} rows")
        _check_outcomes(rows, f"The {name}'s {suite} rows")
    only_primary = sorted(set(primary["id"]) - set(secondary["id"]))
    only_secondary = sorted(set(secondary["id"]) - set(primary["id"]))
    if only_primary or only_secondary:
        raise ToolSelectionError(
            f"The two models' {suite} rows do not pair by id: {len(only_primary)} only in the primary's "
            f"{only_primary[:3]}, {len(only_secondary)} only in the secondary's {only_secondary[:3]}. Evaluate both "
            "models on the same suite version and splits (measure_relevance.sh MODEL SUITE with --split all).")
    both = _side(primary, "primary", signals).merge(_side(secondary, "secondary", ()), on="id",
                                                      suffixes=("", "_secondary"))
    differ = both.loc[both["split"] != both["split_secondary"], "id"].tolist()
    if differ:
        raise ToolSelectionError(f"The two models' {suite} rows put {len(differ)} cases in different splits "
                                 f"({differ[:3]}): the suites differ; evaluate both on the same suite version.")
    return both.drop(columns=["split_secondary", "secondary_stage_seconds"]).rename(
        columns={"primary_stage_seconds": "detector_seconds"}).assign(suite=suite)


# --- the detector ---------------------------------------------------------------------------------------------

def _features(rows: pd.DataFrame, signals: Sequence[str]) -> pd.DataFrame:
    return rows[[column_of(name) for name in signals]].astype(float).replace([np.inf, -np.inf], np.nan)


def fit_detector(train: pd.DataFrame, signals: Sequence[str], *, C: float = 1.0, primary: str = PRIMARY,
                 secondary: str = SECONDARY, split: str = "train") -> RouterModel:
    """A router (``tool_selection.stuck.learned``): a logistic regression of "the primary is wrong"
    (1 - ``primary_correct``) on the primary's standardised signals, a missing value read as the train mean plus a
    learned weight for its being missing (a signal is missing where the primary made no call)."""
    features = _features(train, signals)
    empty = [name for name in signals if not features[column_of(name)].notna().any()]
    if empty:
        raise ToolSelectionError(f"The signals {', '.join(empty)} have no value on the train rows: record them "
                                 "(--relevance-signals) or leave them out of the detector.")
    wrong = (1 - train["primary_correct"]).astype(int)
    if wrong.nunique() < 2:
        raise ToolSelectionError("The primary is right on every train case or wrong on every one: a detector has "
                                 "nothing to learn; pool more suites into the group.")
    return fit_router(features, wrong.tolist(), signals, C=C, primary=_spec(primary), secondary=_spec(secondary),
                      trained_on={"suites": sorted(train["suite"].unique()) if "suite" in train else [],
                                  "split": split})


def _spec(model: str) -> str:
    return model if ":" in model else f"local:{model}"


def wrong_probability(model: RouterModel, rows: pd.DataFrame, signals: Sequence[str]) -> np.ndarray:
    """The detector's P(the primary is wrong) for each row."""
    return model.probabilities(_features(rows, signals))


def detector_weights(model: RouterModel) -> dict[str, float]:
    """The fitted coefficients on the standardised signals, then each signal's weight when it is missing."""
    return {**dict(zip(model.signals, model.coefficients, strict=True)),
            **{f"{name} missing": w for name, w in zip(model.signals, model.missing, strict=True) if w}}


def signal_aurocs(train: pd.DataFrame, test: pd.DataFrame, signals: Sequence[str]) -> pd.DataFrame:
    """Each signal alone: its direction (chosen on train so that higher means "the primary is wrong" more often)
    and its test AUROC for the primary's mistakes, a missing value read as the train median (as the detector does)."""
    rows = []
    for name in signals:
        column = column_of(name)
        median = train[column].median()
        on_train = auroc(train[column].fillna(median), 1 - train["primary_correct"])
        direction = -1.0 if on_train < 0.5 else 1.0
        rows.append({"signal": name, "wrong_when": "higher" if direction > 0 else "lower",
                     "auroc": auroc(direction * test[column].fillna(median), 1 - test["primary_correct"])})
    return pd.DataFrame(rows)


# --- the threshold and the cascade ----------------------------------------------------------------------------

def choose_threshold(dev: pd.DataFrame, scores: Sequence[float],
                     tolerance: float = TOLERANCE) -> tuple[float, bool, pd.Series]:
    """The dev threshold by ``THRESHOLD_RULE``: (threshold (inf: escalate nothing), whether a point within
    ``tolerance`` of the secondary existed, the chosen dev point: escalation_rate, accuracy)."""
    curve = routing_curve(dev["primary_correct"], dev["secondary_correct"], scores)
    point, met = recommend(curve.assign(cost=curve["escalation_rate"]), float(dev["secondary_correct"].mean()),
                           tolerance)
    return float(point["threshold"]), met, point


@dataclass(frozen=True)
class Cascade:
    """Per case: escalated or not, right or wrong, and seconds spent."""

    escalated: np.ndarray
    correct: np.ndarray
    seconds: np.ndarray

    @property
    def escalation_rate(self) -> float:
        return float(self.escalated.mean())

    @property
    def accuracy(self) -> float:
        return float(self.correct.mean())

    @property
    def seconds_per_case(self) -> float:
        return float(self.seconds.mean())


def run_cascade(table: pd.DataFrame, scores: Sequence[float], threshold: float,
                detector_seconds: Sequence[float] | None = None) -> Cascade:
    """The primary answers every case; a case scoring at least ``threshold`` is escalated and takes the
    secondary's answer, and its seconds. Seconds per case: primary + detector + secondary where escalated."""
    escalated = np.asarray(scores, dtype=float) >= threshold
    overhead = np.zeros(len(table)) if detector_seconds is None else np.asarray(detector_seconds, dtype=float)
    correct, seconds = cascade_cases(table, escalated, overhead)
    return Cascade(escalated, correct, seconds.to_numpy(float))


def out_of_fold_scores(rows: pd.DataFrame, signals: Sequence[str], *, folds: int = FOLDS,
                       seed: int = 0) -> np.ndarray:
    """Each row's P(wrong) from a detector fitted on the other folds (stratified by the primary's mistakes)."""
    from sklearn.model_selection import StratifiedKFold

    wrong = (1 - rows["primary_correct"]).astype(int).to_numpy()
    if min(np.bincount(wrong, minlength=2)) < folds:
        raise ToolSelectionError(f"Out-of-fold scores need at least {folds} rows where the primary is right and "
                                 f"{folds} where it is wrong: pool more suites into the group.")
    scores = np.zeros(len(rows))
    for fit_on, score_on in StratifiedKFold(folds, shuffle=True, random_state=seed).split(rows, wrong):
        model = fit_detector(rows.iloc[fit_on], signals)
        scores[score_on] = wrong_probability(model, rows.iloc[score_on], signals)
    return scores


# --- one detector on one group ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class VariantResult:
    """One detector (``variant``) fitted, thresholded and tested on one group."""

    group: str
    variant: str
    signals: tuple[str, ...]
    model: RouterModel
    threshold: float
    threshold_met: bool
    threshold_on: str
    dev_point: pd.Series
    dev_secondary_accuracy: float
    test: pd.DataFrame
    cascade: Cascade
    comparison: Comparison
    metrics: RoutingMetrics
    aurocs: pd.DataFrame

    @property
    def secondary_seconds(self) -> float:
        return float(self.test["secondary_seconds"].mean())

    @property
    def pays(self) -> bool:
        return pays(self.comparison, self.cascade.seconds_per_case, self.secondary_seconds)


def _split(table: pd.DataFrame, split: str, group: str) -> pd.DataFrame:
    rows = table[table["split"] == split].reset_index(drop=True)
    if rows.empty:
        raise ToolSelectionError(f"Group {group} has no {split} rows: evaluate its suites with --split all.")
    return rows


def evaluate_variant(group: str, variant: str, table: pd.DataFrame, signals: Sequence[str],
                     seed: int = 0, *, primary: str = PRIMARY, secondary: str = SECONDARY,
                     threshold_on: str = ON_DEV) -> VariantResult:
    """Fits the detector and chooses its threshold (``threshold_on``: ``ON_DEV``, fitted on train and thresholded on
    dev; ``OUT_OF_FOLD``, fitted on train + dev and thresholded on their out-of-fold scores), then runs the cascade
    on test; the detector costs the primary's stage seconds when it reads a paid signal, nothing otherwise."""
    train, dev, test = (_split(table, split, group) for split in SPLITS)
    names = {"primary": primary, "secondary": secondary}
    if threshold_on == OUT_OF_FOLD:
        dev = pd.concat([train, dev], ignore_index=True)
        model = fit_detector(dev, signals, **names, split="train+dev")
        dev_scores = out_of_fold_scores(dev, signals, seed=seed)
    else:
        model = fit_detector(train, signals, **names)
        dev_scores = wrong_probability(model, dev, signals)
    threshold, met, point = choose_threshold(dev, dev_scores)
    scores = wrong_probability(model, test, signals)
    paid = any(name in PAID_SIGNALS for name in signals)
    overhead = test["detector_seconds"].to_numpy(float) if paid else np.zeros(len(test))
    cascade = run_cascade(test, scores, threshold, overhead)
    costed = test.assign(score=scores, primary_cost=test["primary_seconds"] + overhead,
                         secondary_cost=test["secondary_seconds"])
    curve = routing_curve(costed["primary_correct"], costed["secondary_correct"], scores, costed["primary_cost"],
                          costed["secondary_cost"])
    return VariantResult(
        group=group, variant=variant, signals=tuple(signals), model=model, threshold=threshold, threshold_met=met,
        threshold_on=threshold_on,
        dev_point=point, dev_secondary_accuracy=float(dev["secondary_correct"].mean()),
        test=costed.assign(escalated=cascade.escalated, cascade_correct=cascade.correct),
        cascade=cascade, comparison=compare_to_secondary(cascade.correct, test["secondary_correct"], seed),
        metrics=routing_metrics(costed, "score", curve), aurocs=signal_aurocs(train, test, signals))


# --- reading the kept rows --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupData:
    """A group's paired per-case table and where its rows came from (one entry per model and suite)."""

    name: str
    table: pd.DataFrame
    sources: list[dict]


def run_rows(results: Path, model: str, suite: str, signals: Sequence[str], *,
             run_dir: Path | None = None) -> tuple[pd.DataFrame, dict]:
    """``model``'s rows of ``suite`` (``results/<model>/<suite>/``, or ``run_dir``) with the decision signals the run
    did not record computed, and where they came from."""
    from evals.relevance import fill_decision_signals
    from evals.runner import load_results
    from tool_selection.relevance.signals import DECISION_SIGNALS

    run_dir = run_dir or results / model / suite
    if not run_dir.is_dir():
        raise ToolSelectionError(f"No rows for {model} on {suite} in {run_dir}: run "
                                 f"evals/benchmarks/measure_relevance.sh {model} (or give --results).")
    rows = load_results(run_dir)
    summary = run_dir / "summary.json"
    params = json.loads(summary.read_text()).get("params", {}) if summary.is_file() else {}
    fillable = [name for name in signals if SIGNAL_PREFIX + name not in rows and name in DECISION_SIGNALS]
    if fillable:  # a signal the run did not record yet, computed from the request, the tools and the decision
        rows = fill_decision_signals(rows, _suite_cases(params, run_dir))
    source = {"model": model, "suite": suite, "path": run_dir.as_posix(), "rows": len(rows),
              "commit": params.get("git_commit", "?"), "suite_fingerprint": params.get("suite_fingerprint", "?"),
              "filled": fillable}
    return rows, source


def _suite_cases(params: dict, run_dir: Path) -> dict:
    from evals.suite import load_suite

    reference = params.get("suite_ref") or params.get("suite")
    if not reference:
        raise ToolSelectionError(f"{run_dir}/summary.json names no suite: cannot compute the missing signals.")
    suite = load_suite(reference)
    recorded = params.get("suite_fingerprint")
    if recorded and suite.fingerprint != recorded:
        raise ToolSelectionError(f"Suite {reference} is now {suite.fingerprint}, but {run_dir} was run on "
                                 f"{recorded}: the missing signals cannot be computed from it; evaluate again.")
    return {case.id: case for case in suite}


def load_group(results: Path, group: str, suites: Sequence[str], signals: Sequence[str], *,
               primary: str = PRIMARY, secondary: str = SECONDARY) -> GroupData:
    """The paired rows of ``suites`` for ``primary`` and ``secondary`` (``results/<model>/<suite>/``)."""
    tables, sources = [], []
    for suite in suites:
        primary_rows, primary_source = run_rows(results, primary, suite, signals)
        secondary_rows, secondary_source = run_rows(results, secondary, suite, ())
        tables.append(pair_rows(primary_rows, secondary_rows, suite, signals))
        sources += [primary_source, secondary_source]
    return GroupData(group, pd.concat(tables, ignore_index=True), sources)


def board_run(board: Path, model: str, category: str) -> Path:
    """The board's run of ``model``'s default selector (``BOARD_STRATEGY``, no demonstrations) over the whole BFCL
    ``category``: of the kept runs, the one with the most cases."""
    runs = []
    for summary in (board / model).glob(f"bfcl-{category.replace('_', '-')}-local-*/summary.json"):
        params = run_params(summary.parent)
        if params.get("strategy") == BOARD_STRATEGY and not params.get("demos") and params.get("split") == "all":
            runs.append((params.get("cases", 0), summary.parent))
    if not runs:
        raise ToolSelectionError(f"No run of {model}'s default selector on bfcl:{category} under {board / model}: "
                                 "run the board's sweep (toolsel sweep evals/sweeps/board.yaml).")
    return max(runs)[1]


def load_board_group(board: Path, signals: Sequence[str], *, primary: str = PRIMARY,
                     secondary: str = SECONDARY) -> GroupData:
    """``BOARD_GROUP``: both models' board runs of ``BOARD_CATEGORIES``, paired (the decisions the default selector
    makes, its relevance stage included, on every split)."""
    tables, sources = [], []
    for category in BOARD_CATEGORIES:
        suite = f"bfcl_{category}"
        primary_rows, primary_source = run_rows(board, primary, suite, signals,
                                                run_dir=board_run(board, primary, category))
        secondary_rows, secondary_source = run_rows(board, secondary, suite, (),
                                                    run_dir=board_run(board, secondary, category))
        tables.append(pair_rows(primary_rows, secondary_rows, suite, signals))
        sources += [primary_source, secondary_source]
    return GroupData(BOARD_GROUP, pd.concat(tables, ignore_index=True), sources)


# --- the page ---------------------------------------------------------------------------------------------------

def _pct(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.1f}"


def _rate(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def _table(rows: list[dict]) -> str:
    from tool_selection.conversations.summary import format_table

    return format_table(rows, list(rows[0])) if rows else "(none)"


def _threshold(value: float) -> str:
    return "escalate none" if math.isinf(value) else f"P(wrong) >= {value:.3f}"


def verdict_line(result: VariantResult) -> str:
    """One sentence: does the cascade pay on test?"""
    c, cascade = result.comparison, result.cascade
    ratio = cascade.seconds_per_case / result.secondary_seconds
    best = result.aurocs.sort_values("auroc", ascending=False).iloc[0]
    rates, ceiling = perfect_router_curve(result.test["primary_correct"], result.test["secondary_correct"])
    already = " (the primary alone already does)" if result.metrics.oracle_escalation == 0 else ""
    accuracy = ("significantly below" if c.significantly_below else "not significantly below") + " the secondary's"
    return (f"**{result.group}, {result.variant}: {'pays' if result.pays else 'does not pay'}** - "
            f"{_pct(cascade.accuracy)}% against {_pct(result.metrics.secondary_accuracy)}% ({accuracy}: "
            f"{c.points()} points, McNemar p {c.p_value:.3g}) at {ratio:.2f}x the secondary's seconds per case, "
            f"escalating {_pct(cascade.escalation_rate)}% of the test cases. Detector AUROC "
            f"{_rate(result.metrics.auroc)} (best single signal: {best['signal']} {_rate(best['auroc'])}). A perfect "
            f"detector would match the secondary escalating {_pct(result.metrics.oracle_escalation)}%"
            f"{already}, and reach {_pct(ceiling[1])}% escalating {_pct(rates[1])}%.")


def cascade_rows(results: Sequence[VariantResult]) -> list[dict]:
    rows = []
    for r in results:
        c = r.comparison
        rows.append({
            "group": r.group, "detector": r.variant, "test cases": len(r.test),
            "escalated %": _pct(r.cascade.escalation_rate), "primary %": _pct(r.metrics.primary_accuracy),
            "secondary %": _pct(r.metrics.secondary_accuracy), "cascade %": _pct(r.cascade.accuracy),
            "cascade - secondary [95% CI]": c.points(),
            "McNemar p": f"{c.p_value:.3g} ({c.cascade_only} vs {c.secondary_only})",
            "s/case cascade": f"{r.cascade.seconds_per_case:.2f}", "s/case secondary": f"{r.secondary_seconds:.2f}",
            "ratio": f"{r.cascade.seconds_per_case / r.secondary_seconds:.2f}", "pays": "yes" if r.pays else "no"})
    return rows


def auroc_rows(results: Sequence[VariantResult]) -> list[dict]:
    """Signals by row, groups by column: the single signals (from the fullest detector) and each combination."""
    groups = list(dict.fromkeys(r.group for r in results))
    fullest = {g: max((r for r in results if r.group == g), key=lambda r: len(r.signals)) for g in groups}
    rows = []
    for name in max((fullest[g].aurocs["signal"] for g in groups), key=len):
        row = {"signal": f"`{name}`" + (" (paid)" if name in PAID_SIGNALS else "")}
        for g in groups:
            singles = fullest[g].aurocs.set_index("signal")
            row[g] = (f"{_rate(singles.loc[name, 'auroc'])} (wrong when {singles.loc[name, 'wrong_when']})"
                      if name in singles.index else "-")
        rows.append(row)
    for variant in dict.fromkeys(r.variant for r in results):
        row = {"signal": f"**combined: {variant}**"}
        row.update({r.group: f"**{_rate(r.metrics.auroc)}**" for r in results if r.variant == variant})
        rows.append(row)
    return rows


def routing_rows(results: Sequence[VariantResult]) -> list[dict]:
    rows = []
    for r in results:
        m = r.metrics
        rates, accuracies = perfect_router_curve(r.test["primary_correct"], r.test["secondary_correct"])
        rows.append({
            "group": r.group, "detector": r.variant, "APGR": _rate(m.apgr),
            "escalation for 50% of the gap %": _pct(m.escalation_for_50pct_gap),
            "escalation for 80% of the gap %": _pct(m.escalation_for_80pct_gap),
            "oracle escalation % (to match the secondary)": _pct(m.oracle_escalation),
            "perfect detector": f"{_pct(accuracies[1])}% escalating {_pct(rates[1])}%"})
    return rows


def dev_rows(results: Sequence[VariantResult]) -> list[dict]:
    return [{"group": r.group, "detector": r.variant, "chosen on": r.threshold_on, "threshold": _threshold(r.threshold),
             "escalation %": _pct(r.dev_point["escalation_rate"]),
             "cascade %": _pct(r.dev_point["accuracy"]), "secondary %": _pct(r.dev_secondary_accuracy),
             "rule": "within 1 point" if r.threshold_met else "fallback: best dev accuracy"} for r in results]


def suite_rows(results: Sequence[VariantResult]) -> list[dict]:
    rows = []
    for r in results:
        for suite, part in r.test.groupby("suite", sort=False):
            rows.append({"group": r.group, "detector": r.variant, "suite": suite, "test cases": len(part),
                         "escalated %": _pct(part["escalated"].mean()),
                         "primary %": _pct(part["primary_correct"].mean()),
                         "secondary %": _pct(part["secondary_correct"].mean()),
                         "cascade %": _pct(part["cascade_correct"].mean()),
                         "detector AUROC": _rate(auroc(part["score"], 1 - part["primary_correct"]))})
    return rows


def weight_rows(results: Sequence[VariantResult]) -> list[dict]:
    rows = []
    for r in results:
        weights = detector_weights(r.model)
        rows.append({"group": r.group, "detector": r.variant,
                     "weights (standardised; + means more likely wrong)": ", ".join(
                         f"{name} {w:+.2f}" for name, w in weights.items())})
    return rows


def _seconds(values: pd.Series) -> str:
    return f"{values.mean():.2f} ({values.median():.2f})"


def seconds_rows(groups: Sequence[GroupData]) -> list[dict]:
    """Mean seconds per case as recorded, per suite (all splits): each model's selection and its stage."""
    rows = []
    for data in groups:
        for suite, part in data.table.groupby("suite", sort=False):
            slower = part["primary_seconds"] > part["secondary_seconds"]
            rows.append({"suite": suite, "cases": len(part),
                         "0.5B selection s (median)": _seconds(part["primary_seconds"]),
                         "0.5B stage s (median)": _seconds(part["detector_seconds"]),
                         "1.5B selection s (median)": _seconds(part["secondary_seconds"]),
                         "0.5B slower than 1.5B on %": _pct(slower.mean())})
    return rows


def provenance_rows(groups: Sequence[GroupData]) -> list[dict]:
    return [{"input rows": f"`{s['path']}/results.parquet`", "model": s["model"], "suite": s["suite"],
             "rows": s["rows"], "recorded at commit": f"`{s['commit']}`", "suite fingerprint": s["suite_fingerprint"],
             "signals computed here": ", ".join(s["filled"]) or "-"} for g in groups for s in g.sources]


def markdown_page(groups: Sequence[GroupData], results: Sequence[VariantResult], *, command: str,
                  commit: str, today: str) -> str:
    """The results page."""
    sections = [
        "# A learned stuck detector for a 0.5B -> 1.5B cascade (offline)", "",
        f"Generated by `{command}` on {today} at commit `{commit}`, from kept per-case rows (no model was called).",
        "", _intro(), "", "## Verdict", "", *[f"- {verdict_line(r)}" for r in results], "",
        "## Test: the cascade against each model alone", "", _table(cascade_rows(results)), "",
        "Accuracy is full match in points; the interval is the paired bootstrap 95% interval of cascade minus "
        "secondary, McNemar's exact p beside the cases only the cascade / only the secondary gets right; seconds "
        "per case as described under *Seconds*. The cascade pays when it is not significantly below the "
        "secondary (p >= 0.05 or the interval holds 0) at fewer seconds per case.", "",
        "## How well each signal ranks the primary's mistakes (test AUROC)", "", _table(auroc_rows(results)), "",
        "AUROC for \"the 0.5B's decision is wrong\" on the test rows (0.5: no signal). Each single signal is oriented "
        "so that higher means more likely wrong: its direction was chosen on the train rows (the *wrong when* "
        "beside it), so a signal whose test AUROC is below 0.5 ran the other way on test; a missing value is read "
        "as the train median.", "",
        "## The learned score's routing curve (test)", "", _table(routing_rows(results)), "",
        "APGR: the area under the share of the accuracy gap recovered over the escalation rate (0.5: a random "
        "router; above 1 where the cascade passes the secondary); undefined (-) where the secondary is not more "
        "accurate than the primary. *Oracle escalation*: "
        "the least escalation with which any detector matches the secondary; *perfect detector*: the best a "
        "detector can do, escalating exactly the cases only the secondary gets right.", "",
        "## Per suite (test)", "", _table(suite_rows(results)), "",
        "The detector's AUROC within each suite: a pooled AUROC can exceed every suite's own when the suites' "
        "error rates differ, since then telling the suites apart already ranks mistakes.", "",
        "## The threshold, chosen on rows other than test", "", _table(dev_rows(results)), "",
        f"Rule: {THRESHOLD_RULE} (*dev* read as the rows it was chosen on).", "",
        "## The detectors", "", _table(weight_rows(results)), "", _method(), "",
        "## Seconds", "", _table(seconds_rows(groups)), "", _seconds_note(), "",
        "## Provenance", "", _table(provenance_rows(groups)), ""]
    return "\n".join(sections)


def _intro() -> str:
    groups = "; ".join(f"**{g}**: {' + '.join(s)}" for g, s in GROUPS.items())
    return ("The primary (qwen2.5-coder-0.5b) answers every case; a logistic regression on the relevance signals "
            "its answer leaves behind scores P(the primary is wrong), and a case scoring at least the threshold "
            "is escalated to the secondary (qwen2.5-coder-1.5b), whose answer it takes. One detector per group, "
            f"fitted on the group's train rows ({groups}), its threshold chosen on dev, reported on test. Two "
            "detectors each: the free signals only, and with the paid `verify` signal too; then the free detector "
            "on every group together (*pooled*). These rows were recorded without the relevance stage deciding (the "
            f"selection alone, `native-strict`). Last, **{BOARD_GROUP}**: the board's whole-category runs of "
            f"{' and '.join(f'`bfcl:{c}`' for c in BOARD_CATEGORIES)} by each model's default selector "
            f"(`{BOARD_STRATEGY}` with its relevance model), the decisions `--cascade auto` sees live; its "
            "detectors read the free signals, and with them the relevance stage's verdict (*free + stage*: its "
            "probability that a call is wanted, `relevance_p`, and whether it dropped the calls, "
            "`relevance_overruled`). They are fitted on train + dev together and thresholded on those rows' "
            f"out-of-fold scores ({FOLDS} folds: more rows to choose on than the small dev split alone), "
            f"then read on test. The router that ships (`tool_selection/stuck/routers/`, `toolsel eval --cascade "
            f"auto`, written by `--save`) is {SHIPPED[0]}, {SHIPPED[1]}; [the cascade page](cascade.md) runs it live.")


def _method() -> str:
    left_out = "; ".join(f"`{name}`: {why}" for name, why in LEFT_OUT.items())
    stage = ", ".join(f"`{name}`" for name in STAGE_INPUTS)
    return (f"Free signals: {', '.join(f'`{s}`' for s in FREE_SIGNALS)}; paid: `verify` (one more model question "
            f"per case with a call); the stage's verdict (*free + stage*): {stage}, as the relevance stage recorded "
            "them (the 0.5B's relevance model was fitted on BFCL's train rows among others, so on the train rows "
            "they are in-sample; on test they are not). A logistic regression (scikit-learn, C = 1, L2) on the "
            "signals standardised with their train means and spreads; a missing value counts as the train mean, "
            "and each signal also has a "
            "weight for its being missing (a signal is missing when the primary made no call), stored as data as "
            "`tool_selection.stuck.learned.RouterModel`. `unlisted` is 0 on every row (the strict grammar only "
            f"names listed tools) and so carries nothing. Left out: {left_out}. Signals the run did not record "
            "(see *signals computed here* under Provenance) were computed from each row's request, tools and "
            "decision with the code that records them (`evals.relevance.fill_decision_signals`, the suite's "
            "fingerprint checked; on the suites where both exist the recomputed values equal the recorded ones). "
            f"Not used: the test-only suites {', '.join(TEST_ONLY)}, whose 0.5B rows hold only the log-probability "
            "signals (the rest need the embedding model or a model call to recompute).")


def _seconds_note() -> str:
    return ("Seconds per case are the rows' recorded `latency_s` minus the relevance stage's own seconds "
            "(`relevance_seconds`, which `latency_s` includes): each model's selection alone. The cascade costs the "
            "primary's selection, plus the detector, plus the secondary's selection where escalated; the free "
            "detector is counted at 0 s (its signals are byproducts of the answer, though the embedding signals "
            "take part of the stage's time shown above), the `verify` detector at the whole stage's seconds (an "
            "upper bound: the runs do not time `verify` apart). **These latencies were not all measured with the "
            "machine to itself**: the runs were made at different times and commits, some while other jobs shared "
            "the CPU, and the two models' runs of a suite were not interleaved; where the 0.5B is slower than the "
            "1.5B on the same cases, load, not the model, is the likely cause. Read the seconds and the ratios as "
            "indicative; a cascade's cost wants measuring in one run, alone (`evals.benchmarks.relevance_cost`).")


# --- the command ------------------------------------------------------------------------------------------------

def run(results: Path, *, board: Path = BOARD, primary: str = PRIMARY, secondary: str = SECONDARY,
        seed: int = 0) -> tuple[list[GroupData], list[VariantResult]]:
    """Every group's data and every detector's result: each group of ``results`` (the selection without its
    relevance stage), the free detector on all of them together (``POOLED``), then ``BOARD_GROUP``'s detectors, the
    shipped router (``SHIPPED``) among them, thresholded out of fold on train + dev."""
    signals = max(VARIANTS.values(), key=len)
    names = {"primary": primary, "secondary": secondary}
    groups = [load_group(results, name, suites, signals, **names) for name, suites in GROUPS.items()]
    outcomes = [evaluate_variant(data.name, variant, data.table, variant_signals, seed=seed, **names)
                for data in groups for variant, variant_signals in VARIANTS.items()]
    pooled = pd.concat([data.table for data in groups], ignore_index=True)
    outcomes.append(evaluate_variant(POOLED, "free", pooled, FREE_SIGNALS, seed=seed, **names))
    groups.append(load_board_group(board, max(BOARD_VARIANTS.values(), key=len), **names))
    outcomes += [evaluate_variant(BOARD_GROUP, variant, groups[-1].table, variant_signals, seed=seed,
                                  threshold_on=OUT_OF_FOLD, **names)
                 for variant, variant_signals in BOARD_VARIANTS.items()]
    return groups, outcomes


def shipped_router(result: VariantResult) -> RouterModel:
    """A detector as the router that ships: its threshold (escalate none: 1.0) and the figures it was chosen on."""
    threshold = 1.0 if math.isinf(result.threshold) else result.threshold
    return result.model.with_threshold(threshold, {
        "rule": THRESHOLD_RULE, "chosen_on": result.threshold_on,
        "within_tolerance": result.threshold_met, "escalation_rate": float(result.dev_point["escalation_rate"]),
        "cascade_accuracy": float(result.dev_point["accuracy"]),
        "secondary_accuracy": result.dev_secondary_accuracy})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.learned_router",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="Write the markdown page here (default: print it).")
    parser.add_argument("--results", default=str(RESULTS),
                        help=f"Folder of <model>/<suite>/ rows (default: {RESULTS}).")
    parser.add_argument("--primary", default=PRIMARY, help=f"The primary's folder name (default: {PRIMARY}).")
    parser.add_argument("--secondary", default=SECONDARY, help=f"The secondary's folder name (default: {SECONDARY}).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the bootstrap (default: 0).")
    parser.add_argument("--save", nargs="?", const=str(ROUTERS_DIR), metavar="DIR",
                        help="Write the pooled free detector as the primary's router, <primary>.json in DIR "
                             "(default: the shipped routers' folder, tool_selection/stuck/routers).")
    args = parser.parse_args(argv)
    from evals.tracking import git_commit

    groups, outcomes = run(Path(args.results), primary=args.primary, secondary=args.secondary, seed=args.seed)
    command = " ".join(["python -m evals.benchmarks.learned_router",
                        *map(shlex.quote, sys.argv[1:] if argv is None else argv)])
    page = markdown_page(groups, outcomes, command=command, commit=git_commit(), today=date.today().isoformat())
    if args.out:
        Path(args.out).write_text(page, encoding="utf-8")
        print(f"page: {args.out}")
    else:
        print(page)
    if args.save:
        router = shipped_router(next(r for r in outcomes if (r.group, r.variant) == SHIPPED))
        path = router.save(Path(args.save) / f"{args.primary}.json")
        print(f"router: {path} ({router.fingerprint}, escalates at P(wrong) >= {router.threshold:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
