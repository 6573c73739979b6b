"""``evaluate()``: the main job in one call (also what ``toolsel eval`` runs).

    from evals import evaluate
    result = evaluate("treasure_hunt", "local:qwen2.5-coder-0.5b", split="test")
    result.summary["accuracy"], result.by_tag
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import dspy

from evals.metrics import per_correct
from evals.naming import slug as _slug
from evals.runner import TABLE_FILE, EvalResult, Evaluator
from evals.runs import run_label
from evals.suite import Suite, load_suite, registry_for, suite_reference
from evals.tracking import check_tracking_uri, git_commit, log_run, write_json
from tool_selection.compiled import load_program_state
from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.relevance.model import DEFAULT_RELEVANCE
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter, check_rerank, check_undeclared_arguments
from tool_selection.strategies import DEFAULT_STRATEGY
from tool_selection.tracking import tracking_uri as resolve_tracking_uri

__all__ = ["build_adapter", "default_run_dir", "evaluate", "load_program"]

RUNS_DIR = Path("runs")
MLFLOW_FILE = "mlflow.json"  # the run's MLflow id and store, for 'toolsel view RUN_DIR'


def build_adapter(kind: Literal["json", "chat"] = "json") -> dspy.Adapter:
    """``json``: JSON answers with the per-call constrained schema (``ToolSelectionAdapter``); ``chat``: DSPy's
    field-marker format with no constraint."""
    if kind == "json":
        return ToolSelectionAdapter()
    if kind == "chat":
        return dspy.ChatAdapter()
    raise ValueError(f"Unknown adapter {kind!r}: use 'json' or 'chat'")


def load_program(path: str | Path | None, *, allow_tool_changes: bool = False,
                 strategy: str | None = None) -> MultiToolSelector:
    """A fresh selector with ``strategy``, or a compiled one from ``path`` (a program directory, whose manifest
    names its strategy, or DSPy state JSON saved from a selector with ``strategy``)."""
    if path is None:
        return MultiToolSelector(strategy=strategy or DEFAULT_STRATEGY)
    path = Path(path)
    if path.is_dir():
        selector = MultiToolSelector.load(path, allow_tool_changes=allow_tool_changes)
        if strategy is not None and strategy != selector.strategy_name:
            raise ToolSelectionError(f"The compiled selector in {path} was built with strategy "
                                     f"{selector.strategy_name!r}, not {strategy!r}; leave --strategy out or "
                                     "optimize a program for that strategy.")
        return selector
    return load_program_state(MultiToolSelector(strategy=strategy or DEFAULT_STRATEGY), path)


def program_fingerprint(selector: MultiToolSelector) -> str:
    """A hash of what the program sends the model (instructions, field descriptions, demos), so that a changed
    prompt starts a new run instead of resuming one made with the old prompt."""
    parts = []
    for name, predictor in selector.named_predictors():
        fields = {k: (f.json_schema_extra or {}).get("desc") for k, f in predictor.signature.fields.items()}
        parts.append([name, predictor.signature.instructions, fields, predictor.dump_state().get("demos", [])])
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def default_run_dir(params: dict[str, Any]) -> Path:
    """A directory named for what the run is (suite, split, model, strategy, program: ``evals.runs.run_label``)
    and a hash of what determines its results, so that the same evaluation resumes."""
    key = json.dumps({k: params[k] for k in sorted(params) if k not in ("threads", "ray", "git_commit", "suite_ref")},
                     sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    before = RUNS_DIR / f"{_slug(params['suite'])}-{params['split']}-{_slug(params['model'])}-{digest}"
    if before.is_dir():  # named before the strategy and program were part of the name: resume it where it is
        return before
    return RUNS_DIR / f"{run_label(params)}-{digest}"


def evaluate(
    suite: str | Suite,
    model: str | dspy.BaseLM,
    *,
    split: str | None = "test",
    limit: int | None = None,
    threads: int = 1,
    program: str | Path | MultiToolSelector | None = None,
    adapter: Literal["json", "chat"] = "json",
    max_tokens: int = 512,
    temperature: float = 0.0,
    cache: bool = True,
    run_dir: str | Path | None = None,
    fresh: bool = False,
    mlflow: bool = True,
    tracking_uri: str | None = None,
    progress: bool = True,
    allow_tool_changes: bool = False,
    strategy: str | None = None,
    gate_model: str | dspy.BaseLM | None = None,
    gate_threshold: float | None = None,
    tools: ToolRegistry | None = None,
    sample: int | None = None,
    seed: int = 0,
    retrieve: int | None = None,
    retriever: str = "hybrid",
    rerank: int | None = None,
    serve: int | None = None,
    ray: str | None = None,
    undeclared_arguments: str = "refuse",
    relevance: str | Path | None = DEFAULT_RELEVANCE,
    relevance_signals: Sequence[str] | None = None,
) -> EvalResult:
    """Evaluate a selector on a suite split with a model; results are saved, resumable and logged to MLflow.

    ``strategy`` names how the selector asks the model (``tool_selection.strategies``; default auto, or the
    compiled program's own); ``gate+NAME`` adds the relevance gate, with ``gate_threshold`` (default 0) and an
    optional ``gate_model``. ``sample``: a fixed seeded sample of the split (``seed``), for categories too slow
    to run whole. ``tools`` replaces every case's own catalog (``toolsel eval --mcp``: a server's
    tools, imported with ``tool_selection.mcp.connect_mcp``). ``serve``: run the local ``model`` in a llama-server
    with this many parallel slots (``tool_selection.lm.ModelServer``) and send it ``threads`` cases at a time; the
    server stops with the run, and if it dies the run stops with the finished cases kept. ``ray``: fan the cases
    out over Ray, ``threads`` at a time (``"local"``: a Ray instance on this machine; else a cluster's
    ``HOST:PORT``; see ``evals.fanout``). ``undeclared_arguments="drop"``: remove arguments a call's tool does not
    declare before checking it (``MultiToolSelector``), recorded in the params and per case. ``retrieve``/``rerank``:
    the selector sees the ``retrieve`` tools ``retriever`` ranks highest, or with ``rerank`` the best of its top
    ``rerank`` as the model re-ranks them. ``relevance``: a
    relevance model file (``tool_selection.relevance``) that drops the calls of a decision it judges irrelevant,
    ``auto`` (the default: the model shipped for ``model``, if any, or a compiled selector's own) or ``none``;
    ``relevance_signals``: signals to record per case (without a model: recorded only, for fitting one)."""
    with contextlib.ExitStack() as stack:
        if threads < 1 or max_tokens < 1:
            raise ToolSelectionError(f"threads and max_tokens must be at least 1 (got {threads} and {max_tokens}).")
        if gate_threshold is not None and math.isnan(gate_threshold):
            raise ToolSelectionError("gate_threshold (--gate-threshold) is NaN; give a number, or -inf or inf.")
        if mlflow:
            check_tracking_uri(tracking_uri)
        suite_obj = suite if isinstance(suite, Suite) else load_suite(suite)
        cases = suite_obj.split(split).sample(sample, seed).limit(limit)
        if not len(cases):
            raise ToolSelectionError(f"Suite {suite_obj.name!r} has no cases in split {split!r} (its splits: "
                                     f"{dict(suite_obj.split_counts())}).")
        if retrieve is not None:
            _check_retrieve(retrieve, tools, cases)
        check_rerank(rerank, retrieve)
        if run_dir is not None and Path(run_dir).exists() and not Path(run_dir).is_dir():
            raise ToolSelectionError(f"--run-dir {run_dir} is a file; give a directory for the per-case results.")
        if adapter == "chat" and strategy is None:
            strategy = "chat-cot"  # the former --adapter chat
        if ray is not None:  # an unreachable cluster stops here, before a model is loaded
            _connect_ray(ray, program=program, model=model, workers=threads)
        server = stack.enter_context(_served(model, serve)) if serve is not None else None
        job = SelectorJob(program=program, strategy=strategy, allow_tool_changes=allow_tool_changes,
                          model=server.model_spec if server else model, gate_model=gate_model,
                          gate_threshold=gate_threshold, retrieve=retrieve, retriever=retriever, rerank=rerank,
                          temperature=temperature, max_tokens=max_tokens, cache=cache,
                          undeclared_arguments=undeclared_arguments, relevance=relevance,
                          relevance_signals=tuple(relevance_signals) if relevance_signals else None)
        selector, lm, model_name, gate_name = job.prepare()
        if server is not None:
            model_name = model
        submit = None
        if ray is not None:
            from evals.fanout import RayCases
            from tool_selection.lm.specs import ModelSpec

            submit = RayCases(job, tools=tools, workers=threads, local_model=ModelSpec.parse(job.model).is_local).submit
        params = {
            "kind": "eval",
            "suite": suite_obj.name,
            "suite_fingerprint": suite_obj.fingerprint,
            **({"suite_ref": suite_reference(suite)} if not isinstance(suite, Suite) else {}),
            "split": split or "all",
            "limit": limit,
            **({"sample": sample, "seed": seed} if sample is not None else {}),
            "model": model_name,
            **({"served_parallel": serve} if server is not None else {}),
            **({"ray": ray} if ray is not None else {}),
            "program": str(program) if program is not None and not isinstance(program, MultiToolSelector) else "zero-shot",
            "program_fingerprint": program_fingerprint(selector),
            "strategy": selector.strategy_name,
            **({"retrieve": retrieve, "retriever": retriever} if retrieve is not None else {}),
            **({"rerank": rerank} if rerank is not None else {}),
            **({"undeclared_arguments": undeclared_arguments} if undeclared_arguments != "refuse" else {}),
            **({"relevance": selector.relevance.describe()} if selector.relevance is not None else {}),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "cases": len(cases),
            **({"tools": f"{tools.name} ({len(tools)} tools)"} if tools is not None else {}),
            **({"gate_model": gate_name or model_name, "gate_threshold": selector.gate_threshold}
               if selector.gate is not None else {}),
            "threads": threads,
            "dspy_version": dspy.__version__,
            "git_commit": git_commit(),
        }
        run_path = Path(run_dir) if run_dir else default_run_dir(params)
        try:
            run_path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ToolSelectionError(f"Cannot use {run_path} as the run directory: {error.strerror}.") from None
        if fresh and run_path.exists():
            for name in ("results.jsonl", TABLE_FILE, "summary.json", "by_tag.csv", MLFLOW_FILE):
                (run_path / name).unlink(missing_ok=True)
        result = Evaluator(suite=cases, threads=threads, progress=progress, tools=tools,
                           health_check=server.check_alive if server else None, submit=submit)(selector, lm=lm, run_dir=run_path)
        result.params = params
        if isinstance(model, str):
            _price(result, model)
        result.results.to_parquet(run_path / TABLE_FILE, index=False)
        result.by_tag.to_csv(run_path / "by_tag.csv", index=False)
        write_json(run_path / "summary.json", {"params": params, "summary": result.summary})
        if mlflow:
            result.mlflow_run_id = log_run(
                params=params, summary=result.summary, by_tag=result.by_tag, uri=tracking_uri,
                artifacts=[run_path / TABLE_FILE, run_path / "by_tag.csv", run_path / "summary.json"],
                run_name=_mlflow_run_name(params, run_path), cases=result.results,
            )
            write_json(run_path / MLFLOW_FILE, {"run_id": result.mlflow_run_id,
                                                "tracking_uri": resolve_tracking_uri(tracking_uri)})
        return result


def _mlflow_run_name(params: dict[str, Any], run_path: Path) -> str:
    """The run directory's name where it says what the run is; else what it is, then the directory's name."""
    label = run_label(params)
    return run_path.name if run_path.name.startswith(label) else f"{label} ({run_path.name})"


@dataclass(frozen=True)
class SelectorJob:
    """What builds the selector and its LM for an evaluation: here, and again in each worker of a fanned-out one
    (``evals.fanout``), so every process asks the model the same way."""

    program: str | Path | MultiToolSelector | None
    strategy: str | None
    allow_tool_changes: bool
    model: str | dspy.BaseLM
    gate_model: str | dspy.BaseLM | None
    gate_threshold: float | None
    retrieve: int | None
    retriever: str
    temperature: float
    max_tokens: int
    cache: bool
    undeclared_arguments: str = "refuse"
    relevance: str | Path | None = None
    relevance_signals: tuple[str, ...] | None = None
    rerank: int | None = None

    def prepare(self) -> tuple[MultiToolSelector, dspy.BaseLM, str, str | None]:
        """The selector, its LM (a local model loaded now), the model's name and the gate model's name."""
        selector = self.program if isinstance(self.program, MultiToolSelector) else load_program(
            self.program, allow_tool_changes=self.allow_tool_changes, strategy=self.strategy)
        lm, model_name = _lm(self.model, temperature=self.temperature, max_tokens=self.max_tokens, cache=self.cache)
        gate_lm, gate_name = None, None
        if self.gate_model is not None:
            gate_lm, gate_name = _lm(self.gate_model, temperature=0.0, max_tokens=2, cache=self.cache)
        from tool_selection.relevance import RelevanceStage, resolve_relevance

        relevance = resolve_relevance(self.relevance, model_name)
        if str(self.relevance) == "none":  # also a compiled selector's own
            selector.relevance = None
        elif str(self.relevance) == "auto" and selector.relevance is not None:
            relevance = selector.relevance.model  # a compiled selector's own comes first
        if relevance is not None or self.relevance_signals:
            selector.relevance = RelevanceStage(relevance, signals=self.relevance_signals,
                                                gate_lm=gate_lm if selector.gate is None else None)
            if "gate" in selector.relevance.signals and gate_lm is None:
                raise ToolSelectionError("The relevance signal 'gate' asks a gate model: give --gate-model.")
        gate_for_stage = selector.relevance is not None and "gate" in selector.relevance.signals
        if selector.gate is None and (self.gate_threshold is not None or gate_lm is not None and not gate_for_stage):
            raise ToolSelectionError(f"--gate-model and --gate-threshold apply to a gated strategy (gate+NAME) or the "
                                     f"relevance signal 'gate', not {selector.strategy_name!r}.")
        if selector.gate is not None:
            selector.gate_lm = gate_lm or selector.gate_lm
            if self.gate_threshold is not None:
                selector.gate_threshold = float(self.gate_threshold)
        selector.pin_strategy(lm)
        if self.retrieve is not None:
            selector.retrieve, selector.retriever_name = self.retrieve, self.retriever
        if self.rerank is not None:
            selector.rerank = self.rerank
        selector.undeclared_arguments = check_undeclared_arguments(self.undeclared_arguments)
        return selector, lm, model_name, gate_name


def _check_retrieve(retrieve: int, tools: ToolRegistry | None, cases: Suite) -> None:
    """Refuse a retrieval depth that keeps every tool of every case: the run would be one without retrieval."""
    largest = len(tools) if tools is not None else max(len(registry_for(case)) for case in cases)
    if retrieve >= largest:
        raise ToolSelectionError(f"retrieve={retrieve} (--retrieve) keeps every tool of every case (the largest "
                                 f"catalog has {largest}), which is a run without retrieval; give a K below "
                                 f"{largest}, or leave --retrieve out.")


def _connect_ray(address: str, *, program, model, workers: int) -> None:
    from evals.fanout import connect_ray

    if isinstance(program, MultiToolSelector) or not isinstance(model, str):
        raise ToolSelectionError("ray= sends the evaluation to other processes: give the program as a directory "
                                 "and the model as a spec, not as Python objects.")
    connect_ray(address, workers=workers)


def _served(model: str | dspy.BaseLM, parallel: int):
    from tool_selection.lm.server import ModelServer

    if not isinstance(model, str):
        raise ToolSelectionError("serve= takes a local model spec (local:NAME), not an LM object.")
    return ModelServer(model, parallel=parallel)


def _lm(model: str | dspy.BaseLM, *, temperature: float, max_tokens: int, cache: bool) -> tuple[dspy.BaseLM, str]:
    """The LM for a spec (loaded now if local, so a broken engine stops before any work) and its name."""
    if not isinstance(model, str):
        return model, getattr(model, "model", type(model).__name__)
    from tool_selection.lm import get_lm, prepare_lm

    lm = get_lm(model, temperature=temperature, max_tokens=max_tokens, cache=cache, constrained=True)
    prepare_lm(lm)
    return lm, model


def _price(result: EvalResult, spec: str) -> None:
    """Each case's catalog cost (``cost``), and the per-correct figures that follow; models the catalog does not
    price are left unpriced."""
    from tool_selection.lm import CatalogError, model_cost

    try:
        result.results["cost"] = [model_cost(spec, int(i), int(o)) for i, o in
                                  zip(result.results["input_tokens"], result.results["output_tokens"], strict=True)]
    except (CatalogError, ValueError):
        return
    result.summary.update(per_correct(result.results))
