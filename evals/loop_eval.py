"""Multi-step tasks scored by running the tool-calling loop (``tool_selection.agent``) to its end.

A task (one JSON line of a loop suite, ``evals/suites/loop/*.jsonl``) states a goal and what success looks like:

    {"id": "loop-001", "request": "Find the rope and bring it to the lighthouse.",
     "tool_sets": ["treasure_hunt"], "max_tool_calls": 10,
     "success": {"calls": [{"tool_name": "take_item", "arguments": {"item_id": "rope"}}],
                 "state": [{"path": "state.location", "equals": "lighthouse"},
                           {"path": "state.inventory", "contains": "rope"}],
                 "answer": {"any_of": ["rope"]}},
     "oracle": [{"tool_name": "...", "arguments": {...}}, ...],
     "tags": ["treasure_hunt"], "split": "test"}

Every criterion given must hold: ``calls`` each made successfully (arguments matched as in the suites, only the
listed ones, ``{"one_of": [...]}`` allowed), ``state`` checked on the session's shared tool state after the run
(``path`` starts with a configuration field the tools share, such as treasure_hunt's ``state``, then attributes or
keys; ``equals``, ``contains`` or ``in``), and ``answer`` the final answer containing one of the strings
(case-insensitive). A ``calls`` entry with no arguments accepts any successful call of that tool. ``oracle``
is a call sequence that solves the task, never shown to a model: the suite tests run
it to prove every task can be done.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import dspy
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from evals.metrics import bootstrap_ci, value_matches
from evals.runner import _RowWriter, load_rows
from evals.suite import LOOP_SUITES
from tool_selection.agent import (
    LOOP_PROMPT,
    AgentLoop,
    CallRecord,
    EscalationPolicy,
    LoopLimits,
    LoopPrompt,
    ToolSession,
    Transcript,
    result_text,
)
from tool_selection.decision import ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec
from tool_selection.toolset import ToolSet, load_tool_set
from tool_selection.trajectories import Trajectory, TrajectoryStep, choose_trajectories

__all__ = ["LoopResult", "LoopSetup", "LoopTask", "StateCheck", "load_loop_suite", "oracle_trajectories", "run_loop_suite",
           "score_task"]


class StateCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    equals: Any = None
    contains: Any = None
    in_: list[Any] | None = Field(default=None, alias="in")

    @model_validator(mode="after")
    def _one_test(self) -> StateCheck:
        given = [name for name in ("equals", "contains", "in_") if name in self.model_fields_set]
        if len(given) != 1:
            raise ValueError(f"state check {self.path!r} needs exactly one of equals, contains, in")
        return self


class ExpectedLoopCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Success(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls: list[ExpectedLoopCall] = Field(default_factory=list)
    state: list[StateCheck] = Field(default_factory=list)
    answer: dict[Literal["any_of"], list[str]] | None = None

    @model_validator(mode="after")
    def _something(self) -> Success:
        if not (self.calls or self.state or self.answer):
            raise ValueError("success needs at least one of calls, state, answer")
        return self


class LoopTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    request: str
    tool_sets: list[str] = Field(min_length=1)
    max_tool_calls: int = Field(default=10, ge=1, le=30)
    success: Success
    oracle: list[ToolCall] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    split: Literal["train", "dev", "test"] = "test"

    def tools(self) -> ToolSet:
        sets = [load_tool_set(name) for name in self.tool_sets]
        return sets[0] if len(sets) == 1 else sets[0].merged(*sets[1:], name="+".join(self.tool_sets))


def load_loop_suite(name_or_path: str | Path) -> list[LoopTask]:
    """Tasks of a loop suite by name (``evals/suites/loop/NAME.jsonl``) or path; every line validated."""
    path = Path(name_or_path)
    if not path.suffix:
        path = LOOP_SUITES / f"{name_or_path}.jsonl"
    if not path.is_file():
        known = sorted(p.stem for p in LOOP_SUITES.glob("*.jsonl"))
        raise ToolSelectionError(f"No loop suite {str(name_or_path)!r}; known: {', '.join(known) or 'none'}.")
    tasks = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                tasks.append(LoopTask.model_validate_json(line))
            except ValueError as error:
                raise ToolSelectionError(f"{path} line {number}: {error}") from None
    return tasks


def _resolve(shared: dict[str, Any], path: str) -> Any:
    head, *rest = path.split(".")
    value = shared[head]
    for part in rest:
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return list(value) if isinstance(value, set | tuple | frozenset) else value


def _check_state(check: StateCheck, shared: dict[str, Any]) -> bool:
    try:
        value = _resolve(shared, check.path)
    except (KeyError, AttributeError, TypeError):
        return False
    if "equals" in check.model_fields_set:
        return value == check.equals
    if "contains" in check.model_fields_set:
        return isinstance(value, list | str | dict) and check.contains in value
    return value in check.in_


def _call_made(expected: ExpectedLoopCall, made: list[ToolCall]) -> bool:
    for call in made:
        if call.tool_name != expected.tool_name:
            continue
        if all(name in call.arguments and value_matches(call.arguments[name],
                                                        v["one_of"] if isinstance(v, dict) and "one_of" in v else [v])
               for name, v in expected.arguments.items()):
            return True
    return False


def score_task(task: LoopTask, successful_calls: list[ToolCall], shared: dict[str, Any],
               final_answer: str | None) -> dict[str, bool]:
    """Each criterion's verdict, and ``success`` (all of them)."""
    verdicts = {}
    if task.success.calls:
        verdicts["calls_ok"] = all(_call_made(c, successful_calls) for c in task.success.calls)
    if task.success.state:
        verdicts["state_ok"] = all(_check_state(c, shared) for c in task.success.state)
    if task.success.answer:
        answer = (final_answer or "").lower()
        verdicts["answer_ok"] = any(option.lower() in answer for option in task.success.answer["any_of"])
    verdicts["success"] = all(verdicts.values())
    return verdicts


def run_oracle(task: LoopTask) -> dict[str, bool]:
    """Run the task's oracle calls in a fresh session and score them (the final answer counts as given)."""
    return _oracle_run(task)[0]


def _oracle_run(task: LoopTask) -> tuple[dict[str, bool], list[CallRecord]]:
    with tempfile.TemporaryDirectory(prefix="loop-task-") as root:
        session = ToolSession(task.tools(), root=Path(root))
        records = [session.execute(call, f"oracle_{i}") for i, call in enumerate(task.oracle)]
        made = [ToolCall(tool_name=r.tool_name, arguments=r.arguments) for r in records if r.ok]
        answer = " ".join(task.success.answer["any_of"]) if task.success.answer else None
        return score_task(task, made, session.shared, answer), records


def oracle_trajectories(tasks: list[LoopTask]) -> list[Trajectory]:
    """The tasks' oracles as trajectories (each call with the result it returned in a fresh session, then the
    answer), only those whose run passes the task's own success check."""
    trajectories = []
    for task in tasks:
        verdicts, records = _oracle_run(task)
        if not verdicts["success"] or not records:
            continue
        steps = [TrajectoryStep(call=ToolCall(tool_name=r.tool_name, arguments=r.arguments), result=result_text(r))
                 for r in records]
        options = task.success.answer["any_of"] if task.success.answer else []
        trajectories.append(Trajectory(source=task.id, request=task.request, steps=steps,
                                       answer=f"Done. The answer is {options[0]}." if options else "Done."))
    return trajectories


class LoopResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    results: pd.DataFrame
    summary: dict[str, float]
    run_dir: Path | None = None


def _row(task: LoopTask, transcript: Transcript, session: ToolSession, usage: dict[str, Any]) -> dict[str, Any]:
    made = [ToolCall(tool_name=c.tool_name, arguments=c.arguments) for c in transcript.calls if c.ok]
    verdicts = score_task(task, made, session.shared, transcript.final_answer)
    tokens = {key: float(sum((entry or {}).get(key, 0) or 0 for entry in usage.values()))
              for key in ("prompt_tokens", "completion_tokens")}
    return {
        "id": task.id, "split": task.split, "tags": task.tags, "request": task.request,
        **{k: float(v) for k, v in verdicts.items()},
        "steps": float(len(transcript.steps)), "calls": float(len(transcript.calls)),
        "tool_errors": float(transcript.tool_errors), "errors_recovered": float(transcript.errors_recovered),
        "escalations": float(transcript.escalations), "stop_reason": transcript.stop_reason,
        "final_answer": transcript.final_answer, "seconds": transcript.seconds,
        "input_tokens": tokens["prompt_tokens"], "output_tokens": tokens["completion_tokens"],
        "transcript": transcript.model_dump_json(),
    }


def summarize_loop(results: pd.DataFrame) -> dict[str, float]:
    mean, low, high = bootstrap_ci(results["success"]) if len(results) else (math.nan,) * 3
    summary = {"tasks": float(len(results)), "task_success": mean, "task_success_ci_low": low,
               "task_success_ci_high": high}
    for column in ("steps", "calls", "tool_errors", "errors_recovered", "escalations", "seconds", "input_tokens",
                   "output_tokens"):
        summary[column] = float(results[column].mean()) if len(results) else math.nan
    return summary


LOOP_SELECTOR = SelectorSpec(relevance="none")
"""The loop's selector unless told: the default strategy, and no relevance stage (its model was fitted on single
decisions, not on the steps of a conversation)."""


@dataclass(frozen=True)
class LoopSetup:
    """How each task's loop runs besides its models and selector: ``limits`` (``LoopLimits``: ``first_step``,
    ``finish``, reminders; the task's own call limit stands) and ``trajectories``, solved tasks of which up to
    ``shown`` whose tools the task has open its conversation (``tool_selection.trajectories``; never the task's
    own), as earlier turns or as examples in the system prompt (``show_as``)."""

    limits: LoopLimits = field(default_factory=LoopLimits)
    trajectories: tuple[Trajectory, ...] = ()
    shown: int = 2
    show_as: Literal["turns", "text"] = "turns"

    def prompt_for(self, task_id: str, tool_names: Iterable[str]) -> LoopPrompt:
        """The loop's prompt for the task ``task_id`` over the tools named ``tool_names``, with the solved tasks it
        is shown."""
        chosen = choose_trajectories(self.trajectories, tool_names, self.shown, exclude=[task_id])
        return replace(LOOP_PROMPT, demonstrations=tuple(chosen), show_as=self.show_as)


def run_loop_suite(tasks: list[LoopTask], lm: dspy.BaseLM, *, selector: SelectorSpec | None = None,
                   run: RunConfig | None = None, escalation: EscalationPolicy | None = None,
                   progress: Callable[[str], None] | None = None, setup: LoopSetup | None = None) -> LoopResult:
    """Run every task's loop and score it. ``selector``: how each step is decided (default ``LOOP_SELECTOR``);
    ``run``: ``run_dir`` (resumable: finished tasks there are kept; ``fresh`` discards them) and ``limit`` (the
    first N tasks). ``escalation``: a secondary model that takes or guides stuck steps (``EscalationPolicy``).
    ``setup``: the turn's limits and the solved tasks shown first (``LoopSetup``)."""
    selector, run = selector or LOOP_SELECTOR, run or RunConfig()
    if run.sample is not None:
        raise ToolSelectionError("A loop suite runs its tasks in order: give limit, not sample.")
    run_path = run.run_dir
    if run_path and run.fresh:
        (run_path / "results.jsonl").unlink(missing_ok=True)
    done = load_rows(run_path / "results.jsonl", finished_only=True) if run_path else {}
    if run_path:
        run_path.mkdir(parents=True, exist_ok=True)
    writer = _RowWriter(run_path / "results.jsonl" if run_path else None)
    rows = dict(done)
    tasks = tasks[: run.limit]
    for index, task in enumerate(tasks, start=1):
        if task.id in rows:
            continue
        start = time.perf_counter()
        rows[task.id] = row = _run_task(task, lm, selector, escalation, setup or LoopSetup())
        writer.write(row)
        if progress:
            progress(f"{index}/{len(tasks)} {task.id}: {'ok' if row['success'] else 'failed'} "
                     f"({row['steps']:.0f} steps, {row['calls']:.0f} calls, {time.perf_counter() - start:.1f} s)")
    table = pd.DataFrame([rows[t.id] for t in tasks if t.id in rows])
    if run_path:
        table.drop(columns=["transcript"]).to_parquet(run_path / "results.parquet", index=False)
        (run_path / "summary.json").write_text(json.dumps(summarize_loop(table), indent=2))
    return LoopResult(results=table, summary=summarize_loop(table), run_dir=run_path)


def _run_task(task: LoopTask, lm: dspy.BaseLM, selector: SelectorSpec, escalation: EscalationPolicy | None,
              setup: LoopSetup) -> dict[str, Any]:
    """One task's loop, in a folder of its own (each task's files start from nothing), as a result row."""
    limits = replace(setup.limits, max_tool_calls=task.max_tool_calls, max_steps=None)
    tools = task.tools()
    prompt = setup.prompt_for(task.id, tools.registry().names())
    with tempfile.TemporaryDirectory(prefix="loop-task-") as root:
        loop = AgentLoop(tools, selector=MultiToolSelector.from_spec(selector), lm=lm, limits=limits,
                         system_prompt=prompt, escalation=escalation, session_config={"root": Path(root)})
        with dspy.context(track_usage=True), dspy.track_usage() as tracker:
            transcript = loop.run(task.request)
        return {**_row(task, transcript, loop.session, tracker.get_total_tokens()),
                "first_step": limits.first_step, "finish": limits.finish,
                "demonstrations": [t.source for t in prompt.demonstrations]}


def registry_of(task: LoopTask) -> ToolRegistry:
    return task.tools().registry()
