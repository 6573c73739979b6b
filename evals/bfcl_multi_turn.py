"""BFCL's multi-turn categories as loop tasks, run by the tool-calling loop and scored by BFCL's own checker.

The tasks, their back ends and their functions as tools are ``evals.bfcl_multi_turn_tasks`` (its names are
importable from here too).

Scoring is BFCL's ``multi_turn_checker``: the calls that reached the back ends, step by step and turn by turn,
are replayed on fresh instances beside the ground truth, and after every turn the instances' state and the
results must match. A task passes when every turn does. Calls the loop refused before they reached a back end (an
unknown function, arguments against the schema) are left out, as BFCL leaves out answers it cannot decode. A
turn that ends on the loop's step limit force-terminates the task (BFCL fails such an entry), so does a model
error; a checker that crashes on a task's calls fails that task with the crash's message.
"""

from __future__ import annotations

import json
import math
import random
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import dspy
import pandas as pd

from evals.bfcl_multi_turn_tasks import (
    MULTI_TURN_CATEGORIES,
    BfclBackends,
    MultiTurnTask,
    call_string,
    function_registry,
    ground_truth_trajectories,
    load_multi_turn,
    parse_call_string,
)
from evals.loop_eval import LOOP_SELECTOR, LoopSetup
from evals.metrics import bootstrap_ci
from evals.runner import _RowWriter, load_rows
from tool_selection.agent import (
    NOT_EXECUTED,
    AgentLoop,
    EscalationPolicy,
    LoopLimits,
    Message,
    Role,
    Transcript,
)
from tool_selection.defaults import DEFAULT_MAX_TOKENS
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec

__all__ = ["MULTI_TURN_CATEGORIES", "BfclBackends", "MultiTurnTask", "call_string", "check_multi_turn",
           "function_registry", "ground_truth_trajectories", "load_multi_turn", "multi_turn_n_ctx", "parse_call_string",
           "run_multi_turn", "summarize_multi_turn", "trim_history"]

MAX_STEPS_PER_TURN = 20  # BFCL's MAXIMUM_STEP_LIMIT: a turn that needs more is force-terminated
MAX_CALLS_PER_TURN = 40  # the longest ground-truth turn (long_context) makes 34 calls
TURN_LIMITS = LoopLimits(max_tool_calls=MAX_CALLS_PER_TURN, max_steps=MAX_STEPS_PER_TURN, reminders=1)
"""Every BFCL multi-turn turn asks for calls: a turn's first answer without one is sent back once."""
MULTI_TURN_SETUP = LoopSetup(TURN_LIMITS)
"""BFCL's turn limits, no solved tasks shown."""
MULTI_TURN_N_CTX = 16384  # Qwen2.5-Coder is trained for 32k; two classes' docs plus a conversation fit in 16k
CHARS_PER_TOKEN = 3.0  # a conservative estimate for JSON-heavy text (Qwen's tokenizer averages more)
TURN_RESERVE_TOKENS = 3072  # room kept for the turn being run: its calls, results and answers


def multi_turn_n_ctx(n_ctx: int | None = None) -> int:
    """The context a local engine is loaded with for multi-turn tasks: ``n_ctx`` when given, else
    ``MULTI_TURN_N_CTX`` (the catalog's 4,096 tokens do not hold two classes' function docs and a conversation)."""
    if n_ctx is not None and n_ctx < 4096:
        raise ToolSelectionError(f"n_ctx {n_ctx} is too small for BFCL multi-turn tasks (two classes' function "
                                 "docs alone take several thousand tokens); give at least 4096, e.g. 16384.")
    return n_ctx or MULTI_TURN_N_CTX


# ------------------------------------------------------------------------------------------------ the checker
def check_multi_turn(task: MultiTurnTask, model_result: list[list[list[str]]]) -> dict[str, Any]:
    """BFCL's verdict on ``model_result`` (per turn, per step, the call strings): ``valid``, ``error_type``,
    ``error_message``, and ``turns_passed``, the turns before the first one that failed (BFCL checks turn by
    turn and stops at the first failure; it is found by checking ever longer prefixes)."""
    turns = len(task.ground_truth)
    if len(model_result) != turns:  # as BFCL's runner: a task that did not reach its last turn fails whole
        return {"valid": False, "error_type": "multi_turn:force_terminated", "turns_passed": 0,
                "error_message": f"The loop ran {len(model_result)} of {turns} turns (force-terminated)."}
    verdict: dict[str, Any] = {"valid": True}
    passed = 0
    for end in range(1, turns + 1):
        verdict = _checker_verdict(task, model_result[:end], task.ground_truth[:end])
        if not verdict["valid"]:
            break
        passed = end
    return {"valid": verdict["valid"], "error_type": verdict.get("error_type"),
            "error_message": verdict.get("error_message"), "turns_passed": passed}


def _checker_verdict(task: MultiTurnTask, model_result: list[list[list[str]]],
                     truth: list[list[str]]) -> dict[str, Any]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    # The checker keeps its instances in its module's globals, named after the model and the entry: a name of
    # our own per check, removed after it, gives every check fresh instances and leaves nothing behind.
    model_name = f"toolsel_{uuid.uuid4().hex}"
    try:
        return multi_turn_checker(model_result, truth, task.entry(), task.category, model_name)
    except Exception as error:  # BFCL's code crashing on a task's calls fails that task, with the crash's message
        return {"valid": False, "error_type": "multi_turn:checker_error",
                "error_message": f"{type(error).__name__}: {error}"[:500]}
    finally:
        namespace = vars(multi_turn_utils)
        for key in [k for k in namespace if k.startswith(model_name)]:
            del namespace[key]


# ------------------------------------------------------------------------------------------- the conversation
def _chars(messages: Iterable[Message]) -> int:
    return sum(len(m.content or "") + sum(len(str(c)) for c in m.tool_calls) + 16 for m in messages)


def trim_history(history: list[Message], budget_chars: int) -> tuple[list[Message], int, int]:
    """``history`` made to fit ``budget_chars``: first the oldest turns' calls and results are summarised (one
    assistant line per turn: each call and whether it succeeded), then, if that is not enough, the oldest turns
    are dropped. The system message and the latest turn are kept. Returns the history and how many turns were
    summarised and dropped, so that a run records when it happened."""
    if _chars(history) <= budget_chars:
        return history, 0, 0
    system = [m for m in history if m.role is Role.SYSTEM]
    turns: list[list[Message]] = []
    for message in history:
        if message.role is Role.SYSTEM:
            continue
        if message.role is Role.USER or not turns:
            turns.append([])
        turns[-1].append(message)
    summarised = dropped = 0
    for index in range(len(turns) - 1):
        if _chars(system) + sum(_chars(t) for t in turns) <= budget_chars:
            break
        turns[index] = _summarised(turns[index])
        summarised += 1
    while len(turns) > 1 and _chars(system) + sum(_chars(t) for t in turns) > budget_chars:
        turns.pop(0)
        dropped += 1
    return system + [m for turn in turns for m in turn], summarised, dropped


def _summarised(turn: list[Message]) -> list[Message]:
    outcomes = {m.tool_call_id: bool(m.metadata.get("ok")) for m in turn if m.role is Role.TOOL}
    done = [f"{call} -> {'ok' if outcomes.get(call_id) else 'failed'}" for m in turn if m.role is Role.ASSISTANT
            for call, call_id in zip(m.tool_calls, m.call_ids, strict=True)]
    answer = next((m.content for m in reversed(turn) if m.role is Role.ASSISTANT and not m.tool_calls), "")
    text = "(Earlier turn, summarised to fit the context.) " + ("Calls: " + "; ".join(done) if done else "No calls.")
    if answer:
        text += f" Answer: {answer[:300]}"
    return [m for m in turn if m.role is Role.USER] + [Message(role=Role.ASSISTANT, content=text,
                                                                metadata={"summary": True})]


def _context_tokens(lm: dspy.BaseLM | None) -> int | None:
    from tool_selection.lm.engine import local_engine

    engine = local_engine(lm) if lm is not None else None
    return engine.settings.n_ctx if engine is not None else None


# ------------------------------------------------------------------------------------------------------ runs
def run_task(task: MultiTurnTask, lm: dspy.BaseLM | None, *, selector: SelectorSpec = LOOP_SELECTOR,
             max_tokens: int = DEFAULT_MAX_TOKENS, escalation: EscalationPolicy | None = None,
             setup: LoopSetup = MULTI_TURN_SETUP) -> dict[str, Any]:
    """Run one task's turns through the loop on fresh back ends and score it with BFCL's checker: one row.
    Every turn's ``AgentLoop`` decides with a selector built from ``selector`` within ``setup.limits`` and
    escalates stuck steps as ``escalation`` says; the solved tasks ``setup`` chooses for the task's functions open
    its first turn. ``max_tokens`` (the model's generation limit) is kept free in the context."""
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    start = time.perf_counter()
    decide = MultiToolSelector.from_spec(selector)
    prompt = setup.prompt_for(task.id, [f["name"] for f in task.functions])  # those offered from the start
    backends = BfclBackends(task)
    functions = list(task.functions)
    n_ctx = _context_tokens(lm)
    history: list[Message] = []
    transcripts: list[Transcript] = []
    model_result: list[list[list[str]]] = []
    summarised = dropped = 0
    ended, error = "finished", None
    for turn_index, messages in enumerate(task.turns):
        if turn_index in task.added_functions:
            functions += task.added_functions[turn_index]
            messages = messages or [{"role": "user", "content": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC}]
        registry = function_registry(functions)
        if n_ctx is not None:
            tools_chars = len(json.dumps(functions))
            budget = int((n_ctx - max_tokens - TURN_RESERVE_TOKENS) * CHARS_PER_TOKEN) - tools_chars
            history, s, d = trim_history(history, budget)
            summarised, dropped = summarised + s, dropped + d
        earlier = [Message(role=Role(m["role"]), content=m["content"]) for m in messages[:-1]]
        loop = AgentLoop(registry, selector=decide, lm=lm, limits=setup.limits, escalation=escalation,
                         system_prompt=prompt, session_config={"backends": backends})
        transcript = loop.run(messages[-1]["content"] if messages else "", history=[*history, *earlier])
        transcripts.append(transcript)
        model_result.append(executed_calls(transcript))
        history = transcript.messages
        if transcript.stop_reason in ("call_limit", "step_limit", "model_error"):
            ended, error = transcript.stop_reason, transcript.error
            break
    verdict = check_multi_turn(task, model_result)
    calls = [c for t in transcripts for c in t.calls]
    turns = len(task.ground_truth)
    return {
        "id": task.id, "category": task.category, "split": task.split, "success": float(verdict["valid"]),
        "turns": float(turns), "turns_run": float(len(transcripts)), "turns_passed": float(verdict["turns_passed"]),
        "turn_success": verdict["turns_passed"] / turns, "error_type": verdict["error_type"],
        "bfcl_error": verdict["error_message"], "ended": ended,
        "error_message": error,  # a model error: a resumed run tries the task again (evals.runner.load_rows)
        "steps": float(sum(len(t.steps) for t in transcripts)), "calls": float(len(calls)),
        "tool_errors": float(sum(not c.ok for c in calls)),
        "errors_recovered": float(sum(t.errors_recovered for t in transcripts)),
        "escalations": float(sum(t.escalations for t in transcripts)),
        "reminders": float(sum(t.reminders for t in transcripts)), "first_step": setup.limits.first_step,
        "finish": setup.limits.finish, "demonstrations": [t.source for t in prompt.demonstrations],
        "turn_stop_reasons": [t.stop_reason for t in transcripts],
        "turns_summarised": float(summarised), "turns_dropped": float(dropped),
        "seconds": time.perf_counter() - start, "model_result": model_result,
        "transcripts": json.dumps([t.model_dump(mode="json") for t in transcripts]),
    }


def executed_calls(transcript: Transcript) -> list[list[str]]:
    """A turn's calls that reached a back end, as BFCL's checker reads them: per step that made any, the call
    strings."""
    steps = [[call_string(c.tool_name, c.arguments) for c in step.calls if c.error not in NOT_EXECUTED]
             for step in transcript.steps]
    return [step for step in steps if step]


def summarize_multi_turn(results: pd.DataFrame) -> dict[str, float]:
    """Task success with its 95% interval; turn success (turns passed before the first failure, over turns);
    the pass rate of each turn position; calls, errors recovered and seconds per task."""
    if not len(results):
        return {"tasks": 0.0, "task_success": math.nan}
    mean, low, high = bootstrap_ci(results["success"])
    summary = {"tasks": float(len(results)), "task_success": mean, "task_success_ci_low": low,
               "task_success_ci_high": high, "turn_success": float(results["turns_passed"].sum()
                                                                  / results["turns"].sum())}
    for column in ("steps", "calls", "tool_errors", "errors_recovered", "escalations", "reminders", "seconds",
                   "turns_summarised", "turns_dropped"):
        if column in results:  # rows kept before a column existed lack it
            summary[column] = float(results[column].mean())
    for position in range(int(results["turns"].max())):
        reached = results[results["turns"] > position]
        summary[f"turn_{position + 1}_passed"] = float((reached["turns_passed"] > position).mean())
    return summary


def sample_tasks(tasks: list[MultiTurnTask], size: int | None, seed: int) -> list[MultiTurnTask]:
    """A fixed random sample of ``size`` tasks (all when None or larger), in their original order."""
    if size is None or size >= len(tasks):
        return tasks
    chosen = set(random.Random(seed).sample(range(len(tasks)), size))
    return [task for index, task in enumerate(tasks) if index in chosen]


def run_multi_turn(tasks: list[MultiTurnTask], lm: dspy.BaseLM | None, *, selector: SelectorSpec | None = None,
                   run: RunConfig | None = None, escalation: EscalationPolicy | None = None,
                   progress: Callable[[str], None] | None = None,
                   setup: LoopSetup = MULTI_TURN_SETUP) -> tuple[pd.DataFrame, dict[str, float]]:
    """Run every task and summarise. ``selector``: how each step is decided (default ``LOOP_SELECTOR``); ``run``:
    ``run_dir`` (resumable: finished tasks there are kept; ``fresh`` discards them), ``sample``/``seed`` and
    ``limit`` (which tasks: a seeded sample, then the first N), ``max_tokens`` (the model's generation limit, kept
    free in the context). ``escalation``: a secondary model that takes or guides stuck steps (``EscalationPolicy``).
    ``setup``: each turn's limits and the solved tasks shown first (``LoopSetup``; default: ``TURN_LIMITS``,
    BFCL's step limit and one reminder, none shown; ``first_step="required"`` makes each turn open with a call,
    ``finish="tool"`` every step a call until the model calls ``finish``)."""
    run = run or RunConfig()
    tasks = sample_tasks(tasks, run.sample, run.seed)[: run.limit]
    run_path = run.run_dir
    if run_path and run.fresh:
        (run_path / "results.jsonl").unlink(missing_ok=True)
    rows = dict(load_rows(run_path / "results.jsonl", finished_only=True)) if run_path else {}
    if run_path:
        run_path.mkdir(parents=True, exist_ok=True)
    writer = _RowWriter(run_path / "results.jsonl" if run_path else None)
    for index, task in enumerate(tasks, start=1):
        if task.id in rows:
            continue
        row = run_task(task, lm, selector=selector or LOOP_SELECTOR, max_tokens=run.max_tokens, escalation=escalation,
                       setup=setup)
        rows[task.id] = row
        writer.write(row)
        if progress:
            progress(f"{index}/{len(tasks)} {task.id}: {_task_line(row)}")
    table = pd.DataFrame([rows[t.id] for t in tasks if t.id in rows])
    summary = summarize_multi_turn(table)
    if run_path:
        (run_path / "summary.json").write_text(json.dumps(summary, indent=2))
    return table, summary


def _task_line(row: dict[str, Any]) -> str:
    turns, passed, run = int(row["turns"]), int(row["turns_passed"]), int(row["turns_run"])
    marks = "".join("+" if i < passed else "x" if i == passed and not row["success"] else "." for i in range(turns))
    verdict = "passed" if row["success"] else f"failed at turn {passed + 1} ({row['error_type']})"
    trimmed = f", {int(row['turns_summarised'])} turns summarised" if row["turns_summarised"] else ""
    return (f"{verdict}; turns [{marks}] {passed}/{turns}, ran {run}; {row['calls']:.0f} calls, "
            f"{row['errors_recovered']:.0f} errors recovered, {row['seconds']:.1f} s{trimmed}")
