"""Evaluation suites: JSON Lines files of tool-selection cases (format: ``evals/suites/FORMAT.md``)."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import referencing.exceptions
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tool_selection.errors import ToolSelectionError
from tool_selection.interop import from_bfcl, from_openai
from tool_selection.named_registry import Registry
from tool_selection.parsing import clip
from tool_selection.registry import ToolRegistry
from tool_selection.strict_files import FileFormatError
from tool_selection.strict_json import loads_strict
from tool_selection.tool import BaseTool
from tool_selection.toolset import load_tool_set

__all__ = ["SUITE_SOURCES", "BfclChecker", "Case", "ExpectedCall", "Suite", "SuiteError", "SuiteSource",
           "available_suites", "load_suite", "suite_form", "suite_reference", "suite_source"]

SUITES_DIR = Path(__file__).parent / "suites"
LOOP_SUITES = SUITES_DIR / "loop"  # tasks for the tool-calling loop (evals.loop_eval)
Split = Literal["train", "dev", "test"]
MAX_REQUEST_CHARS = 100_000  # about 25,000 tokens, more than the context of the models the toolkit runs
MAX_LINE_BYTES = 1 << 20  # one case, its inline tools included
MAX_LISTED_PROBLEMS = 50


class SuiteError(FileFormatError):
    """A suite file is malformed; the message names the file, line and field (every problem found, at once)."""


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field(max_length=MAX_REQUEST_CHARS)


class ExpectedCall(BaseModel):
    """A call a correct answer makes. ``arguments`` maps a name to a literal or ``{"one_of": [...]}``."""

    model_config = ConfigDict(extra="forbid")
    tool_name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)

    def acceptable(self) -> dict[str, list[Any]]:
        """Each checked argument with its list of acceptable values (``""`` marks "may be omitted")."""
        out = {}
        for name, value in self.arguments.items():
            if isinstance(value, dict) and set(value) == {"one_of"}:
                if not isinstance(value["one_of"], list) or not value["one_of"]:
                    raise ValueError(f"arguments.{name}.one_of must be a non-empty list")
                out[name] = list(value["one_of"])
            else:
                out[name] = [value]
        return out


class BfclChecker(BaseModel):
    """Score the case with ``bfcl-eval``'s own AST checker (``evals.bfcl_checker``), as BFCL's runner does: for BFCL's
    Java and JavaScript categories, whose arguments are source literals in strings (``"50L"``, ``"[1, 2]"``) that
    only BFCL's type converters read. ``functions`` are BFCL's function docs as its checker reads them (the types as
    the language declares them), not the case's ``tools``, which the model sees (every argument a string, with
    BFCL's notes); the possible answer is ``expected_calls``."""

    model_config = ConfigDict(extra="forbid")
    language: Literal["python", "java", "javascript"]
    category: str = Field(min_length=1, description="BFCL's category: 'parallel' or 'multiple' in it picks that "
                                                    "checker, any other name the simple one")
    functions: list[dict[str, Any]] = Field(min_length=1)


def inline_tool_problems(tools: list[Any]) -> list[str]:
    """What is wrong with a case's inline tool definitions (OpenAI functions, bare or wrapped, or BFCL function
    docs): each must be an object with a name, a text description and an object of parameters, and no two may
    share a name."""
    problems = []
    first_with: dict[str, int] = {}
    for index, entry in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be an object, got {type(entry).__name__}")
            continue
        if "function" in entry:
            where, entry = f"{where}.function", entry["function"]
            if not isinstance(entry, dict):
                problems.append(f"{where}: must be an object, got {type(entry).__name__}")
                continue
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            problems.append(f"{where}.name: must be a non-empty string, got {name!r}"[:200])
        elif name in first_with:
            problems.append(f"{where}.name: {name!r} is already the name of tools[{first_with[name]}]; give each "
                            "tool its own name")
        else:
            first_with[name] = index
        for key, kind, article in (("description", str, "a string"), ("parameters", dict, "an object")):
            value = entry.get(key)
            if value is not None and not isinstance(value, kind):
                problems.append(f"{where}.{key}: must be {article}, got {type(value).__name__}")
    return problems


class Case(BaseModel):
    """One evaluation case."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    request: str | None = Field(default=None, max_length=MAX_REQUEST_CHARS)
    messages: list[Message] | None = None
    tool_set: str | None = None
    tools: list[dict[str, Any]] | None = None
    expected_calls: list[ExpectedCall]
    tags: list[str] = Field(default_factory=list)
    split: Split = "test"
    strict_arguments: bool = Field(
        default=False,
        description="BFCL semantics: an argument the model passes that the expected call does not list is wrong. "
                    "When false, such an argument is ignored if the tool accepts the call.",
    )
    bfcl_checker: BfclChecker | None = Field(
        default=None,
        description="Score with BFCL's own AST checker in this language (BFCL's Java and JavaScript categories) "
                    "instead of our matcher; see evals.metrics.score_case.",
    )

    @field_validator("tools")
    @classmethod
    def _tool_definitions(cls, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        problems = inline_tool_problems(tools or [])
        if problems:
            raise ValueError("; ".join(problems))
        return tools

    @model_validator(mode="after")
    def _one_source_each(self) -> Case:
        if (self.request is None) == (self.messages is None):
            raise ValueError("give exactly one of 'request' or 'messages'")
        if self.messages is not None and not any(m.role == "user" for m in self.messages):
            raise ValueError("'messages' needs at least one user turn")
        if (self.tool_set is None) == (self.tools is None):
            raise ValueError("give exactly one of 'tool_set' or 'tools'")
        for call in self.expected_calls:
            call.acceptable()
        return self

    @property
    def prompt(self) -> str:
        """The request as one string; a conversation is rendered turn by turn."""
        if self.request is not None:
            return self.request
        turns = [m for m in self.messages or [] if m.role != "system"]
        if len(turns) == 1:
            return turns[0].content
        return "\n".join(f"{m.role}: {m.content}" for m in turns)

    @property
    def expects_no_tool(self) -> bool:
        return not self.expected_calls

    def tools_key(self) -> str:
        if self.tool_set is not None:
            return f"set:{self.tool_set}"
        return "inline:" + hashlib.sha256(json.dumps(self.tools, sort_keys=True).encode()).hexdigest()[:16]


_INLINE_CACHE: dict[str, ToolRegistry] = {}


def registry_for(case: Case) -> ToolRegistry:
    """The tools available in ``case``: its named tool set or its inline definitions (cached)."""
    key = case.tools_key()
    if key not in _INLINE_CACHE:
        if case.tool_set is not None:
            _INLINE_CACHE[key] = load_tool_set(case.tool_set).registry()
        else:
            tools = case.tools or []
            is_bfcl = any(isinstance(t.get("parameters"), dict) and t["parameters"].get("type") == "dict"
                          for t in tools)
            _INLINE_CACHE[key] = (from_bfcl if is_bfcl else from_openai)(tools, name=f"case-{case.id}")
    return _INLINE_CACHE[key]


def row_from_case(case: Case) -> dict[str, Any]:
    """One case as a dataset row (``Suite.to_dataset``): nested fields as JSON strings, absent values as ``""``
    (``evals.hf_suite.case_from_row`` reads it back)."""
    data = case.model_dump(mode="json", exclude_none=True)
    row: dict[str, Any] = {"id": case.id, "request": case.request or ""}
    for column in ("messages", "tools", "expected_calls"):
        row[column] = json.dumps(data[column]) if column in data else ""
    row.update({"tool_set": case.tool_set or "", "tags": list(case.tags), "split": case.split,
                "strict_arguments": case.strict_arguments})
    if "bfcl_checker" in data:  # only where set, so that other suites keep their columns (Suite.to_dataset fills in)
        row["bfcl_checker"] = json.dumps(data["bfcl_checker"])
    return row


@dataclass
class Suite:
    """A named, ordered list of cases."""

    name: str
    cases: list[Case]
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def split(self, split: str | None) -> Suite:
        if split in (None, "all"):
            return self
        return Suite(f"{self.name}:{split}", [c for c in self.cases if c.split == split], self.source, self.metadata)

    def limit(self, n: int | None) -> Suite:
        return self if n is None else Suite(self.name, self.cases[:n], self.source, self.metadata)

    def only(self, ids: str | None) -> Suite:
        """The cases named in ``ids`` (comma-separated), in suite order; an id the suite lacks is refused."""
        if ids is None:
            return self
        wanted = [name.strip() for name in ids.split(",") if name.strip()]
        known = {case.id for case in self.cases}
        if missing := [name for name in wanted if name not in known]:
            close = difflib.get_close_matches(missing[0], known, n=3)
            raise SuiteError(f"Suite {self.name!r} has no case {', '.join(map(repr, missing))}"
                             + (f" (close: {', '.join(close)})" if close else "")
                             + "; --ids takes the ids a run's rows name, comma-separated.")
        return Suite(f"{self.name}@{len(set(wanted))}", [c for c in self.cases if c.id in set(wanted)], self.source,
                     self.metadata)

    def sample(self, n: int | None, seed: int = 0) -> Suite:
        """A fixed sample of ``n`` cases, the same for a given seed whatever else runs (in suite order)."""
        if n is None or n >= len(self.cases):
            return self
        ranked = sorted(self.cases, key=lambda c: hashlib.sha256(f"{seed}:{c.id}".encode()).hexdigest())
        chosen = {c.id for c in ranked[:n]}
        return Suite(f"{self.name}~{n}@{seed}", [c for c in self.cases if c.id in chosen], self.source,
                     self.metadata)

    def tag_counts(self) -> Counter:
        return Counter(tag for case in self.cases for tag in case.tags)

    def split_counts(self) -> Counter:
        return Counter(case.split for case in self.cases)

    @cached_property
    def fingerprint(self) -> str:
        # a case without bfcl_checker dumps as it did before the field existed, so its suites keep their fingerprints
        payload = json.dumps([c.model_dump(mode="json", exclude={"bfcl_checker"} if c.bfcl_checker is None else None)
                              for c in self.cases], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self):
        return iter(self.cases)

    def to_dataset(self):
        """The cases as a Hugging Face ``datasets.Dataset``, one row per case (``evals.hf_suite``: nested fields as
        JSON strings); ``load_suite("hf:FOLDER")`` reads it back after ``save_to_disk(FOLDER)``."""
        import datasets

        rows = [row_from_case(c) for c in self.cases]
        if any("bfcl_checker" in row for row in rows):  # a column every row has, "" where a case has none
            rows = [{**row, "bfcl_checker": row.get("bfcl_checker", "")} for row in rows]
        return datasets.Dataset.from_list(rows)


SuiteForm = Literal["cases", "tasks"]


@dataclass(frozen=True)
class SuiteSource:
    """Where suites of one kind come from, and how to load them. ``prefix`` (``"bfcl:"``) or ``claims`` (a test of
    the whole reference) says which references it reads; a ``fallback`` source also reads every reference that no
    other source of its form reads (a file). ``form``: what ``load`` returns, a ``Suite`` of cases (``load_suite``)
    or the tasks of the tool-calling loop (``toolsel eval loop``). ``reference``: what ``load`` reads in any
    working directory (``suite_reference``); ``names``: the suites it lists (``available_suites``); ``light``: it
    loads without the heavy libraries, so a command reads it before a model loads."""

    name: str
    load: Callable[[str], Any]
    prefix: str = ""
    claims: Callable[[str], bool] | None = None
    form: SuiteForm = "cases"
    fallback: bool = False
    reference: Callable[[str], str] = str
    names: Callable[[], list[str]] = list
    light: bool = False

    def reads(self, reference: str) -> bool:
        """Whether ``reference`` is this source's by its prefix or ``claims`` (what a fallback reads besides)."""
        if self.claims is not None:
            return self.claims(reference)
        return bool(self.prefix) and reference.startswith(self.prefix)


def _check_source(entry: Any) -> None:
    if not isinstance(entry, SuiteSource):
        raise TypeError(f"{entry!r} is not a SuiteSource; register evals.suite.SuiteSource(name, load, ...)")


SUITE_SOURCES: Registry[SuiteSource] = Registry(
    "suite source", group="tool_selection.suite_sources", check=_check_source, builtins=["evals.suite_sources"])
"""The suite sources by name: files, ``bfcl:``, ``hf:``, loop suites and BFCL multi-turn (``evals.suite_sources``),
then those registered with ``SUITE_SOURCES.register`` or in the ``tool_selection.suite_sources`` entry-point group."""


def suite_source(reference: str, form: SuiteForm = "cases") -> SuiteSource:
    """The source of ``form`` that reads ``reference``: the first registered one that claims it, else the fallback."""
    sources = [source for _, source in SUITE_SOURCES.items() if source.form == form]
    return next((s for s in sources if s.reads(reference)), None) or next(s for s in sources if s.fallback)


def suite_form(reference: str) -> SuiteForm:
    """``"tasks"`` when a source of loop tasks claims ``reference`` (a loop suite's name, a BFCL multi-turn
    category), else ``"cases"``: what a command that takes either (``toolsel optimize``) runs."""
    return "tasks" if any(s.form == "tasks" and s.reads(reference) for _, s in SUITE_SOURCES.items()) else "cases"


def available_suites() -> list[str]:
    """Built-in suites (``evals/suites/*.jsonl``) and the BFCL categories (``bfcl:CATEGORY``): every case source's
    names."""
    return [name for _, source in SUITE_SOURCES.items() if source.form == "cases" for name in source.names()]


def load_suite(name_or_path: str | Path) -> Suite:
    """A suite by built-in name (``finance``), BFCL category (``bfcl:multiple``, ``bfcl:multiple+irrelevance``),
    Hugging Face dataset (``hf:FOLDER`` or ``hf:NAME``, ``evals.hf_suite``) or path to a JSON Lines file
    (``evals.suite_file``), as its source (``SUITE_SOURCES``) loads it. Every line is validated, and every expected
    call checked against its tool; all problems found are raised at once, as one ``SuiteError`` naming each line."""
    text = str(name_or_path)
    return suite_source(text).load(text)


def suite_reference(name_or_path: str | Path) -> str:
    """What ``load_suite`` loads ``name_or_path`` from in any working directory: the name, with a file's path made
    absolute (a run records it, so that ``toolsel eval rescore`` finds a suite given as a file)."""
    text = str(name_or_path)
    return suite_source(text).reference(text)


def bounded_lines(handle, limit: int):
    """(line number, bytes) per line, reading at most ``limit`` bytes of each; a longer line comes as None."""
    number = 0
    while raw := handle.readline(limit + 1):
        number += 1
        if len(raw) > limit:
            while not raw.endswith(b"\n") and (raw := handle.readline(limit)):
                pass
            raw = None
        yield number, raw


def validated_case(data: dict[str, Any]) -> Case:
    """``data`` as a case; a ``ValueError`` names the case and each field that is wrong."""
    try:
        return Case.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"field '{'.'.join(str(p) for p in e['loc']) or '(case)'}': {e['msg']}"
            for e in error.errors(include_url=False)
        )
        raise ValueError(f"case {str(data.get('id', '?'))[:80]!r}: {problems}") from None


def read_json_lines(path: Path) -> list[Any]:
    """The JSON values of a JSON Lines file (BFCL's data), blank lines skipped, each read strictly
    (``loads_strict``); a line that is not UTF-8 JSON is a ``SuiteError``."""
    rows = []
    with path.open("rb") as handle:
        for number, raw in bounded_lines(handle, MAX_LINE_BYTES):
            try:
                if raw is None:
                    raise ValueError(f"longer than {MAX_LINE_BYTES:,} bytes")
                line = raw.decode("utf-8")
                if line.strip():
                    rows.append(loads_strict(line))
            except ValueError as error:  # UnicodeDecodeError and json.JSONDecodeError are ValueErrors
                raise SuiteError(f"{path}, line {number}: not valid UTF-8 JSON ({type(error).__name__}: "
                                 f"{error}).") from None
    return rows


def expected_call_problems(case: Case) -> list[str]:
    """What makes ``case`` unwinnable: a tool set that does not exist, or an expected call that no call its tool
    accepts would match (``call_refusals``). BFCL's imports are not checked: their answers follow BFCL's
    conventions, not the schemas. Nor are the values of a case that BFCL's checker scores (``bfcl_checker``): its
    tools take strings, literals of the case's language, and its expected values are what BFCL reads them as."""
    try:
        registry = registry_for(case)
    except ToolSelectionError as error:
        return [str(error)]
    problems = []
    for call in case.expected_calls:
        if call.tool_name not in registry:
            problems.append(f"expected tool {call.tool_name!r} is not among its tools")
            continue
        if case.bfcl_checker is not None:
            continue
        try:
            problems += call_refusals(registry.get(call.tool_name), call, strict=case.strict_arguments)
        except referencing.exceptions.Unresolvable as error:
            problems.append(f"{call.tool_name}'s parameters hold a $ref that cannot be resolved ({error})")
    return problems


def call_refusals(tool: type[BaseTool], call: ExpectedCall, *, strict: bool) -> list[str]:
    """How ``tool`` refuses every call that would match ``call``: an argument it does not take, an acceptable value
    it rejects (each is checked on its own; ``""``, "may be omitted", only counts where the tool takes it), an
    argument it requires that the call lists with no value it takes, or, with ``strict`` (unlisted arguments are
    wrong), one that the call does not list. Without ``strict`` an unlisted argument is any value, so an expected
    call may leave out what a step cannot know yet (``{}`` checks no argument)."""
    acceptable = call.acceptable()
    undeclared = tool.undeclared_arguments(dict.fromkeys(acceptable))
    problems = [f"{tool.NAME} takes no argument(s) {sorted(undeclared)}"] if undeclared else []
    witness: dict[str, Any] = {}  # a call the expected one matches: each argument's first value the tool takes
    for name, values in acceptable.items():
        if name in undeclared:
            continue
        for value in values:
            refused = [p for p in tool.check_arguments({name: value}) if _concerns(p.field, name)]
            if not refused:
                witness.setdefault(name, value)
            elif value != "":
                problems.append(f"{tool.NAME} refuses the expected value {_short(value)} of {name!r}: "
                                f"{refused[0].message}")
    for problem in tool.check_arguments(witness):
        if problem.field in acceptable and problem.field not in witness:
            problems.append(f"{tool.NAME} needs {problem.field!r}, which the expected call lists with no value "
                            f"the tool takes ({problem.message})")
        elif strict and problem.field not in acceptable and problem.field != "(arguments)":
            problems.append(f"{tool.NAME} needs {problem.field!r}, which the expected call leaves out, and "
                            f"strict_arguments refuses any argument it does not list ({problem.message})")
    return problems


def _concerns(field: str, *names: str) -> bool:
    return any(field == name or field.startswith((f"{name}.", f"{name}[")) for name in names)


def _short(value: Any) -> str:
    return clip(json.dumps(value, ensure_ascii=False), 60)
