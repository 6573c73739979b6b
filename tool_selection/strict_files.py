"""The one reader of the files the toolkit loads: selector specs, run configs, sweeps, trajectories, relevance
models, conversation and collaboration configs (suite files and ``hf:`` folders use its pieces line by line).

    data = read_yaml("spec.yaml", what="selector spec", fix="...")   # or read_json(path, what=..., fix=...)

A file is refused before any parser sees more of it than it must: a missing file or a folder, more than
``max_bytes``, bytes that are not UTF-8 (with the line). JSON then goes through ``strict_json.loads_strict``
(nesting measured by a linear scan before parsing; ``NaN``, numbers beyond a double, duplicate keys and lone
surrogates refused). YAML goes through ``StrictLoader``, PyYAML's safe loader made stricter as it composes: a tag
(``!!python/object``, ``!!binary``, ``!custom``), an anchor or alias, a merge key, a duplicate key and nesting past
``max_depth`` are refused with their line before the composer (the recursive part) goes deeper; a key must be a
string, and a date is read as the text it is. Every string is then checked for control characters (a NUL, an
escape) other than tab and newline. Every refusal is a ``FileFormatError`` naming the file, the line where one is
known, the problem and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tool_selection.errors import ToolSelectionError
from tool_selection.strict_json import MAX_DEPTH, control_character_at, loads_strict, lone_surrogate_at

__all__ = ["MAX_CONFIG_BYTES", "MAX_DATA_BYTES", "FileFormatError", "StrictLoader", "parse_yaml", "read_json",
           "read_text", "read_yaml", "string_problem"]

MAX_CONFIG_BYTES = 1 << 20  # a spec, run config, sweep or conversation config is a few kilobytes
MAX_DATA_BYTES = 16 << 20  # trajectories and other data the toolkit wrote


class FileFormatError(ToolSelectionError, ValueError):
    """A file the toolkit loads is not one it reads: the message names the file, the line where one is known, the
    problem and the fix (``at`` builds it so; a suite's ``SuiteError`` lists every line's problems at once)."""

    path: str | None = None
    line: int | None = None

    @classmethod
    def at(cls, path: str | Path, problem: str, fix: str, *, line: int | None = None) -> FileFormatError:
        """The error for ``problem`` in ``path`` (at ``line``), with ``fix`` after it."""
        where = f"{path}, line {line}" if line else str(path)
        error = cls(f"{where}: {problem}. {fix}")
        error.path, error.line = str(path), line
        return error


def read_text(path: str | Path, *, what: str, max_bytes: int = MAX_CONFIG_BYTES) -> str:
    """The text of ``path``, a UTF-8 file of at most ``max_bytes``; ``what`` names what it should hold."""
    path = Path(path)
    if not path.is_file():
        problem = "is a directory" if path.is_dir() else "does not exist"
        raise FileFormatError.at(path, problem, f"Give the path of a {what} file.")
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise FileFormatError.at(path, f"cannot be read ({error.strerror})", "Check its permissions.") from None
    if len(data) > max_bytes:
        raise FileFormatError.at(path, f"is larger than {max_bytes:,} bytes, more than any {what} holds",
                              f"Check that it is a {what} file.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FileFormatError.at(path, f"is not UTF-8 ({error.reason} at byte {error.start})",
                              f"Save the {what} as UTF-8.", line=data.count(b"\n", 0, error.start) + 1) from None


def read_json(path: str | Path, *, what: str, fix: str, max_bytes: int = MAX_DATA_BYTES,
              max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of the file ``path`` (see the module docstring); ``fix`` says how to write a good one."""
    text = read_text(path, what=what, max_bytes=max_bytes)
    try:
        value = loads_strict(text, max_depth=max_depth)
    except json.JSONDecodeError as error:
        raise FileFormatError.at(path, f"is not valid JSON ({error.msg} at column {error.colno})", fix,
                              line=error.lineno) from None
    except ValueError as error:  # NaN, a number beyond a double, a duplicate key, a lone surrogate, too deep
        raise FileFormatError.at(path, f"is not a {what}: {error}", fix) from None
    _check_strings(path, value, fix)
    return value


def read_yaml(path: str | Path, *, what: str, fix: str, max_bytes: int = MAX_CONFIG_BYTES,
              max_depth: int = MAX_DEPTH) -> Any:
    """The YAML (or JSON, which is YAML) value of the file ``path`` (see the module docstring)."""
    return parse_yaml(read_text(path, what=what, max_bytes=max_bytes), path, fix=fix, max_depth=max_depth)


def parse_yaml(text: str, path: str | Path, *, fix: str, max_depth: int = MAX_DEPTH, first_line: int = 1) -> Any:
    """The YAML value of ``text``, read from ``path`` where it starts at line ``first_line`` (a dataset card's
    front matter starts on its second), with ``StrictLoader``; a refusal is a ``FileFormatError``."""
    try:
        value = _load_yaml(text, max_depth)
    except _Refused as error:
        raise FileFormatError.at(path, error.problem, error.fix, line=error.problem_mark.line + first_line) from None
    except yaml.reader.ReaderError as error:  # a character YAML does not allow anywhere
        raise FileFormatError.at(path, f"holds the character U+{error.character:04X}, which YAML does not allow",
                                 "Remove it.", line=text.count("\n", 0, error.position) + first_line) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise FileFormatError.at(path, f"is not valid YAML ({error.problem or error.context})", fix,
                                 line=mark.line + first_line if mark else None) from None
    except yaml.YAMLError as error:
        raise FileFormatError.at(path, f"is not valid YAML ({error})", fix) from None
    _check_strings(path, value, fix)
    return value


def _load_yaml(text: str, max_depth: int) -> Any:
    loader = StrictLoader(text, max_depth=max_depth)  # its reader checks the characters at once
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def string_problem(value: Any) -> str | None:
    """What is wrong with a string in ``value`` (a control character, a lone surrogate), with its path, or None."""
    control = control_character_at(value)
    if control is not None:
        path, code_point = control
        return (f"{path} holds the control character {code_point}; remove it (text the toolkit reads carries no "
                "control characters but tab and newline)")
    where = lone_surrogate_at(value)
    if where is not None:
        return (f"{where} holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not text; write the "
                "character itself or its surrogate pair")
    return None


def _check_strings(path: str | Path, value: Any, fix: str) -> None:
    problem = string_problem(value)
    if problem is not None:
        raise FileFormatError.at(path, problem, fix)


class _Refused(yaml.MarkedYAMLError):
    """What ``StrictLoader`` refuses, where (a ``yaml.Mark``), and how to fix it."""

    def __init__(self, mark: Any, problem: str, fix: str):
        super().__init__(problem=problem, problem_mark=mark)
        self.fix = fix


_MERGE = "tag:yaml.org,2002:merge"


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing what a file of plain data never needs: nesting past ``max_depth`` (as the
    scanner reads, and again before the recursive composer goes deeper), tags, anchors and aliases (a few lines of
    them expand to billions of values), merge keys, keys that are not strings, and duplicate keys."""

    def __init__(self, stream: str, *, max_depth: int = MAX_DEPTH):
        self.max_depth, self.depth = max_depth, 0
        super().__init__(stream)

    def _too_deep(self, mark: Any) -> _Refused:
        return _Refused(mark, f"is nested deeper than {self.max_depth} levels",
                        "Flatten it: a file the toolkit reads nests a few levels.")

    # The scanner's own nesting (flow brackets, block indentation) is checked as it reads, so that it never works
    # through a deep value (it keeps state per open level: a long run of '[' costs it quadratic time).
    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        if self.flow_level >= self.max_depth:
            raise self._too_deep(self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def add_indent(self, column: int) -> bool:
        if len(self.indents) >= self.max_depth:
            raise self._too_deep(self.get_mark())
        return super().add_indent(column)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise _Refused(event.start_mark, "holds a YAML anchor or alias (&name, *name)",
                           "Write the value out in full.")
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise _Refused(event.start_mark, f"holds the YAML tag {tag!r}, which a data file does not need (a tag "
                                             "such as !!python/object asks the loader to build an object)",
                           "Remove the tag and write the plain value.")
        collection = int(isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)))
        self.depth += collection
        try:
            if self.depth > self.max_depth:
                raise self._too_deep(event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= collection

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[str, int] = {}
        for key_node, _ in getattr(node, "value", ()):
            mark = key_node.start_mark
            if key_node.tag == _MERGE:
                raise _Refused(mark, "holds a YAML merge key (<<)", "Write the merged keys out in full.")
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):  # a list or mapping, or a scalar YAML reads as another type (on, 1, null)
                raise _Refused(mark, f"holds a key that YAML reads as a {type(key).__name__}, not a string",
                               "Quote the key, or use a plain text one.")
            if key in first_line:
                raise _Refused(mark, f"holds the key {key!r} twice in one mapping (first on line {first_line[key]}; "
                                     "YAML would keep only the last)", "Keep one of them.")
            first_line[key] = mark.line + 1
        return super().construct_mapping(node, deep=deep)


# a date stays the text it was written as: the toolkit's files hold JSON's types only
StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)
