"""Prompt optimization of ``MultiToolSelector`` with DSPy optimizers, and compiled selectors for deployment.

Trains on a suite's train split, selects on dev, and never reads test: the final test score comes from the
harness (``evals.evaluation``) after compilation. The optimizers score with the harness's own metric
(``evals.metrics.score_case``), balanced: each example weighs so that the cases that need a tool and those that
need none count equally in a split's mean, so no optimizer gains by refusing everything; GEPA's variant adds
textual feedback naming what was wrong. A program whose dev false abstention rises by more than
``MAX_FALSE_ABSTENTION_RISE`` over the unoptimized selector's is not saved unless allowed. With
``target="descriptions"`` the tools' descriptions are what is optimized, by GEPA, and the program is left as it
is (``evals.description_optimization``). The examples and metrics live in ``evals.optimization_metrics``, the
optimizers by name in ``evals.optimizers``; their public names are importable from here too.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
from tqdm.auto import tqdm

from evals.metrics import balanced_accuracy
from evals.naming import slug
from evals.optimization_metrics import (
    accuracy_metric,
    describe_errors,
    feedback_metric,
    gold_calls,
    make_examples,
    selection_metric,
)
from evals.optimize_settings import Budget, OptimizeSettings
from evals.optimizers import (
    OPTIMIZERS,
    Optimizer,
    OptimizerSetup,
    UnknownOptimizerError,
    build_optimizer,
    get_optimizer,
    optimizer_names,
    register_optimizer,
)
from evals.runner import EvalResult
from evals.suite import Suite, load_suite, registry_for
from tool_selection.compiled import Manifest, keep_signature_fields, save_compiled, tool_fingerprint
from tool_selection.defaults import NO_CASCADE, NO_RELEVANCE
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance import RelevanceStage, resolve_relevance
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter, compact_demo
from tool_selection.spec import SelectorSpec
from tool_selection.strategies import STRUCTURED_STRATEGY

__all__ = [
    "MAX_FALSE_ABSTENTION_RISE",
    "OPTIMIZERS",
    "Budget",
    "FalseAbstentionRiseError",
    "OptimizeResult",
    "OptimizeSettings",
    "Optimizer",
    "OptimizerSetup",
    "UnknownOptimizerError",
    "accuracy_metric",
    "build_optimizer",
    "describe_errors",
    "feedback_metric",
    "get_optimizer",
    "gold_calls",
    "make_examples",
    "optimize",
    "optimizer_names",
    "register_optimizer",
    "selection_metric",
]

MAX_FALSE_ABSTENTION_RISE = 0.10


class FalseAbstentionRiseError(ToolSelectionError):
    """The optimized program refuses far more requests that need a call than the selector it started from."""


def _compact_demos(program: MultiToolSelector) -> None:
    """Keep demonstrations as the model saw them during optimization (``selector.DEMO_OMITS``)."""
    for predictor in program.predictors():
        predictor.demos = [compact_demo(d) for d in predictor.demos]


@dataclass
class OptimizeResult:
    program: MultiToolSelector
    out_dir: Path
    manifest: Manifest
    wall_time_s: float
    model_calls: int
    dev_score: float | None = None
    candidate_scores: list[float] = field(default_factory=list)
    mlflow_run_id: str | None = None


class _CallCounter:
    """Counts LM calls made through DSPy (cache hits included) via DSPy's callback hooks."""

    def __init__(self):
        from dspy.utils.callback import BaseCallback

        counter = self

        class Callback(BaseCallback):
            def on_lm_start(self, call_id, instance, inputs):
                counter.calls += 1

        self.calls = 0
        self.callback = Callback()


def optimize(suite: str | Suite, model: str | dspy.BaseLM, settings: OptimizeSettings | None = None, *,
             selector: SelectorSpec | None = None, run: RunConfig | None = None, **fields: Any) -> OptimizeResult:
    """Optimize a selector for ``model`` on ``suite``'s train split (dev for selection), save it to ``run.run_dir``
    (default ``programs/<suite>-<optimizer>-<model>``), then score it on test with the harness and log everything
    to MLflow. ``settings`` and ``fields`` (``OptimizeSettings`` fields: ``target=``, ``optimizer=``, ``teacher=``,
    ``budget=``, ``train_limit=``, ...) say what is optimized how; ``selector`` the selector optimized (its strategy, and a
    relevance model saved with the program and applied after its selections: ``auto``, ``none`` (the default) or
    a file; optimization itself scores the selection alone); ``run`` how it runs (threads, max_tokens, MLflow,
    ``progress``: each stage announced on stderr, with its progress bars). With dev cases, the unoptimized selector is scored on dev too, and a program whose dev false abstention is more
    than 10 points above its is refused (``FalseAbstentionRiseError``) unless ``allow_false_abstention_rise``."""
    run = run or RunConfig()
    settings = OptimizeSettings.build(settings, **fields)
    spec = selector or SelectorSpec(relevance=NO_RELEVANCE)
    if spec.cascade != NO_CASCADE:
        raise ToolSelectionError(f"--cascade {spec.cascade} hands decisions to another model, which a compiled "
                                 "program cannot hold: optimize without it, then evaluate the compiled program with "
                                 "--cascade (toolsel eval --program DIR --cascade auto).")
    if run.mlflow:
        from evals.tracking import check_tracking_uri

        check_tracking_uri(run.tracking_uri)
    job = _OptimizeJob.start(suite, model, settings, spec, run)
    result = job.compile()
    if settings.evaluate_test:
        job.score_test(result)
    if run.mlflow:
        job.log(result)
    return result


@dataclass
class _OptimizeJob:
    """One optimization, in its steps: the examples and LMs, the compilation, the test score, the MLflow run."""

    suite: Suite
    settings: OptimizeSettings
    spec: SelectorSpec
    run: RunConfig
    lm: dspy.BaseLM
    teacher_lm: dspy.BaseLM | None
    model_name: str
    train: list[dspy.Example]
    dev: list[dspy.Example]
    test_summary: dict[str, float] = field(default_factory=dict)
    optimizer_args: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(cls, suite: str | Suite, model: str | dspy.BaseLM, settings: OptimizeSettings, spec: SelectorSpec,
              run: RunConfig) -> _OptimizeJob:
        """The train and dev examples and the loaded LMs (a broken engine stops here: DSPy's optimizers would count
        its error as a score)."""
        from tool_selection.lm import prepare_lm

        suite_obj = suite if isinstance(suite, Suite) else load_suite(suite)
        train = make_examples(suite_obj.split("train").limit(settings.train_limit))
        dev = make_examples(suite_obj.split("dev").limit(settings.dev_limit))
        if not train:
            raise ToolSelectionError(f"Suite {suite_obj.name!r} has no train cases to optimize on.")
        lm = _lm(model, max_tokens=run.max_tokens, constrained=spec.constrain)
        teacher = settings.teacher
        teacher_lm = _lm(teacher, max_tokens=run.max_tokens, constrained=spec.constrain) if teacher else None
        for each in (lm, teacher_lm):
            if each is not None:
                prepare_lm(each)
        model_name = model if isinstance(model, str) else getattr(model, "model", "custom")
        return cls(suite_obj, settings, spec, run, lm, teacher_lm, model_name, train, dev)

    @property
    def teacher_name(self) -> str | None:
        teacher = self.settings.teacher
        return teacher if isinstance(teacher, str) or teacher is None else getattr(teacher, "model", "custom")

    def stage(self, name: str, what: str) -> None:
        """Announce a stage on stderr (with ``run.progress``), numbered among those this optimization runs; its
        progress bars follow."""
        if not self.run.progress:
            return
        stages = ["compile", *(["dev"] if self.dev else []), *(["test"] if self.settings.evaluate_test else [])]
        tqdm.write(f"optimize {stages.index(name) + 1}/{len(stages)}, {name}: {what}", file=sys.stderr)

    def student(self) -> MultiToolSelector:
        """The selector optimized, its strategy pinned to the student's model (``auto`` with a local student and a
        hosted teacher: each model's own, per call)."""
        student = MultiToolSelector.from_spec(  # the spec's relevance model is applied after, to the compiled program
            self.spec.model_copy(update={"strategy": self.spec.strategy_or_default, "relevance": NO_RELEVANCE}))
        teacher_lm = self.teacher_lm
        if teacher_lm is None or student.strategy.resolved_name(teacher_lm) == student.strategy.resolved_name(self.lm):
            student.pin_strategy(self.lm)  # checks lm too
        else:
            student.check_lm(self.lm)
        return student

    def out_dir(self, strategy: str) -> Path:
        optimizer = self.settings.optimizer + ("-descriptions" if self.settings.target == "descriptions" else "")
        label = optimizer if strategy == STRUCTURED_STRATEGY else f"{optimizer}-{slug(strategy)}"
        return self.run.run_dir or Path("programs") / f"{self.suite.name}-{label}-{slug(self.model_name)}"

    def compile(self) -> OptimizeResult:
        """Compile, score on dev against the unoptimized selector, and save the program with its manifest."""
        student = self.student()
        out_dir = self.out_dir(student.strategy_name)
        if self.settings.target == "descriptions":  # GEPA over the tools' descriptions
            from evals.description_optimization import DescriptionGEPA

            optimizer_obj = DescriptionGEPA(self.settings.budget, self.teacher_lm or self.lm, threads=self.run.threads,
                                            log_dir=out_dir / "optimizer_log", progress=self.run.progress,
                                            max_metric_calls=self.settings.max_metric_calls)
            optimizer_args = optimizer_obj.arguments
        else:
            optimizer_obj, optimizer_args = build_optimizer(
                self.settings.optimizer, self.settings.budget, student_lm=self.lm, teacher_lm=self.teacher_lm,
                threads=self.run.threads, log_dir=out_dir / "optimizer_log",
                max_metric_calls=self.settings.max_metric_calls)
        self.optimizer_args = optimizer_args
        optimizer = get_optimizer(self.settings.optimizer)
        budget = self.settings.budget if self.settings.max_metric_calls is None else (
            f"{self.settings.max_metric_calls} metric calls")
        self.stage("compile", f"{optimizer.name} ({budget}) on {len(self.train)} train cases"
                              f"{f' and {len(self.dev)} dev' if self.dev and optimizer.uses_dev else ''}: "
                              f"{optimizer.stages or 'DSPy compiles'}")
        counter, start = _CallCounter(), time.perf_counter()
        with dspy.context(lm=self.lm, adapter=ToolSelectionAdapter(), callbacks=[counter.callback]):
            if optimizer.uses_dev:
                compiled = optimizer_obj.compile(student, trainset=self.train, valset=self.dev or None)
            else:
                compiled = optimizer_obj.compile(student, trainset=self.train)
        _compact_demos(compiled)
        keep_signature_fields(compiled)  # dev and test score what is saved
        wall = time.perf_counter() - start
        candidates = _candidate_scores(compiled)
        dev_score, dev_scores = self.score_dev(compiled, student.strategy_name, out_dir)
        manifest = self.manifest(student, optimizer_args, dev_score, dev_scores)
        manifest.cost = {"compile_seconds": wall, "model_calls": float(counter.calls),
                         **({"candidates": float(len(candidates))} if candidates else {})}
        compiled.tools = registry_for(self.suite.cases[0]) if manifest.tool_set else None
        relevance_model = resolve_relevance(self.spec.relevance, self.model_name)
        compiled.relevance = RelevanceStage(relevance_model) if relevance_model is not None else None
        save_compiled(compiled, out_dir, manifest)
        return OptimizeResult(program=compiled, out_dir=out_dir, manifest=manifest, wall_time_s=wall,
                              model_calls=counter.calls, dev_score=dev_score, candidate_scores=candidates)

    def score_dev(self, compiled: MultiToolSelector, strategy: str,
                  out_dir: Path) -> tuple[float | None, dict[str, float]]:
        """The compiled program's dev accuracy, and its dev figures beside the unoptimized selector's (a program
        that gains by refusing is refused here)."""
        from evals.evaluation import evaluate

        if not self.dev:
            return None, {}
        self.stage("dev", f"scoring the optimized program, then the unoptimized selector, on {len(self.dev)} dev cases")
        dev_suite = Suite(f"{self.suite.name}:dev", [e.case for e in self.dev])
        scoring = RunConfig(mlflow=False, fresh=True, progress=self.run.progress)
        dev_eval = evaluate(dev_suite, self.lm, split=None, selector=compiled,
                            run=scoring.replace(run_dir=out_dir / "dev_eval"))
        baseline = evaluate(dev_suite, self.lm, split=None,  # the selection alone, as the program was just scored
                            selector=SelectorSpec(strategy=strategy, relevance=NO_RELEVANCE),
                            run=scoring.replace(run_dir=out_dir / "dev_eval_unoptimized"))
        dev_scores = _dev_scores(dev_eval, baseline)
        _check_false_abstention(dev_scores, allowed=self.settings.allow_false_abstention_rise)
        if dev_eval.accuracy == 0 and baseline.accuracy == 0:  # saved, but never silently
            tqdm.write(f"warning: the optimized program and the selector it started from got none of the "
                       f"{len(self.dev)} dev cases right, so nothing shows that it learned anything. With more than a "
                       "few dev cases that is most often a setup that cannot work (the model unreachable, answers it "
                       f"cannot read, the wrong strategy for the model): see the rows in {out_dir / 'dev_eval'}.",
                       file=sys.stderr)
        return dev_eval.accuracy, dev_scores

    def manifest(self, student: MultiToolSelector, optimizer_args: dict[str, Any], dev_score: float | None,
                 dev_scores: dict[str, float]) -> Manifest:
        tool_sets = {c.tool_set for c in self.suite.cases}
        tool_set = next(iter(tool_sets)) if len(tool_sets) == 1 and None not in tool_sets else None
        spec = student.to_spec().model_copy(update={"tools": tool_set, "relevance": self.spec.relevance})
        return Manifest(
            tool_set=tool_set, tools=tool_fingerprint(registry_for(self.suite.cases[0])) if tool_set else {},
            model=self.model_name, optimizer=self.settings.optimizer,
            optimizer_args={**optimizer_args, "budget": self.settings.budget}, teacher=self.teacher_name,
            suite=self.suite.name, strategy=student.strategy_name, selector=spec,
            scores={k: v for k, v in {"dev_accuracy": dev_score, **dev_scores}.items() if v is not None},
        )

    def score_test(self, result: OptimizeResult) -> None:
        """The saved program's test figures, in its manifest too."""
        from evals.evaluation import evaluate

        self.stage("test", "scoring the optimized program on the test split")
        test = evaluate(self.suite, self.lm, split="test", selector=result.program,
                        run=RunConfig(limit=self.settings.test_limit, mlflow=False, fresh=True,
                                      run_dir=result.out_dir / "test_eval", progress=self.run.progress))
        self.test_summary = test.summary
        result.manifest.scores["test_accuracy"] = test.accuracy
        for name, value in (("balanced_accuracy", balanced_accuracy(test.results)),
                            ("false_abstention_rate", test.summary.get("false_abstention_rate", math.nan))):
            if not math.isnan(value):
                result.manifest.scores[f"test_{name}"] = value
        save_compiled(result.program, result.out_dir, result.manifest)

    def log(self, result: OptimizeResult) -> None:
        from evals.tracking import git_commit, log_run

        settings, out_dir = self.settings, result.out_dir
        params = {
            "kind": "optimize", "suite": self.suite.name, "suite_fingerprint": self.suite.fingerprint,
            "train_cases": len(self.train), "dev_cases": len(self.dev),
            "model": self.model_name, "teacher": self.teacher_name, "optimizer": settings.optimizer,
            "target": settings.target,
            "optimizer_args": json.dumps(self.optimizer_args, default=str),
            "budget": settings.budget, "strategy": result.manifest.strategy,
            "dspy_version": dspy.__version__, "git_commit": git_commit(), "program_dir": str(out_dir),
        }
        extra = {"wall_time_s": result.wall_time_s, "model_calls": float(result.model_calls)}
        if result.dev_score is not None:
            extra["dev_accuracy"] = result.dev_score
        for i, score in enumerate(result.candidate_scores):
            extra[f"candidate_{i:02d}_dev_score"] = score
        result.mlflow_run_id = log_run(
            params=params, summary={f"test_{k}": v for k, v in self.test_summary.items()}, extra_metrics=extra,
            artifacts=[out_dir / "program.json", out_dir / "manifest.json"], run_name=out_dir.name, run=self.run,
        )


def _dev_scores(optimized: EvalResult, unoptimized: EvalResult) -> dict[str, float]:
    """Dev balanced accuracy and false abstention of the optimized program and of the selector it started from."""
    scores = {}
    for prefix, run in (("dev", optimized), ("dev_unoptimized", unoptimized)):
        values = {"balanced_accuracy": balanced_accuracy(run.results),
                  "false_abstention_rate": run.summary.get("false_abstention_rate", math.nan)}
        scores.update({f"{prefix}_{name}": value for name, value in values.items() if not math.isnan(value)})
    return scores


def _check_false_abstention(dev_scores: dict[str, float], *, allowed: bool) -> None:
    after, before = dev_scores.get("dev_false_abstention_rate"), dev_scores.get("dev_unoptimized_false_abstention_rate")
    if after is None or before is None or after - before <= MAX_FALSE_ABSTENTION_RISE + 1e-9 or allowed:
        return
    raise FalseAbstentionRiseError(
        f"The optimized program abstains on {100 * after:.1f}% of the dev cases that need a call, against "
        f"{100 * before:.1f}% before optimization (+{100 * (after - before):.1f} points, more than "
        f"{100 * MAX_FALSE_ABSTENTION_RISE:.0f}): it gains by refusing, so it was not saved. Its dev rows are in "
        "dev_eval/. Try another optimizer or more train cases, or save it anyway with "
        "--allow-false-abstention-rise.")


def _candidate_scores(compiled: Any) -> list[float]:
    """Per-candidate scores where the optimizer records them (random search, MIPRO, GEPA)."""
    candidates = getattr(compiled, "candidate_programs", None)
    if candidates:
        return [float(c["score"]) if isinstance(c, dict) else float(c[0]) for c in candidates]
    details = getattr(compiled, "detailed_results", None)
    if details is not None and getattr(details, "val_aggregate_scores", None):
        return [float(s) for s in details.val_aggregate_scores]
    return []


def _lm(spec: str | dspy.BaseLM | None, *, max_tokens: int, constrained: bool) -> dspy.BaseLM | None:
    if spec is None or isinstance(spec, dspy.BaseLM):
        return spec
    from tool_selection.lm import get_lm

    return get_lm(spec, max_tokens=max_tokens, constrained=constrained)
