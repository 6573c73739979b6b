"""Import Berkeley Function Calling Leaderboard (BFCL) data as suites.

The data ships in the PyPI package ``bfcl-eval`` (Apache-2.0; install with ``pip install --no-deps
bfcl-eval==2026.3.23``): questions under ``bfcl_eval/data/``, ground truth under ``possible_answer/``. Files are
read with ``json`` line by line (the ``datasets`` JSON loader alters some floats). The package is never
imported; its files are located through its distribution metadata.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from itertools import zip_longest
from pathlib import Path
from typing import Any

from evals.suite import Case, Suite, SuiteError, read_json_lines

__all__ = ["BFCL_CATEGORIES", "bfcl_data_dir", "bfcl_records", "load_bfcl", "load_bfcl_file"]

BFCL_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
BFCL_VERSION = "v4"
_INSTALL_HINT = "Install it with: pip install --no-deps bfcl-eval==2026.3.23"


def bfcl_data_dir() -> Path:
    """The ``bfcl_eval/data`` directory of the installed ``bfcl-eval`` distribution."""
    try:
        dist = metadata.distribution("bfcl-eval")
    except metadata.PackageNotFoundError:
        raise SuiteError(f"The BFCL data package 'bfcl-eval' is not installed. {_INSTALL_HINT}") from None
    path = Path(str(dist.locate_file("bfcl_eval/data")))
    if not path.is_dir():
        raise SuiteError(f"bfcl-eval is installed but has no data directory at {path}. {_INSTALL_HINT}")
    return path


@cache
def bfcl_records(category: str) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """BFCL's own records of one category as its files hold them: each case's function descriptions, and each
    case's ground truth (none for ``irrelevance``), by case id."""
    if category not in BFCL_CATEGORIES:
        raise SuiteError(f"Unknown BFCL category {category!r}. Supported: {', '.join(BFCL_CATEGORIES)}.")
    data = bfcl_data_dir()
    file_name = f"BFCL_{BFCL_VERSION}_{category}.json"
    functions = {row["id"]: row["function"] for row in read_json_lines(data / file_name)}
    answers = data / "possible_answer" / file_name
    truth = {row["id"]: row["ground_truth"] for row in read_json_lines(answers)} if category != "irrelevance" else {}
    return functions, truth


def split_for(case_id: str) -> str:
    """A fixed split from the id's hash: 40% train, 20% dev, 40% test."""
    bucket = int(hashlib.sha256(case_id.encode()).hexdigest(), 16) % 10
    return "train" if bucket < 4 else "dev" if bucket < 6 else "test"


def load_bfcl(categories: Iterable[str]) -> Suite:
    """One suite from BFCL categories (see ``BFCL_CATEGORIES``), or from paths to files of the same format.

    Several categories are interleaved case by case, so the first N cases of any split (``--limit N``) draw on
    every category about equally."""
    per_category: list[list[Case]] = []
    names = []
    for category in categories:
        path = Path(category)
        if path.suffix == ".json" and path.exists():
            answers = path.parent / "possible_answer" / path.name
            suite = load_bfcl_file(path, answers if answers.exists() else None)
        else:
            if category not in BFCL_CATEGORIES:
                raise SuiteError(f"Unknown BFCL category {category!r}. Supported: {', '.join(BFCL_CATEGORIES)}; "
                                 "or give the path of a BFCL question file.")
            data = bfcl_data_dir()
            file_name = f"BFCL_{BFCL_VERSION}_{category}.json"
            answers = None if category == "irrelevance" else data / "possible_answer" / file_name
            suite = load_bfcl_file(data / file_name, answers, category=category)
        names.append(suite.name)
        per_category.append(suite.cases)
    cases = [case for group in zip_longest(*per_category) for case in group if case is not None]
    return Suite("bfcl_" + "+".join(names), cases, source="bfcl-eval")


def load_bfcl_file(questions: Path, answers: Path | None = None, *, category: str | None = None) -> Suite:
    """A suite from one BFCL question file and its ``possible_answer`` file. Without answers, every case
    expects no call (as in the irrelevance category)."""
    category = category or questions.stem.split("_", 2)[-1]
    truth = {row["id"]: row["ground_truth"] for row in read_json_lines(answers)} if answers else {}
    cases = []
    for number, row in enumerate(read_json_lines(questions), start=1):
        try:
            cases.append(_case(row, truth.get(row["id"], []), category))
        except (KeyError, TypeError, ValueError) as error:
            raise SuiteError(f"{questions}, line {number}: cannot convert case {row.get('id', '?')!r}: {error}") from None
    missing = [c.id for c in cases if c.id not in truth][:5] if answers else []
    if missing:
        raise SuiteError(f"{answers}: no ground truth for {missing} (questions and answers files do not match).")
    return Suite(category, cases, source=str(questions))


def _case(row: dict[str, Any], ground_truth: list[dict[str, Any]], category: str) -> Case:
    turns = row["question"][0] if row["question"] and isinstance(row["question"][0], list) else row["question"]
    expected = []
    for entry in ground_truth:
        ((name, params),) = entry.items()
        expected.append({"tool_name": name, "arguments": {k: {"one_of": v} for k, v in params.items()}})
    tags = [category]
    if not expected:
        tags.append("no_tool")
    elif len(expected) > 1:
        tags.append("multi")
    else:
        tags.append("single")
    if len(row["function"]) > 1:
        tags.append("several_tools")
    return Case.model_validate({
        "id": row["id"],
        "messages": turns,
        "tools": row["function"],
        "expected_calls": expected,
        "tags": tags,
        "split": split_for(row["id"]),
        "strict_arguments": True,
    })
