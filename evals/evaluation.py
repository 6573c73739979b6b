"""``evaluate()``: the main job in one call (also what ``toolsel eval`` runs).

    from evals import evaluate
    result = evaluate("treasure_hunt", "local:qwen2.5-coder-0.5b", split="test")
    result.summary["accuracy"], result.by_tag
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from evals.context_fit import check_context_fit
from evals.metrics import cost_figures
from evals.naming import slug as _slug
from evals.optimization_metrics import gold_calls
from evals.runner import TABLE_FILE, EvalResult, Evaluator
from evals.runs import run_label
from evals.suite import Suite, load_suite, registry_for, suite_reference
from evals.traces import case_tracing
from evals.tracking import check_tracking_uri, git_commit, log_run, write_json
from tool_selection.defaults import NO_CASCADE
from tool_selection.demo_pool import Demo, DemoPool
from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector, apply_spec
from tool_selection.spec import SelectorSpec, selection_params
from tool_selection.stuck.learned import resolve_router
from tool_selection.tracking import tracking_uri as resolve_tracking_uri

__all__ = ["case_params", "default_run_dir", "evaluate", "run_params", "selector_params", "train_demos"]

RUNS_DIR = Path("runs")
MLFLOW_FILE = "mlflow.json"  # the run's MLflow id and store, for 'toolsel view RUN_DIR'


def program_fingerprint(selector: MultiToolSelector) -> str:
    """A hash of what the program sends the model (instructions, field descriptions, demos, rewritten tool
    descriptions), so that a changed prompt starts a new run instead of resuming one made with the old prompt."""
    parts = []
    for name, predictor in selector.named_predictors():
        fields = {k: (f.json_schema_extra or {}).get("desc") for k, f in predictor.signature.fields.items()}
        parts.append([name, predictor.signature.instructions, fields, predictor.dump_state().get("demos", [])])
    if getattr(selector, "described", None) is not None:  # the tool descriptions it shows in place of the tools' own
        parts.append(["descriptions", selector.described.descriptions])
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def default_run_dir(params: dict[str, Any]) -> Path:
    """A directory named for what the run is (suite, split, model, strategy, program: ``evals.runs.run_label``)
    and a hash of what determines its results, so that the same evaluation resumes."""
    how_it_ran = ("threads", "ray", "git_commit", "suite_ref", "n_ctx",  # the context grows as a prompt needs
                  "strategy_reason")  # follows from the model and the strategy
    key = json.dumps({k: params[k] for k in sorted(params) if k not in how_it_ran}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    before = RUNS_DIR / f"{_slug(params['suite'])}-{params['split']}-{_slug(params['model'])}-{digest}"
    if before.is_dir():  # named before the strategy and program were part of the name: resume it where it is
        return before
    return RUNS_DIR / f"{run_label(params)}-{digest}"


def evaluate(suite: str | Suite, model: str | dspy.BaseLM, *, selector: SelectorSpec | MultiToolSelector | None = None,
             run: RunConfig | None = None, split: str | None = "test", tools: ToolRegistry | None = None) -> EvalResult:
    """Evaluate a selector on a suite split with a model; results are saved, resumable and logged to MLflow.

    ``selector``: what the selector does (a ``SelectorSpec``: strategy, gate, retrieval, argument handling,
    relevance, program; default ``SelectorSpec()``), or a built selector (the default spec's relevance then
    applies to it). ``run``: how the run is carried out (a ``RunConfig``: threads, a llama-server with ``serve``
    slots, Ray, the cache, MLflow, the run folder, ``limit``/``sample``/``seed``). ``split``: ``None`` for every
    case. ``tools`` replaces every case's own catalog (``toolsel eval --mcp``: a server's tools)."""
    run = run or RunConfig()
    built, spec = _selector_and_spec(selector)
    with contextlib.ExitStack() as stack:
        suite_obj, cases = _cases(suite, split, run, spec, tools)
        demo_pool = train_demos(suite_obj) if spec.demos is not None else None
        if run.mlflow:
            check_tracking_uri(run.tracking_uri)
        if run.ray is not None:  # an unreachable cluster stops here, before a model is loaded
            _connect_ray(run.ray, program=built, model=model, workers=run.threads)
        server = stack.enter_context(_served(model, run.serve, run.n_ctx)) if run.serve is not None else None
        job = SelectorJob(spec=spec, program=built, model=server.model_spec if server else model,
                          temperature=run.temperature, max_tokens=run.max_tokens, cache=run.cache, n_ctx=run.n_ctx,
                          seed=run.seed if run.temperature > 0 else None, demo_pool=demo_pool)
        prepared, lm, model_name, gate_name = job.prepare()
        if spec.retrieval is None:  # with retrieval, the selector sees K tools
            check_context_fit(cases, lm, tools=tools)
        if server is not None:
            model_name = model
        submit = None
        if run.ray is not None:
            from evals.fanout import RayCases
            from tool_selection.lm.specs import ModelSpec

            submit = RayCases(job, tools=tools, workers=run.threads,
                              local_model=ModelSpec.parse(job.model).is_local).submit
        params = run_params(case_params(suite, suite_obj, cases, split, run),
                            selector_params(prepared, spec, built, model_name, gate_name), run, model_name, tools,
                            served=server is not None)
        run_path = _run_path(run, params)
        trace = run.mlflow and submit is None  # cases fanned out to Ray are not traced
        with case_tracing(run) if trace else contextlib.nullcontext():
            result = Evaluator(suite=cases, threads=run.threads, progress=run.progress, tools=tools,
                               health_check=server.check_alive if server else None,
                               submit=submit, trace=trace)(prepared, lm=lm, run_dir=run_path)
        result.params = params
        if isinstance(model, str):
            _price(result, model)
        _save(result, run_path, run)
        return result


def _selector_and_spec(selector: Any) -> tuple[MultiToolSelector | None, SelectorSpec]:
    """A built selector (if one was given) and the spec applied to it, or the spec to build one from."""
    if isinstance(selector, MultiToolSelector):  # run as it is: its own relevance stage, or none
        return selector, selector.to_spec()
    if selector is None or isinstance(selector, SelectorSpec):
        return None, selector or SelectorSpec()
    raise TypeError(f"selector must be a SelectorSpec or a MultiToolSelector, got {type(selector).__name__}")


def _cases(suite: str | Suite, split: str | None, run: RunConfig, spec: SelectorSpec,
           tools: ToolRegistry | None) -> tuple[Suite, Suite]:
    """The suite and the cases to run (the split, sampled, limited); refuses an empty selection and a retrieval
    depth that keeps every tool."""
    suite_obj = suite if isinstance(suite, Suite) else load_suite(suite)
    cases = suite_obj.split(split).only(run.ids).sample(run.sample, run.seed).limit(run.limit)
    if not len(cases):
        raise ToolSelectionError(f"Suite {suite_obj.name!r} has no cases in split {split!r} (its splits: "
                                 f"{dict(suite_obj.split_counts())}).")
    if spec.retrieval is not None:
        _check_retrieve(spec.retrieval.k, tools, cases)
        if spec.retrieval.examples is not None:
            _check_examples(spec.retrieval.examples, tools, cases)
    return suite_obj, cases


def train_demos(suite: Suite) -> DemoPool:
    """The pool ``--demos`` draws from: the suite's train cases with their expected calls (``gold_calls``), never a
    dev or test case; refused for a suite without train cases."""
    train = [case for case in suite if case.split == "train"]
    if not train:
        raise ToolSelectionError(f"--demos shows solved train requests, and suite {suite.name!r} has no train cases "
                                 f"(its splits: {dict(suite.split_counts())}): give a suite with a train split, or "
                                 "leave --demos out.")
    return DemoPool(Demo(case.prompt, tuple(gold_calls(case)), case.id) for case in train)


def selector_params(selector: MultiToolSelector, spec: SelectorSpec, built: MultiToolSelector | None,
                    model_name: str, gate_name: str | None) -> dict[str, Any]:
    """What an evaluation records about its selector as built: the program and its fingerprint, and
    ``selection_params`` of the selector's own spec (its strategy as pinned, the relevance stage that runs)."""
    selection = selection_params(
        selector.to_spec(), relevance=selector.relevance.describe() if selector.relevance is not None else None,
        gate_model=gate_name or model_name,
        program="zero-shot" if built is not None or spec.program is None else spec.program)
    return {"program": selection.pop("program"), "program_fingerprint": program_fingerprint(selector), **selection,
            **({"strategy_reason": selector.strategy_reason} if selector.strategy_reason else {}),
            **({"cascade_router": selector.cascade.describe()} if selector.cascade is not None else {})}


def case_params(suite: str | Suite, suite_obj: Suite, cases: Suite, split: str | None,
                run: RunConfig) -> dict[str, Any]:
    """What an evaluation records about its cases: the suite, where it came from, the split and the selection."""
    return {
        "suite": suite_obj.name,
        "suite_fingerprint": suite_obj.fingerprint,
        **({"suite_ref": suite_reference(suite)} if not isinstance(suite, Suite) else {}),
        "split": split or "all",
        "limit": run.limit,
        **({"sample": run.sample, "seed": run.seed} if run.sample is not None else {}),
        **({"ids": run.ids} if run.ids is not None else {}),
        "cases": len(cases),
    }


def run_params(cases: dict[str, Any], selector: dict[str, Any], run: RunConfig, model_name: str,
               tools: ToolRegistry | None, *, served: bool) -> dict[str, Any]:
    """What an evaluation records about itself (MLflow params, summary.json, the run folder's name and hash):
    ``cases`` (``case_params``), the model, how it ran, and ``selector`` (``selector_params``)."""
    cases = dict(cases)
    count = cases.pop("cases")
    return {
        "kind": "eval",
        **cases,
        "model": model_name,
        **({"served_parallel": run.serve} if served else {}),
        **({"ray": run.ray} if run.ray is not None else {}),
        **selector,
        "max_tokens": run.max_tokens,
        **({"n_ctx": run.n_ctx} if run.n_ctx is not None else {}),
        "temperature": run.temperature,
        **({"seed": run.seed} if run.temperature > 0 else {}),  # the sampler's
        "cases": count,
        **({"tools": f"{tools.name} ({len(tools)} tools)"} if tools is not None else {}),
        "threads": run.threads,
        "dspy_version": dspy.__version__,
        "git_commit": git_commit(),
    }


def _run_path(run: RunConfig, params: dict[str, Any]) -> Path:
    run_path = run.run_dir or default_run_dir(params)
    try:
        run_path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ToolSelectionError(f"Cannot use {run_path} as the run directory: {error.strerror}.") from None
    if run.fresh:
        for name in ("results.jsonl", TABLE_FILE, "summary.json", "by_tag.csv", MLFLOW_FILE):
            (run_path / name).unlink(missing_ok=True)
    return run_path


def _save(result: EvalResult, run_path: Path, run: RunConfig) -> None:
    """The run's table, per-tag figures and summary in its folder, and its MLflow run."""
    result.results.to_parquet(run_path / TABLE_FILE, index=False)
    result.by_tag.to_csv(run_path / "by_tag.csv", index=False)
    write_json(run_path / "summary.json", {"params": result.params, "summary": result.summary})
    if run.mlflow:
        result.mlflow_run_id = log_run(
            params=result.params, summary=result.summary, by_tag=result.by_tag,
            artifacts=[run_path / TABLE_FILE, run_path / "by_tag.csv", run_path / "summary.json"],
            run_name=_mlflow_run_name(result.params, run_path), cases=result.results,
            run=run,
        )
        write_json(run_path / MLFLOW_FILE, {"run_id": result.mlflow_run_id,
                                            "tracking_uri": resolve_tracking_uri(run.tracking_uri)})


def _mlflow_run_name(params: dict[str, Any], run_path: Path) -> str:
    """The run directory's name where it says what the run is; else what it is, then the directory's name."""
    label = run_label(params)
    return run_path.name if run_path.name.startswith(label) else f"{label} ({run_path.name})"


@dataclass(frozen=True)
class SelectorJob:
    """What builds the selector and its LM for an evaluation: here, and again in each worker of a fanned-out one
    (``evals.fanout``), so every process asks the model the same way."""

    spec: SelectorSpec
    model: str | dspy.BaseLM
    temperature: float
    max_tokens: int
    cache: bool
    program: MultiToolSelector | None = None  # a built selector the spec applies to, instead of building one
    n_ctx: int | None = None  # a local model's context
    seed: int | None = None  # the sampler's seed, when the temperature is above 0
    demo_pool: DemoPool | None = None  # the solved requests spec.demos draws from

    def prepare(self) -> tuple[MultiToolSelector, dspy.BaseLM, str, str | None]:
        """The selector, its LM (a local model loaded now), the model's name and the gate model's name."""
        lm, model_name = _lm(self.model, temperature=self.temperature, max_tokens=self.max_tokens, cache=self.cache,
                             n_ctx=self.n_ctx, **({"seed": self.seed} if self.seed is not None else {}))
        gate_lm, gate_name = None, None
        if self.spec.gate.model is not None:  # a local gate model loaded as the selector's is, so one copy serves both
            gate_lm, gate_name = _lm(self.spec.gate.model, temperature=0.0, max_tokens=2, cache=self.cache,
                                     n_ctx=self.n_ctx, local_only=True)
        secondary_lm = self._secondary_lm(model_name)
        if self.program is None:
            selector = MultiToolSelector.from_spec(self.spec, model=model_name, gate_lm=gate_lm,
                                                   demo_pool=self.demo_pool, secondary_lm=secondary_lm)
        else:
            selector = self.program
            apply_spec(selector, self.spec, model=model_name, gate_lm=gate_lm, demo_pool=self.demo_pool,
                       secondary_lm=secondary_lm)
        selector.pin_strategy(lm)
        return selector, lm, model_name, gate_name

    def _secondary_lm(self, model_name: str) -> dspy.BaseLM | None:
        """A cascade's larger model (the one its router names), built as the selector's LM is; None without one."""
        if self.spec.cascade == NO_CASCADE:
            return None
        router = resolve_router(self.spec.cascade, model_name)
        return _lm(router.secondary, temperature=self.temperature, max_tokens=self.max_tokens, cache=self.cache,
                   n_ctx=self.n_ctx, local_only=True)[0]


def _check_retrieve(retrieve: int, tools: ToolRegistry | None, cases: Suite) -> None:
    """Refuse a retrieval depth that keeps every tool of every case: the run would be one without retrieval."""
    largest = len(tools) if tools is not None else max(len(registry_for(case)) for case in cases)
    if retrieve >= largest:
        raise ToolSelectionError(f"retrieve={retrieve} (--retrieve) keeps every tool of every case (the largest "
                                 f"catalog has {largest}), which is a run without retrieval; give a K below "
                                 f"{largest}, or leave --retrieve out.")


def _check_examples(path: str, tools: ToolRegistry | None, cases: Suite) -> None:
    """Refuse retrieval examples that hold a request the run scores (its tool would be found by the request itself),
    or that name none of the tools the cases list (a file made for another catalog)."""
    from evals.tool_examples import refuse_scored
    from tool_selection.retrieval.examples import ToolExamples, ToolExamplesError

    examples = ToolExamples.load(path)
    refuse_scored(examples, cases, path)
    if tools is not None:
        examples.check_catalog(tools)
    registries = [tools] if tools is not None else [registry_for(case) for case in cases]
    listed = {name for registry in registries for name in registry.names()}
    if not listed & set(examples.requests):
        raise ToolExamplesError(
            f"The examples in {path} name none of the {len(listed)} tools these cases list (it names "
            f"{', '.join(sorted(examples.requests)[:3])}, ...): it was made for another catalog. Write one for these "
            "tools ('toolsel suites SUITE --examples FILE').")


def _connect_ray(address: str, *, program, model, workers: int) -> None:
    from evals.fanout import connect_ray

    if isinstance(program, MultiToolSelector) or not isinstance(model, str):
        raise ToolSelectionError("ray= sends the evaluation to other processes: give the program as a directory "
                                 "and the model as a spec, not as Python objects.")
    connect_ray(address, workers=workers)


def _served(model: str | dspy.BaseLM, parallel: int, n_ctx: int | None):
    from tool_selection.lm.server import ModelServer

    if not isinstance(model, str):
        raise ToolSelectionError("serve= takes a local model spec (local:NAME), not an LM object.")
    from tool_selection.lm import LocalEngineOptions

    return ModelServer(model, parallel=parallel, local=LocalEngineOptions(n_ctx=n_ctx))


def _lm(model: str | dspy.BaseLM, *, temperature: float, max_tokens: int, cache: bool, n_ctx: int | None = None,
        local_only: bool = False, **options: Any) -> tuple[dspy.BaseLM, str]:
    """The LM for a spec (loaded now if local, so a broken engine stops before any work) and its name. ``n_ctx``:
    a local model's context; refused for any other model, unless ``local_only`` (then it applies to local ones).
    ``options``: further generation settings (``seed``)."""
    if not isinstance(model, str):
        return model, getattr(model, "model", type(model).__name__)
    from tool_selection.lm import LocalEngineOptions, get_lm, prepare_lm
    from tool_selection.lm.specs import ModelSpec, check_n_ctx

    parsed = ModelSpec.parse(model)  # once: get_lm and check_n_ctx take it parsed
    if n_ctx is not None and not parsed.is_local:
        if not local_only:
            check_n_ctx(parsed, n_ctx)
        n_ctx = None
    lm = get_lm(parsed, temperature=temperature, max_tokens=max_tokens, cache=cache, constrained=True,
                local=LocalEngineOptions(n_ctx=n_ctx) if n_ctx is not None else None, **options)
    prepare_lm(lm)
    return lm, model


def _price(result: EvalResult, spec: str) -> None:
    """Each case's catalog cost (``cost``), and the per-correct figures that follow; models the catalog does not
    price are left unpriced."""
    from tool_selection.lm import CatalogError, ModelSpec, model_cost

    try:
        parsed = ModelSpec.parse(spec)  # once, not per case
        result.results["cost"] = [model_cost(parsed, int(i), int(o)) for i, o in
                                  zip(result.results["input_tokens"], result.results["output_tokens"], strict=True)]
    except (CatalogError, ValueError):
        return
    result.summary.update(cost_figures(result.results))
