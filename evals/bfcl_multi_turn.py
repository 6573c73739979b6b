"""BFCL's multi-turn categories as loop tasks, run by the tool-calling loop and scored by BFCL's own checker.

A task is one entry of ``BFCL_v4_multi_turn_{base,miss_func,miss_param,long_context}.json`` in ``bfcl-eval``:
its user turns in order, the back-end classes it involves (``GorillaFileSystem``, ``TwitterAPI``, ...) and their
``initial_config``. Each task gets fresh instances of ``bfcl-eval``'s own classes, set up from that configuration
as BFCL sets them up (``_load_scenario``), held in memory; the model sees the classes' functions through BFCL's
function docs (``multi_turn_func_doc``), and every call it makes runs on those instances. In ``miss_func`` the held
out functions join the tools at the turn BFCL adds them, with BFCL's own user message for that turn.

Scoring is BFCL's ``multi_turn_checker``: the calls that reached the back ends, step by step and turn by turn,
are replayed on fresh instances beside the ground truth, and after every turn the instances' state and the
results must match. A task passes when every turn does. Calls the loop refused before they reached a back end (an
unknown function, arguments against the schema) are left out, as BFCL leaves out answers it cannot decode. A
turn that ends on the loop's step limit force-terminates the task (BFCL fails such an entry), so does a model
error; a checker that crashes on a task's calls fails that task with the crash's message.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import math
import random
import time
import uuid
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, Literal

import dspy
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from evals.bfcl import BFCL_VERSION, bfcl_data_dir, split_for
from evals.loop_eval import LOOP_SELECTOR, LoopSetup
from evals.metrics import bootstrap_ci
from evals.runner import _RowWriter, load_rows
from evals.suite import SuiteError, read_json_lines
from tool_selection.agent import (
    NOT_EXECUTED,
    AgentLoop,
    CallRecord,
    LoopEscalation,
    LoopLimits,
    Message,
    Role,
    ToolSession,
    Transcript,
    result_text,
)
from tool_selection.decision import ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import SchemaOnlyTool, bfcl_to_json_schema, schema_only_tool
from tool_selection.parsing import clip
from tool_selection.registry import ToolRegistry
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec
from tool_selection.tool_failures import tool_failure
from tool_selection.trajectories import Trajectory, TrajectoryStep

__all__ = ["MULTI_TURN_CATEGORIES", "BfclBackends", "MultiTurnTask", "check_multi_turn", "ground_truth_trajectories",
           "load_multi_turn", "multi_turn_n_ctx", "parse_call_string", "run_multi_turn", "summarize_multi_turn",
           "trim_history"]

MULTI_TURN_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                         "multi_turn_long_context")
MAX_STEPS_PER_TURN = 20  # BFCL's MAXIMUM_STEP_LIMIT: a turn that needs more is force-terminated
MAX_CALLS_PER_TURN = 40  # the longest ground-truth turn (long_context) makes 34 calls
TURN_LIMITS = LoopLimits(max_tool_calls=MAX_CALLS_PER_TURN, max_steps=MAX_STEPS_PER_TURN, reminders=1)
"""Every BFCL multi-turn turn asks for calls: a turn's first answer without one is sent back once."""
MULTI_TURN_SETUP = LoopSetup(TURN_LIMITS)
"""BFCL's turn limits, no solved tasks shown."""
MULTI_TURN_N_CTX = 16384  # Qwen2.5-Coder is trained for 32k; two classes' docs plus a conversation fit in 16k
CHARS_PER_TOKEN = 3.0  # a conservative estimate for JSON-heavy text (Qwen's tokenizer averages more)
CLOSING_RESULT_CHARS = 200  # a demonstration's answer quotes its last result up to this length
TURN_RESERVE_TOKENS = 3072  # room kept for the turn being run: its calls, results and answers


def multi_turn_n_ctx(n_ctx: int | None = None) -> int:
    """The context a local engine is loaded with for multi-turn tasks: ``n_ctx`` when given, else
    ``MULTI_TURN_N_CTX`` (the catalog's 4,096 tokens do not hold two classes' function docs and a conversation)."""
    if n_ctx is not None and n_ctx < 4096:
        raise ToolSelectionError(f"n_ctx {n_ctx} is too small for BFCL multi-turn tasks (two classes' function "
                                 "docs alone take several thousand tokens); give at least 4096, e.g. 16384.")
    return n_ctx or MULTI_TURN_N_CTX


@cache
def _backend_config() -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
    from bfcl_eval.constants.executable_backend_config import (
        CLASS_FILE_PATH_MAPPING,
        MULTI_TURN_FUNC_DOC_FILE_MAPPING,
        STATELESS_CLASSES,
    )

    return CLASS_FILE_PATH_MAPPING, MULTI_TURN_FUNC_DOC_FILE_MAPPING, tuple(STATELESS_CLASSES)


@cache
def _function_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    _, doc_files, _ = _backend_config()
    if class_name not in doc_files:
        raise SuiteError(f"BFCL has no function docs for class {class_name!r}; known: {', '.join(doc_files)}.")
    return tuple(read_json_lines(bfcl_data_dir() / "multi_turn_func_doc" / doc_files[class_name]))


class MultiTurnTask(BaseModel):
    """One BFCL multi-turn entry: its turns, back ends, the functions offered at the start and those added
    later (``miss_func``), and BFCL's ground truth (call strings per turn)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    category: str
    turns: list[list[dict[str, str]]]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    functions: list[dict[str, Any]]
    added_functions: dict[int, list[dict[str, Any]]] = Field(default_factory=dict)
    ground_truth: list[list[str]]
    split: Literal["train", "dev", "test"] = "test"

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category

    def entry(self) -> dict[str, Any]:
        """The entry as BFCL's checker reads it."""
        return {"id": self.id, "initial_config": self.initial_config, "involved_classes": self.involved_classes}


def load_multi_turn(categories: Iterable[str]) -> list[MultiTurnTask]:
    """The tasks of BFCL multi-turn categories (see ``MULTI_TURN_CATEGORIES``), in file order, category after
    category. The function list is built as BFCL builds it (``populate_test_cases_with_predefined_functions``): the
    involved classes' docs, less the ``missed_function``s, which come back at their turn."""
    tasks = []
    for category in categories:
        if category not in MULTI_TURN_CATEGORIES:
            raise SuiteError(f"Unknown BFCL multi-turn category {category!r}. Supported: "
                             f"{', '.join(MULTI_TURN_CATEGORIES)}.")
        file_name = f"BFCL_{BFCL_VERSION}_{category}.json"
        data = bfcl_data_dir()
        truth = {row["id"]: row["ground_truth"] for row in read_json_lines(data / "possible_answer" / file_name)}
        for row in read_json_lines(data / file_name):
            functions = [dict(doc) for name in row["involved_classes"] for doc in _function_docs(name)]
            added: dict[int, list[dict[str, Any]]] = {}
            for turn, names in row.get("missed_function", {}).items():
                added[int(turn)] = [f for f in functions if f["name"] in names]
                functions = [f for f in functions if f["name"] not in names]
            if row["id"] not in truth:
                raise SuiteError(f"{data / 'possible_answer' / file_name}: no ground truth for {row['id']!r}.")
            tasks.append(MultiTurnTask(id=row["id"], category=category, turns=row["question"],
                                       initial_config=row["initial_config"], involved_classes=row["involved_classes"],
                                       functions=functions, added_functions=added, ground_truth=truth[row["id"]],
                                       split=split_for(row["id"])))
    return tasks


class BfclBackends:
    """The involved classes of one task, instantiated and set up from its ``initial_config`` as BFCL does; one
    instance per class, shared by every function of the task (a function is the public method of that name)."""

    def __init__(self, task: MultiTurnTask):
        modules, _, stateless = _backend_config()
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for class_name in task.involved_classes:
            instance = getattr(importlib.import_module(modules[class_name]), class_name)()
            if class_name not in stateless:
                instance._load_scenario(copy.deepcopy(task.initial_config.get(class_name, {})),
                                        long_context=task.long_context)
            self.instances[class_name] = instance
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.methods[name] = method

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name not in self.methods:
            raise ToolSelectionError(f"No back end of this task has a function {name!r}.")
        return self.methods[name](**arguments)

    def state(self) -> dict[str, dict[str, Any]]:
        """Each instance's public attributes (what BFCL's state check compares)."""
        return {name: {k: v for k, v in vars(instance).items() if not k.startswith("_")}
                for name, instance in self.instances.items()}


class BfclFunctionTool(SchemaOnlyTool, abstract=True):
    """A BFCL multi-turn function: arguments checked against its doc, executed by the task's back ends."""

    SOURCE = "bfcl"
    backends: BfclBackends | None = Field(default=None, exclude=True)

    def execute(self, **kwargs: Any) -> Any:
        if self.backends is None:
            raise ToolSelectionError(f"BFCL function {self.NAME!r} has no back ends: run it in a ToolSession "
                                     "created with backends=BfclBackends(task).")
        result = self.backends.call(self.NAME, kwargs)
        if isinstance(result, dict) and set(result) == {"error"}:  # the back ends' own way to refuse
            return tool_failure("backend_error", str(result["error"]))
        return result


@cache
def _tool_class(doc_json: str) -> type[BfclFunctionTool]:
    doc = json.loads(doc_json)
    return schema_only_tool(doc["name"], doc.get("description", ""), bfcl_to_json_schema(doc.get("parameters") or {}),
                            category="bfcl_multi_turn", source="bfcl", base=BfclFunctionTool)


def function_registry(functions: list[dict[str, Any]], name: str = "bfcl-multi-turn") -> ToolRegistry:
    """The tools for BFCL function docs (one class per distinct doc, made once)."""
    return ToolRegistry(name, [_tool_class(json.dumps(doc, sort_keys=True)) for doc in functions])


def call_string(name: str, arguments: dict[str, Any]) -> str:
    """A call as BFCL writes it (``cd(folder='document')``): Python literals, which its checker evaluates."""
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in arguments.items())})"


def parse_call_string(text: str, backends: BfclBackends) -> ToolCall:
    """A BFCL call string (``sort('final_report.pdf')``) as a tool call: literal arguments only, positional ones
    named from the back end's method."""
    try:
        node = ast.parse(text, mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError("not a call of a plain function name")
        names = list(inspect.signature(backends.methods[node.func.id]).parameters)
        arguments = {**{names[i]: ast.literal_eval(a) for i, a in enumerate(node.args)},
                     **{k.arg: ast.literal_eval(k.value) for k in node.keywords}}
    except (SyntaxError, ValueError, KeyError, IndexError) as error:
        raise ToolSelectionError(f"Cannot read the BFCL call {text!r}: {error}") from None
    return ToolCall(tool_name=node.func.id, arguments=arguments)


def ground_truth_trajectories(tasks: Iterable[MultiTurnTask]) -> list[Trajectory]:
    """Each task's first turn as BFCL's ground truth does it, as a solved task to show the loop: the calls run on
    the task's fresh back ends, each with the result the loop would show, then an answer that says what was done.
    Only first turns: a later turn leans on the ones before it ("move that file"). A task whose first turn has no
    call, or whose ground truth fails on the back ends, gives none."""
    trajectories = []
    for task in tasks:
        if not task.turns or not task.turns[0] or not task.ground_truth or not task.ground_truth[0]:
            continue
        backends = BfclBackends(task)
        session = ToolSession(function_registry(task.functions), backends=backends)
        records = [session.execute(parse_call_string(text, backends), f"truth_{i}")
                   for i, text in enumerate(task.ground_truth[0])]
        if not all(r.ok for r in records):
            continue
        steps = [TrajectoryStep(call=ToolCall(tool_name=r.tool_name, arguments=r.arguments), result=result_text(r))
                 for r in records]
        trajectories.append(Trajectory(source=task.id, request=task.turns[0][-1]["content"], steps=steps,
                                       answer=_closing(records)))
    return trajectories


def _closing(records: list[CallRecord]) -> str:
    """A ground-truth turn's answer, which BFCL does not give: what was done, and what the last call returned."""
    names = [r.tool_name for r in records]
    done = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    ran = {1: "ran", 2: "both ran"}.get(len(names), "all ran")
    if records[-1].result is None:
        return f"Done: {done} {ran} without an error."
    return f"Done: {done} {ran} without an error. The last result: {clip(result_text(records[-1]), CLOSING_RESULT_CHARS)}"


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
             max_tokens: int = 512, escalation: LoopEscalation | None = None,
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
                   run: RunConfig | None = None, escalation: LoopEscalation | None = None,
                   progress: Callable[[str], None] | None = None,
                   setup: LoopSetup = MULTI_TURN_SETUP) -> tuple[pd.DataFrame, dict[str, float]]:
    """Run every task and summarise. ``selector``: how each step is decided (default ``LOOP_SELECTOR``); ``run``:
    ``run_dir`` (resumable: finished tasks there are kept; ``fresh`` discards them), ``sample``/``seed`` and
    ``limit`` (which tasks: a seeded sample, then the first N), ``max_tokens`` (the model's generation limit, kept
    free in the context). ``escalation``: a secondary model that takes or guides stuck steps (``LoopEscalation``).
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
