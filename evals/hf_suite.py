"""Suites in the Hugging Face ``datasets`` format: ``hf:FOLDER`` or ``hf:NAME``.

A suite travels as a dataset with one row per case, in the columns ``Suite.to_dataset()`` writes: ``id``,
``request``, ``messages``, ``tool_set``, ``tools``, ``expected_calls``, ``tags``, ``split`` and
``strict_arguments``, the nested fields as JSON strings (Arrow would give nested objects every key any row has,
so a call's arguments would gain keys it never had) and an absent value as ``""``. ``hf:FOLDER`` reads a folder
written by ``save_to_disk`` (a ``Dataset`` or a ``DatasetDict``) or a folder of data files (JSON Lines, Parquet,
CSV); ``hf:NAME`` reads a dataset already in the local Hugging Face cache and never downloads. A ``DatasetDict``'s
split names (``train``, ``validation`` or ``dev``, ``test``) give the cases without a ``split`` column their split.
Every row is checked as a suite file's line is (cases with BFCL's semantics, ``strict_arguments``, as ``bfcl:``
imports are), and all problems are raised at once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.suite import MAX_LISTED_PROBLEMS, Case, Suite, SuiteError, expected_call_problems, validated_case

__all__ = ["HF_PREFIX", "JSON_COLUMNS", "case_from_row", "load_hf_suite", "row_from_case"]

HF_PREFIX = "hf:"
JSON_COLUMNS = ("messages", "tools", "expected_calls")
OPTIONAL_COLUMNS = ("request", "messages", "tool_set", "tools")
SPLIT_NAMES = {"train": "train", "validation": "dev", "dev": "dev", "test": "test"}


def row_from_case(case: Case) -> dict[str, Any]:
    """One case as a dataset row (``Suite.to_dataset``): nested fields as JSON strings, absent values as ``""``."""
    data = case.model_dump(mode="json", exclude_none=True)
    row: dict[str, Any] = {"id": case.id, "request": case.request or ""}
    for column in ("messages", "tools", "expected_calls"):
        row[column] = json.dumps(data[column]) if column in data else ""
    row.update({"tool_set": case.tool_set or "", "tags": list(case.tags), "split": case.split,
                "strict_arguments": case.strict_arguments})
    return row


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
            data[column] = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"column {column!r} is not valid JSON ({error.msg} at column {error.colno})") from None
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
