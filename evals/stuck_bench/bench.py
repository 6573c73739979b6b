"""Running the stuck benchmark: each model alone through the harness, the tables, the optional live protocol run,
the files and the MLflow run."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dspy
import pandas as pd

from evals.evaluation import evaluate
from evals.metrics import bootstrap_ci
from evals.naming import slug
from evals.runner import TABLE_FILE, Evaluator
from evals.stuck_bench.plots import plot
from evals.stuck_bench.report import mlflow_metrics
from evals.stuck_bench.routing import RECOMMENDATION_CRITERION, sweep_thresholds
from evals.stuck_bench.scoring import StuckScoredSelector
from evals.stuck_bench.settings import BenchSettings
from evals.stuck_bench.tables import BenchResult, assemble, overhead_column, pair_label, price, score_column
from evals.suite import Suite, load_suite
from evals.tracking import git_commit, log_run, write_json
from tool_selection.collaboration import (
    CostFn,
    EscalationPolicy,
    ModelCollaborationProtocol,
    catalog_cost,
    check_cost,
    model_name,
    resolve_lm,
)
from tool_selection.defaults import NO_CASCADE
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance import RelevanceStage
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter
from tool_selection.spec import SelectorSpec
from tool_selection.strategies import STRUCTURED_STRATEGY
from tool_selection.stuck import detector_class

__all__ = ["GUIDE_NOTE", "run_stuck_bench"]

GUIDE_NOTE = ("Sweeps are the delegate strategy, computed offline from the per-case tables of each model alone. "
              "The guide strategy changes the primary's answer and needs live runs "
              "(--live-threshold T --live-strategy guide).")
DEFAULT_BENCH_DIR = Path("runs") / "stuck_bench"
Model = str | dspy.BaseLM


def run_stuck_bench(suite: str | Suite, pairs: Sequence[tuple[Model, Model]], settings: BenchSettings | None = None,
                    *, selector: SelectorSpec | None = None, run: RunConfig | None = None,
                    cost_fn: CostFn | None = None, **fields: Any) -> BenchResult:
    """Run the benchmark (see the package docstring); returns the tables, also saved under ``run.run_dir``.

    ``settings`` (a ``BenchSettings``) and ``fields`` (any of its fields, e.g. ``detectors=["validation"]``,
    ``thresholds="0:1:0.1"``, ``live_threshold=0.5``) say what is measured; ``selector`` how the selectors ask the
    models (its strategy, default ``auto``); ``run`` how the run is carried out (``limit``: the first N cases of
    each split; ``max_tokens``; ``cache``, on unless the run says otherwise, so that a rerun reads the detectors'
    samples back alike; threads, progress, MLflow, the output folder). ``cost_fn`` prices a call (default: the
    model catalog)."""
    run = run or RunConfig()
    if run.sample is not None:
        raise ToolSelectionError("The stuck benchmark takes the first cases of each split (the run config's limit), "
                                 "not a sample.")
    if "cache" not in run.model_fields_set:
        run = run.replace(cache=True)
    spec = selector or SelectorSpec()
    strategy = spec.strategy_or_default
    settings = BenchSettings.build(settings, **fields)
    suite_obj = suite if isinstance(suite, Suite) else load_suite(suite)
    splits = list(dict.fromkeys([settings.dev_split, settings.test_split]))
    for split in splits:
        if not len(suite_obj.split(split).limit(run.limit)):
            raise ToolSelectionError(f"Suite {suite_obj.name!r} has no {split!r} cases (it has "
                                     f"{dict(suite_obj.split_counts())}); choose splits with --dev-split/--test-split.")
    cost_fn = cost_fn or catalog_cost
    names, models = _checked_pairs(pairs, cost_fn)
    _check_runnable(spec, settings, names)
    params = _params(settings, suite_obj, names, spec=spec, run=run)
    out_dir = _out_dir(run, params, suite_obj)
    run = run.replace(run_dir=out_dir)
    notes = [GUIDE_NOTE, f"Recommended threshold: {RECOMMENDATION_CRITERION}."]
    lms = _loaded(models, {p for p, _ in names}, settings, run)
    per_model = {}
    for split in splits:
        for name, lm in lms.items():
            table = _run_model(suite_obj, name, lm, split, settings, spec=spec, run=run,
                               detectors=settings.detectors if name in {p for p, _ in names} else ())
            per_model[(name, split)] = price(table, name, cost_fn, settings.detectors)
            if not (table["input_tokens"] + table["output_tokens"]).any():
                notes.append(f"{name} ({split}): every token count is 0, so its costs are 0 (DSPy cache hits carry "
                             "no usage); run with --no-cache or a fresh --out for costs.")

    tables = assemble(names, splits, settings.detectors, settings.thresholds, per_model)
    result = BenchResult(sweep=tables.sweep, summary=tables.summary, recommendations=tables.recommendations,
                         curves=tables.curves, cases=tables.cases, baselines=tables.baselines, out_dir=out_dir,
                         notes=notes + tables.notes)
    if settings.live_threshold is not None:
        result.live = _live_runs(result, names, lms, suite_obj.split(settings.test_split).limit(run.limit),
                                 settings, cost_fn, strategy=strategy, run=run)
    _save(result, params)
    if run.mlflow:
        result.mlflow_run_id = log_run(params={**params, "out_dir": str(out_dir)}, summary=mlflow_metrics(result),
                                       artifacts=result.files, run_name=f"stuck-bench-{out_dir.name}", run=run)
    return result


def _checked_pairs(pairs: Sequence[tuple[Model, Model]],
                   cost_fn: CostFn) -> tuple[list[tuple[str, str]], dict[str, Model]]:
    """The pairs' model names, and each model once by name; a pair of one model twice, or a model ``cost_fn``
    cannot price, is refused before any model loads."""
    if not pairs:
        raise ToolSelectionError("Give at least one model pair (PRIMARY,SECONDARY).")
    names = [(model_name(a), model_name(b)) for a, b in pairs]
    for primary, secondary in names:
        if primary == secondary:
            raise ToolSelectionError(f"Pair {primary},{secondary}: the primary and secondary are the same model.")
    models: dict[str, Model] = {}
    for pair in pairs:
        for model in pair:
            models.setdefault(model_name(model), model)
    for name in models:
        check_cost(cost_fn, name)
    return names, models


def _check_runnable(spec: SelectorSpec, settings: BenchSettings, names: Sequence[tuple[str, str]]) -> None:
    """Before any model runs: a selector with a cascade is refused (the benchmark is one, offline), every detector
    is built for each primary (a learned one without a router fails now, as does one whose router reads the relevance
    stage's verdict where the primary's selector runs no relevance model), and a live run is checked."""
    if spec.cascade != NO_CASCADE:
        raise ToolSelectionError("The stuck benchmark is the cascade, computed offline from each model alone: leave "
                                 f"--cascade out (got {spec.cascade!r}); benchmark a router with --detectors learned.")
    for primary, _ in names:
        for detector in settings.detectors:
            router = getattr(settings.detector(detector, primary=primary), "router", None)
            if router is not None:
                stage = _relevance_stage(spec, primary)
                router.check_stage(stage is not None and stage.model is not None)
    if settings.live_threshold is not None:
        _check_live_selector(spec, names)


def _relevance_stage(spec: SelectorSpec, model: str) -> RelevanceStage | None:
    """The relevance stage ``model``'s selector would run under ``spec`` (built without its cascade)."""
    return MultiToolSelector.from_spec(spec.model_copy(update={"cascade": NO_CASCADE}), model=model).relevance


def _check_live_selector(spec: SelectorSpec, names: Sequence[tuple[str, str]]) -> None:
    """A live run asks both models through one selector, and a relevance model belongs to one model: refused
    where either model would run one."""
    for pair in names:
        for name in pair:
            if _relevance_stage(spec, name):
                raise ToolSelectionError(f"A live run asks both models through one selector, and {name} would run "
                                         "its own relevance model: add --relevance none to compare live runs, or "
                                         "leave --live-threshold out (the offline sweep runs each model's own).")


def _out_dir(run: RunConfig, params: dict[str, Any], suite: Suite) -> Path:
    """``run.run_dir``, else a folder named for the suite and a hash of what determines the results."""
    digest = hashlib.sha256(json.dumps({k: params[k] for k in ("suite_fingerprint", "pairs", "detectors", "limit",
                                                               "consistency_k", "temperature", "max_tokens",
                                                               "selection_strategy", "selector", "router")},
                                       sort_keys=True).encode()).hexdigest()[:8]
    out_dir = run.run_dir or DEFAULT_BENCH_DIR / f"{slug(suite.name)}-{digest}"
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def _loaded(models: dict[str, Model], primaries: set[str], settings: BenchSettings,
            run: RunConfig) -> dict[str, dspy.BaseLM]:
    """Each model's LM, loaded now (primaries with log-probabilities when a detector reads them)."""
    from tool_selection.lm import prepare_lm

    needs_logprobs = any(detector_class(d).needs_logprobs for d in settings.detectors)
    lms = {name: resolve_lm(model, logprobs=needs_logprobs and name in primaries, max_tokens=run.max_tokens,
                            cache=run.cache)
           for name, model in models.items()}
    for lm in lms.values():
        prepare_lm(lm)
    return lms


def _params(settings: BenchSettings, suite: Suite, names: list[tuple[str, str]], *, spec: SelectorSpec,
            run: RunConfig) -> dict[str, Any]:
    """How the run was built, as MLflow params (and part of its directory's name)."""
    return {
        "kind": "stuck_bench", "suite": suite.name, "suite_fingerprint": suite.fingerprint,
        "pairs": [list(p) for p in names], "detectors": list(settings.detectors), "thresholds": settings.thresholds,
        "dev_split": settings.dev_split, "test_split": settings.test_split, "limit": run.limit,
        "consistency_k": settings.consistency_k, "temperature": settings.temperature, "router": settings.router,
        "max_tokens": run.max_tokens, "live_threshold": settings.live_threshold,
        "strategy": settings.strategy if settings.live_threshold is not None else "delegate (offline)",
        "selection_strategy": spec.strategy_or_default, "selector": spec.describe(),
        "dspy_version": dspy.__version__, "git_commit": git_commit(),
    }


def _run_model(suite: Suite, name: str, lm: dspy.BaseLM, split: str, settings: BenchSettings, *,
               spec: SelectorSpec, detectors: Sequence[str], run: RunConfig) -> pd.DataFrame:
    """One model alone on one split, through the harness, with the selector ``spec`` describes for it (its own
    relevance model under ``auto``); scored by ``detectors`` when it is a primary, its relevance stage then also
    recording the signals a learned detector's router reads. Logged as an ordinary zero-shot eval run (the
    detectors do not change the prompt), so ``toolsel eval compare`` and the optimization notebook find it. Its
    folder is under ``run.run_dir``, the benchmark's."""
    built = [settings.detector(d, primary=name) for d in detectors]
    read = sorted({signal for d in built for signal in getattr(getattr(d, "router", None), "relevance_signals", ())})
    if read:
        spec = spec.model_copy(update={"relevance_signals": tuple(dict.fromkeys([*(spec.relevance_signals or ()),
                                                                                  *read]))})
    selector = MultiToolSelector.from_spec(spec, model=name)
    strategy, name, out_dir = spec.strategy_or_default, slug(name), run.run_dir
    if detectors:
        key = hashlib.sha256(json.dumps([list(detectors), settings.detector_options],
                                        sort_keys=True).encode()).hexdigest()[:6]
        program = StuckScoredSelector.wrap(selector, built)
        run_dir = out_dir / "runs" / split / f"{name}-scored-{key}"
    else:
        program, run_dir = selector, out_dir / "runs" / split / name
    if strategy != STRUCTURED_STRATEGY:
        run_dir = run_dir.with_name(f"{run_dir.name}-{slug(strategy)}")
    result = evaluate(suite, lm, split=split, selector=program,
                      run=run.replace(run_dir=run_dir, fresh=False))
    return result.results.copy()


def _live_runs(result: BenchResult, names: list[tuple[str, str]], lms: dict[str, dspy.BaseLM], cases: Suite,
               settings: BenchSettings, cost_fn: CostFn, *, strategy: str, run: RunConfig) -> pd.DataFrame:
    """The protocol run for real on the test split at one threshold (the only way to measure ``guide``)."""
    split, threshold, live_strategy = settings.test_split, settings.live_threshold, settings.strategy
    rows = []
    for primary, secondary in names:
        label = pair_label(primary, secondary)
        detector = settings.live_detector
        if detector is None:
            chosen = result.recommendations[result.recommendations["pair"] == label]
            detector = str(chosen["detector"].iloc[0]) if len(chosen) else "validation"
        policy = EscalationPolicy(detector=settings.detector(detector, primary=primary), threshold=threshold, strategy=live_strategy,
                                  temperature=settings.temperature)
        protocol = ModelCollaborationProtocol(lms[primary], lms[secondary], escalation=policy, cost_fn=cost_fn,
                                              selector=MultiToolSelector(strategy=strategy),
                                              adapter=ToolSelectionAdapter())
        run_dir = (result.out_dir / "live"
                   / f"{slug(primary)}__{slug(secondary)}-{detector}-{live_strategy}-{threshold:g}")
        live = Evaluator(suite=cases, threads=run.threads, progress=run.progress)(protocol, run_dir=run_dir)
        live.results.to_parquet(run_dir / TABLE_FILE, index=False)
        secondary_cost = result.baselines.query("model == @secondary and split == @split")["cost"].iloc[0]
        cases_table = result.cases.query("pair == @label and split == @split")
        offline = sweep_thresholds(cases_table, score_column(detector), [threshold],
                                   overhead=overhead_column(detector))
        mean, low, high = bootstrap_ci(live.results["full_match"])
        cost = float(live.results["cost"].mean()) if "cost" in live.results else math.nan
        rows.append({
            "pair": label, "primary": primary, "secondary": secondary, "detector": detector, "strategy": live_strategy,
            "threshold": threshold, "split": split, "cases": len(live.results), "accuracy": mean,
            "accuracy_ci_low": low, "accuracy_ci_high": high,
            "escalation_rate": float(live.results["collab_escalated"].mean()),
            "cost": cost, "cost_vs_secondary": cost / secondary_cost if secondary_cost > 0 else math.nan,
            "offline_delegate_accuracy": float(offline["accuracy"].iloc[0]),
            "offline_delegate_escalation_rate": float(offline["escalation_rate"].iloc[0]),
            "run_dir": str(run_dir),
        })
    return pd.DataFrame(rows)


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
