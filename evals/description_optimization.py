"""Tool descriptions as what is optimized (``toolsel optimize --target descriptions``), with GEPA.

The selector's program stays as it is (its strategy's instructions, no demonstrations); what changes is the
description each tool shows the model. A candidate is a ``{tool name: description}`` mapping, and the compiled
selector keeps the rewritten ones (``MultiToolSelector.described``); the tool set itself is untouched.

Why GEPA's engine with an adapter of our own: ``dspy.GEPA`` (DSPy 3.4.1) evolves predictor instructions only (its
seed candidate is each predictor's ``signature.instructions``; its ``enable_tool_optimization``, for a ReAct
agent's tools, was removed upstream, stanfordnlp/dspy#9223), and MIPROv2's proposer writes instructions from a
program's code and data, with no feedback on what went wrong. The ``gepa`` package under ``dspy.GEPA`` (0.1.4) evolves any named text through a ``GEPAAdapter``, which
``DescriptionAdapter`` is:

- ``evaluate``: the unoptimized selector showing a candidate's descriptions, on a batch, scored with the harness's
  balanced metric and its textual feedback (``evals.optimization.feedback_metric``), as ``--optimizer gepa`` is;
- ``make_reflective_dataset``: per tool, the cases of the batch where it was needed or called, with what the
  selector called and the feedback;
- ``propose_new_texts``: the teacher (``--teacher``, default the student) rewrites a tool's description from those
  cases and the other tools' descriptions (``ProposeToolDescription``).

The tools rewritten at a step are those the minibatch's failures involve (``FailingTools``): a tool needed but not
called, or called but not needed. GEPA reflects on train and keeps the candidate that scores best on dev (its
``valset``; train when the suite has no dev cases); test is never read. Its budget of metric calls is what
``dspy.GEPA(auto=BUDGET)`` gives the selector's program (``--optimizer gepa``), so that both targets are compared at
the same cost (``metric_call_budget``; counting each tool as a component would multiply it by the catalog's size:
6,044 calls instead of 628 for treasure_hunt's 12 tools and 62 dev cases at ``light``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from evals.optimization_metrics import feedback_metric
from evals.optimize_settings import Budget
from tool_selection.decision import MultiToolDecision
from tool_selection.descriptions import DescriptionOverrides, descriptions_of, descriptions_sha256
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import to_text
from tool_selection.lm.model_errors import MODEL_FAILURES
from tool_selection.registry import ToolRegistry
from tool_selection.selector import MultiToolSelector

__all__ = ["MAX_DESCRIPTION_CHARS", "DescriptionAdapter", "DescriptionGEPA", "DescriptionProposer", "FailingTools",
           "ProposeToolDescription", "metric_call_budget", "one_catalog"]

logger = logging.getLogger(__name__)

MAX_DESCRIPTION_CHARS = 600  # a longer proposal is dropped: the prompt lists every tool's description each call
TOOLS_PER_STEP = 2  # the most tools one reflection step rewrites
MINIBATCH = 3  # cases per reflection step (GEPA's default)


class ProposeToolDescription(dspy.Signature):
    """A small language model chooses which tool (function) to call for a user's request, or none, from the
    tools' names, descriptions and arguments. You are given one tool's current description, its arguments, the
    other tools, and requests where this tool was needed or was called, with what the model called and feedback.

    Write a new description for this tool so that the model calls it exactly when a request needs it: say plainly
    what it does and when to use it, what sets it apart from the other tools, and what its arguments expect where
    the feedback shows mistakes. Describe the tool in general terms; do not quote the example requests."""

    tool_name: str = dspy.InputField()
    arguments: str = dspy.InputField(desc="The tool's arguments: name, type, whether required, and description.")
    other_tools: str = dspy.InputField(desc="The other available tools, each with its current description.")
    current_description: str = dspy.InputField()
    examples_with_feedback: list[dict[str, Any]] = dspy.InputField(
        desc="Requests, what the model called, and feedback on it.")
    new_description: str = dspy.OutputField(
        desc=f"The tool's new description alone, at most {MAX_DESCRIPTION_CHARS} characters.")


@dataclass(frozen=True)
class Rollout:
    """One case as a candidate's selector handled it: GEPA's trajectory and output."""

    request: str
    expected: tuple[str, ...]
    called: tuple[str, ...]
    calls: str  # what the selector called, as text
    score: float
    feedback: str

    @property
    def correct(self) -> bool:
        return self.feedback == "Correct."

    def involved(self) -> list[str]:
        """The tools a failure involves: needed but not called, or called but not needed; the needed ones when
        the tools were right and the arguments wrong, or the answer unreadable."""
        if self.correct:
            return []
        wrong = [n for n in self.expected if n not in self.called] + [n for n in self.called if n not in self.expected]
        return wrong or list(self.expected)


def _calls_text(decision: MultiToolDecision) -> str:
    if decision.parse_error:
        return f"(an unreadable answer: {decision.parse_error[:200]})"
    return "; ".join(f"{c.tool_name}({c.arguments})" for c in decision.tool_calls) or "(no call)"


def one_catalog(examples: Sequence[dspy.Example]) -> ToolRegistry:
    """The one tool catalog of ``examples`` (whose descriptions are rewritten); several are an error."""
    catalogs = {descriptions_sha256(descriptions_of(e.tools)): e.tools for e in examples}
    if len(catalogs) != 1:
        raise ToolSelectionError(f"--target descriptions rewrites the descriptions of one tool catalog, but the train "
                                 f"and dev cases use {len(catalogs)} catalogs; optimize a suite over one tool set.")
    return next(iter(catalogs.values()))


class FailingTools:
    """GEPA's component selector: the tools the minibatch's failures involve, most often first (at most
    ``TOOLS_PER_STEP``); none when every case was right, so that GEPA skips the step."""

    def __call__(self, state: Any, trajectories: list[Rollout], subsample_scores: list[float], candidate_idx: int,
                 candidate: dict[str, str]) -> list[str]:
        counts = Counter(name for rollout in trajectories for name in rollout.involved() if name in candidate)
        return [name for name, _ in counts.most_common(TOOLS_PER_STEP)]


@dataclass
class DescriptionProposer:
    """GEPA's proposal function: the teacher rewrites each tool to update. A proposal that is empty, unchanged or
    longer than ``MAX_DESCRIPTION_CHARS`` is dropped (the tool keeps its description at this step)."""

    catalog: ToolRegistry
    lm: dspy.BaseLM

    def __post_init__(self) -> None:
        self.propose = dspy.Predict(ProposeToolDescription)

    def __call__(self, candidate: dict[str, str], reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
                 components_to_update: list[str]) -> dict[str, str]:
        proposals = {}
        for name in components_to_update:
            if name not in reflective_dataset:
                continue
            others = "\n".join(f"- {other}: {text}" for other, text in candidate.items() if other != name)
            with dspy.context(lm=self.lm, adapter=dspy.JSONAdapter()):
                text = self.propose(tool_name=name, arguments=to_text(self.catalog.get(name)).split("\n", 1)[1],
                                    other_tools=others, current_description=candidate[name],
                                    examples_with_feedback=[dict(r) for r in reflective_dataset[name]]).new_description
            text = text.strip()
            if text and text != candidate[name] and len(text) <= MAX_DESCRIPTION_CHARS:
                proposals[name] = text
            else:
                logger.info("Dropped the proposed description of %s (%d characters): %r", name, len(text), text[:80])
        return proposals


class DescriptionAdapter:
    """GEPA's adapter over a selector whose tool descriptions are the candidate (see the module docstring)."""

    def __init__(self, student: MultiToolSelector, catalog: ToolRegistry, proposer: DescriptionProposer, *,
                 threads: int = 1):
        self.student, self.catalog, self.threads = student, catalog, threads
        self.propose_new_texts = proposer

    def program(self, candidate: Mapping[str, str]) -> MultiToolSelector:
        """The student showing ``candidate``'s descriptions."""
        program = self.student.deepcopy()
        program.described = DescriptionOverrides.for_registry(self.catalog, candidate)
        return program

    def evaluate(self, batch: list[dspy.Example], candidate: dict[str, str], capture_traces: bool = False) -> Any:
        from gepa import EvaluationBatch

        program = self.program(candidate)
        rollouts = self._map(lambda example: self._rollout(program, example), batch)
        return EvaluationBatch(outputs=[{"calls": r.calls} for r in rollouts], scores=[r.score for r in rollouts],
                               trajectories=rollouts if capture_traces else None)

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: Any,
                                components_to_update: list[str]) -> dict[str, list[dict[str, Any]]]:
        dataset = {}
        for name in components_to_update:
            records = [{"Inputs": {"request": r.request}, "Generated Outputs": r.calls,
                        "Feedback": r.feedback if r.correct else f"{r.feedback} Needed: {list(r.expected) or 'none'}."}
                       for r in eval_batch.trajectories if name in r.expected or name in r.called]
            if records:
                dataset[name] = records
        return dataset

    def _rollout(self, program: MultiToolSelector, example: dspy.Example) -> Rollout:
        try:
            decision = program(request=example.request, tools=example.tools).decision
        except MODEL_FAILURES as error:  # scored as a failure; the toolkit's own errors stop the search
            decision = MultiToolDecision(parse_error=f"model call failed: {type(error).__name__}: {error}"[:300])
        result = feedback_metric(example, dspy.Prediction(decision=decision))
        return Rollout(example.request, tuple(c.tool_name for c in example.case.expected_calls),
                       tuple(decision.tool_names), _calls_text(decision), float(result.score), result.feedback)

    def _map(self, run: Callable[[dspy.Example], Rollout], batch: list[dspy.Example]) -> list[Rollout]:
        if self.threads <= 1:
            return [run(example) for example in batch]
        contexts = [copy_context() for _ in batch]  # each thread sees this one's DSPy settings (LM, callbacks)
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            return list(pool.map(lambda item: item[0].run(run, item[1]), zip(contexts, batch, strict=True)))


def metric_call_budget(budget: Budget, *, components: int, valset_size: int, lm: dspy.BaseLM) -> int:
    """The metric calls ``dspy.GEPA(auto=budget)`` spends on a program of ``components`` predictors."""
    from dspy.teleprompt.gepa.gepa import AUTO_RUN_SETTINGS

    gepa = dspy.GEPA(metric=feedback_metric, auto=budget, reflection_lm=lm)
    return gepa.auto_budget(num_preds=components, num_candidates=AUTO_RUN_SETTINGS[budget]["n"],
                            valset_size=valset_size)


class DescriptionGEPA:
    """The optimizer of ``--target descriptions``, shaped as a DSPy teleprompter: ``compile(student, trainset=,
    valset=)`` returns the student showing the tool descriptions GEPA found best on ``valset`` (train when None),
    with each candidate's score there in ``detailed_results.val_aggregate_scores``. It runs under the caller's DSPy
    settings (the student's LM); ``teacher_lm`` proposes the descriptions; ``progress``: GEPA's progress bar over
    its metric calls; ``max_metric_calls``: the search's size in metric calls, in place of the budget's.
    ``arguments``: what it ran with, for the manifest."""

    def __init__(self, budget: Budget, teacher_lm: dspy.BaseLM, *, threads: int = 1, log_dir: Path | None = None,
                 progress: bool = False, max_metric_calls: int | None = None):
        self.budget, self.teacher_lm, self.threads, self.log_dir = budget, teacher_lm, threads, log_dir
        self.progress, self.max_metric_calls = progress, max_metric_calls
        self.arguments: dict[str, Any] = {"target": "descriptions", "reflection_minibatch_size": MINIBATCH,
                                          "tools_per_step": TOOLS_PER_STEP, "use_merge": True,
                                          "max_description_chars": MAX_DESCRIPTION_CHARS, "num_threads": threads}

    def compile(self, student: MultiToolSelector, *, trainset: list[dspy.Example],
                valset: list[dspy.Example] | None = None) -> MultiToolSelector:
        import gepa
        from dspy.teleprompt.gepa.gepa_utils import LoggerAdapter

        catalog = one_catalog([*trainset, *(valset or [])])
        valset = valset or trainset
        calls = self.max_metric_calls or metric_call_budget(
            self.budget, components=len(student.named_predictors()), valset_size=len(valset), lm=self.teacher_lm)
        self.arguments["max_metric_calls"] = calls
        adapter = DescriptionAdapter(student, catalog, DescriptionProposer(catalog, self.teacher_lm),
                                     threads=self.threads)
        result = gepa.optimize(
            seed_candidate=descriptions_of(catalog), trainset=trainset, valset=valset, adapter=adapter,
            module_selector=FailingTools(), reflection_minibatch_size=MINIBATCH, skip_perfect_score=False,
            candidate_selection_strategy="pareto", use_merge=True, max_merge_invocations=5, max_metric_calls=calls,
            logger=LoggerAdapter(logger), run_dir=str(self.log_dir) if self.log_dir else None,
            track_best_outputs=False, display_progress_bar=self.progress, raise_on_exception=True, seed=0)
        program = adapter.program(result.best_candidate)
        program.detailed_results = result
        return program
