"""Evaluation suites: JSON Lines files of tool-selection cases (format: ``evals/suites/FORMAT.md``)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import referencing.exceptions
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tool_selection.errors import ToolSelectionError, close_matches
from tool_selection.interop import from_bfcl, from_openai
from tool_selection.parsing import clip
from tool_selection.registry import ToolRegistry
from tool_selection.strict_files import FileFormatError, string_problem
from tool_selection.strict_json import MAX_DEPTH, loads_strict
from tool_selection.tool import BaseTool
from tool_selection.toolset import load_tool_set

__all__ = ["BfclChecker", "Case", "ExpectedCall", "Suite", "SuiteError", "available_suites", "load_suite",
           "suite_reference"]

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

        from evals.hf_suite import row_from_case

        rows = [row_from_case(c) for c in self.cases]
        if any("bfcl_checker" in row for row in rows):  # a column every row has, "" where a case has none
            rows = [{**row, "bfcl_checker": row.get("bfcl_checker", "")} for row in rows]
        return datasets.Dataset.from_list(rows)


def available_suites() -> list[str]:
    """Built-in suites (``evals/suites/*.jsonl``) and the BFCL categories (``bfcl:CATEGORY``)."""
    from evals.bfcl import BFCL_CATEGORIES

    return sorted(p.stem for p in SUITES_DIR.glob("*.jsonl")) + [f"bfcl:{c}" for c in BFCL_CATEGORIES]


def load_suite(name_or_path: str | Path) -> Suite:
    """A suite by built-in name (``finance``), BFCL category (``bfcl:multiple``, ``bfcl:multiple+irrelevance``),
    Hugging Face dataset (``hf:FOLDER`` or ``hf:NAME``, ``evals.hf_suite``) or path to a JSON Lines file. Every line
    is validated, and every expected call checked against its tool; all problems found are raised at once, as one
    ``SuiteError`` naming each line."""
    text = str(name_or_path)
    if text.startswith("bfcl:"):
        from evals.bfcl import load_bfcl

        return load_bfcl(text.removeprefix("bfcl:").split("+"))
    if text.startswith("hf:"):
        from evals.hf_suite import load_hf_suite

        return load_hf_suite(text)
    path = Path(text)
    if not path.suffix and not path.exists():
        path = SUITES_DIR / f"{text}.jsonl"
        if not path.exists():
            known = available_suites()
            similar = close_matches(text, known)
            hint = f" (did you mean {', '.join(map(repr, similar))}?)" if similar else ""
            raise SuiteError(f"Unknown suite {text!r}{hint}. Available: {', '.join(known)}; "
                             "or give the path of a .jsonl suite file.")
    if not path.exists():
        raise SuiteError(f"Suite file {path} does not exist.")
    if not path.is_file():
        raise SuiteError(f"Suite {path} is a directory, not a JSON Lines file.")
    by_line, problems = _read_cases(path)
    for number, case in by_line.items():
        problems += [f"line {number}: case {case.id!r}: {problem}" for problem in expected_call_problems(case)]
    if not by_line and not problems:
        problems.append("no cases found")
    if problems:
        problems.sort(key=_line_number)
        listed = "\n".join(f"  - {path}, {p}" if p.startswith("line ") else f"  - {path}: {p}"
                           for p in problems[:MAX_LISTED_PROBLEMS])
        more = f"\n  ... and {len(problems) - MAX_LISTED_PROBLEMS} more" if len(problems) > MAX_LISTED_PROBLEMS else ""
        raise SuiteError(f"Suite file {path} has {len(problems)} problem(s) (format: evals/suites/FORMAT.md):\n"
                         f"{listed}{more}")
    return Suite(path.stem, list(by_line.values()), source=str(path))


def suite_reference(name_or_path: str | Path) -> str:
    """What ``load_suite`` loads ``name_or_path`` from in any working directory: the name, with a file's path made
    absolute (a run records it, so that ``toolsel eval rescore`` finds a suite given as a file)."""
    text = str(name_or_path)
    if text.startswith("bfcl:"):
        parts = text.removeprefix("bfcl:").split("+")
        return "bfcl:" + "+".join(str(Path(p).resolve()) if Path(p).suffix == ".json" and Path(p).exists() else p
                                  for p in parts)
    if text.startswith("hf:"):
        folder = Path(text.removeprefix("hf:"))
        return f"hf:{folder.resolve()}" if folder.exists() else text
    path = Path(text).resolve()
    if not Path(text).exists():
        return text
    return path.stem if path == (SUITES_DIR / f"{path.stem}.jsonl").resolve() else str(path)  # a built-in: its name


def _line_number(problem: str) -> int:
    return int(problem.split(":", 1)[0].removeprefix("line ")) if problem.startswith("line ") else 0


def _read_cases(path: Path) -> tuple[dict[int, Case], list[str]]:
    """The valid cases of a suite file by line number, and a problem for each line that is not one."""
    cases: dict[int, Case] = {}
    problems: list[str] = []
    first_line: dict[str, int] = {}
    with path.open("rb") as handle:
        for number, raw in bounded_lines(handle, MAX_LINE_BYTES):
            try:
                case = _parse_case(raw)
            except ValueError as error:
                problems.append(f"line {number}: {error}")
                continue
            if case is None:
                continue
            if case.id in first_line:
                problems.append(f"line {number}: duplicate id {case.id!r} (first on line {first_line[case.id]})")
                continue
            first_line[case.id] = number
            cases[number] = case
    return cases, problems


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


def _parse_case(raw: bytes | None) -> Case | None:
    """The case on one line (None for a blank line); a ``ValueError`` says what is wrong with it."""
    if raw is None:
        raise ValueError(f"longer than {MAX_LINE_BYTES:,} bytes, the limit for one case (a request may hold "
                         f"{MAX_REQUEST_CHARS:,} characters)")
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 ({error.reason} at byte {error.start}); suite files are UTF-8 JSON "
                         "Lines") from None
    if not line.strip():
        return None
    try:
        data = loads_strict(line, max_depth=MAX_DEPTH)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object per line, got {type(data).__name__}")
    problem = string_problem(data)
    if problem is not None:
        raise ValueError(problem)
    no_split = "" if "split" in data else "field 'split': Field required (train, dev or test)"  # Python's default: test
    try:
        case = validated_case(data)
    except ValueError as error:
        raise ValueError(f"{error}; {no_split}" if no_split else str(error)) from None
    if no_split:
        raise ValueError(f"case {case.id[:80]!r}: {no_split}")
    return case


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
