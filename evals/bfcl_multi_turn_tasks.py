"""BFCL's multi-turn tasks and their back ends (run and scored by ``evals.bfcl_multi_turn``).

A task is one entry of ``BFCL_v4_multi_turn_{base,miss_func,miss_param,long_context}.json`` in ``bfcl-eval``:
its user turns in order, the back-end classes it involves (``GorillaFileSystem``, ``TwitterAPI``, ...) and their
``initial_config``. Each task gets fresh instances of ``bfcl-eval``'s own classes, set up from that configuration
as BFCL sets them up (``_load_scenario``), held in memory; the model sees the classes' functions through BFCL's
function docs (``multi_turn_func_doc``), and every call it makes runs on those instances. In ``miss_func`` the held
out functions join the tools at the turn BFCL adds them, with BFCL's own user message for that turn.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
from collections.abc import Iterable
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.bfcl import BFCL_VERSION, bfcl_data_dir, split_for
from evals.suite import SuiteError, read_json_lines
from tool_selection.agent import CallRecord, ToolSession, result_text
from tool_selection.decision import ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import SchemaOnlyTool, bfcl_to_json_schema, schema_only_tool
from tool_selection.parsing import clip
from tool_selection.registry import ToolRegistry
from tool_selection.tool_failures import tool_failure
from tool_selection.trajectories import Trajectory, TrajectoryStep

__all__ = ["MULTI_TURN_CATEGORIES", "BfclBackends", "BfclFunctionTool", "MultiTurnTask", "call_string",
           "function_registry", "ground_truth_trajectories", "load_multi_turn", "parse_call_string"]

MULTI_TURN_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                         "multi_turn_long_context")
CLOSING_RESULT_CHARS = 200  # a demonstration's answer quotes its last result up to this length


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
