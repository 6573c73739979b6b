"""Suites in the Hugging Face ``datasets`` format: ``hf:FOLDER`` or ``hf:NAME``.

A suite travels as a dataset with one row per case, in the columns ``Suite.to_dataset()`` writes: ``id``,
``request``, ``messages``, ``tool_set``, ``tools``, ``expected_calls``, ``tags``, ``split`` and
``strict_arguments`` (and ``bfcl_checker`` where a case has it: BFCL's Java and JavaScript categories), the nested
fields as JSON strings (Arrow would give nested objects every key any row has, so a call's arguments would gain keys
it never had) and an absent value as ``""``. ``hf:FOLDER`` reads a folder
written by ``save_to_disk`` (a ``Dataset`` or a ``DatasetDict``) or a folder of data files (JSON Lines, Parquet,
CSV); ``hf:NAME`` reads a dataset already in the local Hugging Face cache and never downloads. A ``DatasetDict``'s
split names (``train``, ``validation`` or ``dev``, ``test``) give the cases without a ``split`` column their split.
Every row is checked as a suite file's line is (cases with BFCL's semantics, ``strict_arguments``, as ``bfcl:``
imports are), and all problems are raised at once.

Before ``datasets`` reads a folder, its bytes are checked (``raw_file_problems``): Arrow's JSON reader recurses per
nesting level, so a JSON file nested past ``MAX_DEPTH`` (found by a linear scan), not UTF-8 or with an over-long
line is refused, as are compressed files and archives (their contents could not be checked), links to folders, and
a dataset card (``README.md``, ``.huggingface.yaml``, read with ``strict_files``) whose configs name data outside
the folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

from evals.suite import (
    MAX_LINE_BYTES,
    MAX_LISTED_PROBLEMS,
    Case,
    Suite,
    SuiteError,
    bounded_lines,
    expected_call_problems,
    row_from_case,
    validated_case,
)
from tool_selection.strict_files import MAX_CONFIG_BYTES, FileFormatError, parse_yaml, read_text, string_problem
from tool_selection.strict_json import MAX_DEPTH, json_depth, loads_strict, strings_in

__all__ = ["HF_PREFIX", "JSON_COLUMNS", "case_from_row", "load_hf_suite", "raw_file_problems", "row_from_case"]

HF_PREFIX = "hf:"
JSON_COLUMNS = ("messages", "tools", "expected_calls", "bfcl_checker")
OPTIONAL_COLUMNS = ("request", "messages", "tool_set", "tools", "bfcl_checker")
SPLIT_NAMES = {"train": "train", "validation": "dev", "dev": "dev", "test": "test"}
JSON_SUFFIXES = {".json", ".jsonl", ".ndjson"}  # Arrow's JSON reader recurses: a deep value crashes it
PACKED_SUFFIXES = {".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip", ".tar", ".tgz", ".7z"}
CARD_FILES = ("README.md", ".huggingface.yaml")  # where datasets reads a folder's configs (its data files among them)


def case_from_row(row: dict[str, Any], split: str | None = None) -> Case:
    """The case a dataset row holds; a ``ValueError`` says what is wrong with it."""
    data = {key: value for key, value in row.items() if value is not None}
    for column in JSON_COLUMNS:
        value = data.get(column)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise ValueError(f"column {column!r} holds a {type(value).__name__}; write nested fields as JSON strings "
                             "(Suite.to_dataset() does), since Arrow adds every row's keys to each nested object")
        try:
            data[column] = loads_strict(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"column {column!r} is not valid JSON ({error.msg} at column {error.colno})") from None
        except ValueError as error:
            raise ValueError(f"column {column!r}: {error}") from None
    problem = string_problem(data)
    if problem is not None:
        raise ValueError(problem)
    for column in OPTIONAL_COLUMNS:
        if data.get(column) == "":
            data.pop(column)
    if split is not None and not data.get("split"):
        data["split"] = split
    return validated_case(data)


def load_hf_suite(reference: str) -> Suite:
    """The suite ``hf:FOLDER`` or ``hf:NAME`` refers to (see the module docstring)."""
    target = reference.removeprefix(HF_PREFIX)
    if not target:
        raise SuiteError("hf: needs a dataset: hf:FOLDER (save_to_disk or data files) or hf:NAME (in the local "
                         "Hugging Face cache).")
    _refuse_unsafe_files(target)  # before datasets (and Arrow) see them
    parts = _read_dataset(target)
    cases, problems, seen = [], [], {}
    for part_name, rows in parts:
        split = SPLIT_NAMES.get(part_name) if part_name else None
        for index, row in enumerate(rows):
            where = f"{part_name}[{index}]" if part_name else f"row {index}"
            try:
                case = case_from_row(dict(row), split)
            except ValueError as error:
                problems.append(f"{where}: {error}")
                continue
            if case.id in seen:
                problems.append(f"{where}: duplicate id {case.id!r} (first at {seen[case.id]})")
                continue
            seen[case.id] = where
            if not case.strict_arguments:  # BFCL's answers follow its conventions, not the schemas (as bfcl: loads)
                problems += [f"{where}: case {case.id!r}: {problem}" for problem in expected_call_problems(case)]
            cases.append(case)
    if not cases and not problems:
        problems.append("no cases found")
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems[:MAX_LISTED_PROBLEMS])
        more = f"\n  ... and {len(problems) - MAX_LISTED_PROBLEMS} more" if len(problems) > MAX_LISTED_PROBLEMS else ""
        raise SuiteError(f"Dataset {target} has {len(problems)} problem(s) (format: evals/hf_suite.py):\n{listed}{more}")
    return Suite(f"hf-{Path(target).name or target}", cases, source=reference)


def _read_dataset(target: str) -> list[tuple[str | None, Any]]:
    """(split name or None, rows) per part of the dataset ``target`` names."""
    import datasets

    path = Path(target)
    try:
        if path.is_dir() and any((path / name).exists() for name in ("dataset_dict.json", "state.json")):
            loaded = datasets.load_from_disk(str(path))
        elif path.exists():
            loaded = datasets.load_dataset(str(path))
        else:
            loaded = _cached_hub_dataset(target)
    except SuiteError:
        raise
    except Exception as error:  # datasets raises many types for an unreadable folder
        raise SuiteError(f"Dataset {target} could not be read ({type(error).__name__}: {error}).") from None
    if isinstance(loaded, datasets.DatasetDict):
        return [(name, part) for name, part in loaded.items()]
    return [(None, loaded)]


def _cached_hub_dataset(name: str):
    """A hub dataset from the local cache only: this toolkit never downloads data at run time."""
    import datasets
    import datasets.config

    offline = datasets.config.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = True
    try:
        return datasets.load_dataset(name)
    except Exception as error:
        raise SuiteError(f"{name!r} is neither a folder nor a dataset in the local Hugging Face cache "
                         f"({type(error).__name__}); data is never downloaded at run time: give a folder written by "
                         "save_to_disk or holding the data files, or fetch the dataset into the cache first.") from None
    finally:
        datasets.config.HF_HUB_OFFLINE = offline


def _refuse_unsafe_files(target: str) -> None:
    path = Path(target)
    problems = raw_file_problems(path) if path.exists() else []
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems[:MAX_LISTED_PROBLEMS])
        raise SuiteError(f"Dataset {target} holds {len(problems)} file(s) it does not read (checked before any "
                         f"parser sees them):\n{listed}")


def raw_file_problems(path: Path) -> list[str]:
    """What makes the files under ``path`` unsafe to hand to ``datasets``, found by reading their bytes only: a
    JSON file that is not UTF-8, nests deeper than ``MAX_DEPTH`` (Arrow's JSON reader, which ``datasets`` uses,
    recurses per level and a deep value crashes the process) or holds a line over ``MAX_LINE_BYTES``; a compressed
    file or archive, whose contents could not be checked so; a dataset card whose configs send ``datasets`` to
    data outside the folder, unchecked (or to a URL)."""
    entries = sorted(path.rglob("*")) if path.is_dir() else [path]
    problems = _card_problems(path) if path.is_dir() else []
    problems += [f"{entry}: a link to a folder, whose files are not checked; copy them into the folder"
                 for entry in entries if entry.is_symlink() and entry.is_dir()]
    for file in (entry for entry in entries if entry.is_file()):
        suffixes = {suffix.lower() for suffix in file.suffixes}
        if suffixes & PACKED_SUFFIXES:
            problems.append(f"{file}: a compressed file or archive; decompress it into the folder (its contents are "
                            "checked before datasets reads them)")
        elif suffixes & JSON_SUFFIXES:
            problem = _json_file_problem(file)
            if problem:
                problems.append(f"{file}, {problem}")
    return problems


def _json_file_problem(file: Path) -> str | None:
    """Why the JSON (or JSON Lines) ``file`` is unsafe, or None: one linear pass over its lines, carrying the nesting
    from line to line (a value may span lines), before any parser reads it."""
    depth = 0
    with file.open("rb") as handle:
        for number, raw in bounded_lines(handle, MAX_LINE_BYTES):
            if raw is None:
                return (f"line {number}: longer than {MAX_LINE_BYTES:,} bytes; write the cases as JSON Lines, one "
                        "per line (Suite.to_dataset().to_json(PATH) does)")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                return f"line {number}: not UTF-8 ({error.reason} at byte {error.start}); save it as UTF-8"
            deepest, depth = json_depth(line, depth)
            if deepest > MAX_DEPTH:
                return (f"line {number}: nested deeper than {MAX_DEPTH} levels; a case nests a few (nested fields "
                        "are JSON strings, as Suite.to_dataset() writes them)")
    return None


def _card_problems(folder: Path) -> list[str]:
    """Problems of the dataset card (``README.md``'s front matter, ``.huggingface.yaml``) ``datasets`` reads from
    ``folder``: YAML it would not read safely, or configs naming data outside the folder."""
    problems = []
    for name in CARD_FILES:
        card = folder / name
        if not card.is_file():
            continue
        try:
            metadata = _card_metadata(card)
        except FileFormatError as error:
            problems.append(str(error))
            continue
        configs = metadata.get("configs") if isinstance(metadata, dict) else None
        outside = [text for _, text in strings_in(configs) if _leaves_folder(text)]
        if outside:
            problems.append(f"{card}: its configs name data outside the folder ({', '.join(map(repr, outside[:3]))}); "
                            "put the data files in the folder and name them relative to it")
    return problems


def _card_metadata(card: Path) -> Any:
    fix = "Write the card's metadata as plain YAML."
    text = read_text(card, what="dataset card", max_bytes=MAX_CONFIG_BYTES)
    if card.name != "README.md":
        return parse_yaml(text, card, fix=fix)
    from huggingface_hub.repocard import REGEX_YAML_BLOCK  # how datasets finds it (through huggingface_hub)

    front = REGEX_YAML_BLOCK.search(text)
    if front is None:
        return None
    return parse_yaml(front.group(2), card, fix=fix, first_line=front.group(1).count("\n") + 1)


def _leaves_folder(text: str) -> bool:
    """Whether the data file pattern ``text`` names something outside its folder: an absolute path, a home, a
    parent, a URL or a hub dataset."""
    return (text.startswith(("/", "\\", "~", "hf:")) or "://" in text or re.match(r"[A-Za-z]:", text) is not None
            or ".." in PurePosixPath(text.replace("\\", "/")).parts)
