"""Suites in JSON Lines files (format: ``evals/suites/FORMAT.md``): a built-in name (``finance``, from
``evals/suites/``) or a file's path; ``load_suite`` reads them through the ``file`` suite source."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from evals.suite import (
    MAX_LINE_BYTES,
    MAX_LISTED_PROBLEMS,
    MAX_REQUEST_CHARS,
    SUITES_DIR,
    Case,
    Suite,
    SuiteError,
    available_suites,
    bounded_lines,
    expected_call_problems,
    validated_case,
)
from tool_selection.errors import close_matches
from tool_selection.strict_files import string_problem
from tool_selection.strict_json import MAX_DEPTH, loads_strict

__all__ = ["built_in_suites", "file_reference", "load_suite_file", "suite_lines", "write_suite_file"]


def built_in_suites() -> list[str]:
    """The names of the suites in ``evals/suites/``."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.jsonl"))


def load_suite_file(text: str) -> Suite:
    """The suite of a built-in name (``finance``) or a JSON Lines file's path. Every line is validated, and every
    expected call checked against its tool; all problems found are raised at once, as one ``SuiteError`` naming
    each line."""
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


def file_reference(text: str) -> str:
    """A built-in suite's name, or a file's absolute path (``suite_reference``)."""
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


def suite_lines(cases: Iterable[dict]) -> str:
    """``cases`` as a suite file's text: one JSON object per line, other scripts' characters as written."""
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)


def write_suite_file(path: Path, text: str, *, check: bool, script: str) -> int:
    """A build script's last step: write ``text`` to ``path`` (0), or with ``check`` compare only, and where ``path``
    does not hold ``text`` say that ``script`` rewrites it (1)."""
    if check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"{path.name} is out of date: run python {script}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.name}: {text.count(chr(10))} cases")
    return 0
