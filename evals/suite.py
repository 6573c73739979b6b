"""Evaluation suites: JSON Lines files of tool-selection cases (format: ``evals/suites/FORMAT.md``)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tool_selection.errors import ToolSelectionError
from tool_selection.interop import from_bfcl, from_openai
from tool_selection.registry import ToolRegistry
from tool_selection.toolset import load_tool_set

__all__ = ["Case", "ExpectedCall", "Suite", "SuiteError", "available_suites", "load_suite"]

SUITES_DIR = Path(__file__).parent / "suites"
Split = Literal["train", "dev", "test"]


class SuiteError(ToolSelectionError, ValueError):
    """A suite file is malformed; the message names the file, line and field."""


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant", "tool"]
    content: str


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


class Case(BaseModel):
    """One evaluation case."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    request: str | None = None
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
        payload = json.dumps([c.model_dump(mode="json") for c in self.cases], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self):
        return iter(self.cases)

    def to_dataset(self):
        """The cases as a Hugging Face ``datasets.Dataset`` (nested fields JSON-encoded)."""
        import datasets

        rows = [_flat_row(c) for c in self.cases]
        return datasets.Dataset.from_list(rows)


def _flat_row(case: Case) -> dict[str, Any]:
    return {
        "id": case.id,
        "request": case.prompt,
        "tool_set": case.tool_set or "",
        "tools": json.dumps(case.tools) if case.tools else "",
        "expected_calls": json.dumps([c.model_dump() for c in case.expected_calls]),
        "tags": case.tags,
        "split": case.split,
    }


def available_suites() -> list[str]:
    """Built-in suites (``evals/suites/*.jsonl``) and the BFCL categories (``bfcl:CATEGORY``)."""
    from evals.bfcl import BFCL_CATEGORIES

    return sorted(p.stem for p in SUITES_DIR.glob("*.jsonl")) + [f"bfcl:{c}" for c in BFCL_CATEGORIES]


def load_suite(name_or_path: str | Path) -> Suite:
    """A suite by built-in name (``finance``), BFCL category (``bfcl:multiple``, ``bfcl:multiple+irrelevance``)
    or path to a JSON Lines file. Every line is validated; the first bad line raises ``SuiteError``."""
    text = str(name_or_path)
    if text.startswith("bfcl:"):
        from evals.bfcl import load_bfcl

        return load_bfcl(text.removeprefix("bfcl:").split("+"))
    path = Path(text)
    if not path.suffix and not path.exists():
        path = SUITES_DIR / f"{text}.jsonl"
        if not path.exists():
            raise SuiteError(f"Unknown suite {text!r}. Available: {', '.join(available_suites())}; "
                             "or give the path of a .jsonl suite file.")
    if not path.exists():
        raise SuiteError(f"Suite file {path} does not exist.")
    if not path.is_file():
        raise SuiteError(f"Suite {path} is a directory, not a JSON Lines file.")
    suite = Suite(path.stem, _read_cases(path), source=str(path))
    check_calls(suite)
    return suite


MAX_LINE_DEPTH = 64  # a case nests a few levels; deeper is not a case (and would exhaust the JSON parser)


def _read_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, int] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise SuiteError(f"{path}, line {number}: not UTF-8 ({error.reason} at byte {error.start}); suite "
                                 "files are UTF-8 JSON Lines.") from None
            if not line.strip():
                continue
            problem = too_large_json(line)
            if problem:
                raise SuiteError(f"{path}, line {number}: {problem}.")
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                raise SuiteError(f"{path}, line {number}: not valid JSON ({error.msg} at column {error.colno}).") from None
            if not isinstance(data, dict):
                raise SuiteError(f"{path}, line {number}: expected a JSON object per line, got {type(data).__name__}.")
            try:
                case = Case.model_validate(data)
            except ValidationError as error:
                problems = "; ".join(
                    f"field '{'.'.join(str(p) for p in e['loc']) or '(case)'}': {e['msg']}"
                    for e in error.errors(include_url=False)
                )
                raise SuiteError(f"{path}, line {number}: case {data.get('id', '?')!r}: {problems}") from None
            if case.id in seen:
                raise SuiteError(f"{path}, line {number}: duplicate id {case.id!r} (first on line {seen[case.id]}).")
            seen[case.id] = number
            cases.append(case)
    if not cases:
        raise SuiteError(f"{path}: no cases found.")
    return cases


def read_json_lines(path: Path) -> list[Any]:
    """The JSON values of a JSON Lines file, blank lines skipped; a line that is not JSON is a ``SuiteError``."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise SuiteError(f"{path}, line {number}: not valid JSON ({error.msg}).") from None
    return rows


def too_large_json(line: str) -> str | None:
    from tool_selection.parsing import nesting_depth

    return f"nested deeper than {MAX_LINE_DEPTH} levels" if nesting_depth(line) > MAX_LINE_DEPTH else None


def check_calls(suite: Suite) -> None:
    """Refuse a suite whose expected calls name a tool its case does not have, or an argument the tool does not
    take (such a case could only score 0), or a tool set that does not exist; each problem with its case id."""
    problems = []
    for case in suite.cases:
        try:
            registry = registry_for(case)
        except ToolSelectionError as error:
            problems.append(f"case {case.id!r}: {error}")
            continue
        for call in case.expected_calls:
            if call.tool_name not in registry:
                problems.append(f"case {case.id!r}: expected tool {call.tool_name!r} is not among its tools")
                continue
            properties = registry.get(call.tool_name).input_schema().get("properties")
            unknown = sorted(set(call.arguments) - set(properties)) if properties else []
            if unknown and registry.get(call.tool_name).input_schema().get("additionalProperties") is False:
                problems.append(f"case {case.id!r}: {call.tool_name} takes no argument(s) {unknown}")
        if len(problems) >= 20:
            break
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems[:20])
        raise SuiteError(f"Suite {suite.name!r} has expected calls its tools cannot satisfy:\n{listing}")
