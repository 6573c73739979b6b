"""Import Berkeley Function Calling Leaderboard (BFCL) data as suites.

The data ships in the PyPI package ``bfcl-eval`` (Apache-2.0; install with ``pip install --no-deps
bfcl-eval==2026.3.23``): questions under ``bfcl_eval/data/``, ground truth under ``possible_answer/``. Files are
read with ``json`` line by line (the ``datasets`` JSON loader alters some floats). Loading never imports the
package; its files are located through its distribution metadata.

The Java and JavaScript categories (``simple_java``, ``simple_javascript``) load as BFCL hands them to a
function-calling model (``bfcl_eval/utils.py``, ``_func_doc_language_specific_pre_processing``, applied by
``load_dataset_entry``): every argument a string holding a literal of the language, its declared type told in its
description, and a note on the language appended to the function's description (``language_tools``). Their cases
keep BFCL's own function docs for its checker (``Case.bfcl_checker``), which scores them (``evals.metrics``): our
matcher cannot read Java or JavaScript literals. BFCL appends a note to the Python categories' descriptions too
(" Note that the provided function is in Python 3 syntax."); those categories load without it, as they always have.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from itertools import zip_longest
from pathlib import Path
from typing import Any

from evals.bfcl_checker import language_of
from evals.suite import Case, Suite, SuiteError, read_json_lines

__all__ = ["BFCL_CATEGORIES", "NON_LIVE_AST_CATEGORIES", "bfcl_data_dir", "bfcl_records", "language_tools", "load_bfcl",
           "load_bfcl_file", "non_live_ast", "non_live_simple_ast"]

# BFCL's non-live categories, in its order (bfcl_eval/constants/category_mapping.py, NON_LIVE_CATEGORY)
BFCL_CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
                   "irrelevance")
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


_LANGUAGE_NOTES = {"java": " Note that the provided function is in Java 8 SDK syntax.",
                   "javascript": " Note that the provided function is in JavaScript syntax."}
_LANGUAGE_NAMES = {"java": "Java", "javascript": "JavaScript"}


def language_tools(functions: list[dict[str, Any]], language: str) -> list[dict[str, Any]]:
    """BFCL's function docs of a Java or JavaScript case as BFCL shows them to a function-calling model: a copy
    made by the rules of ``_func_doc_language_specific_pre_processing`` (``bfcl_eval/utils.py``). The function's
    description gets the language's note; each argument becomes a ``string`` whose description says it holds the
    declared type "in string representation" (``any``: "any type of ... object"); an array's item type is told in
    words and its ``items`` dropped (Java ``Array``/``ArrayList``, JavaScript ``array``), and so are a JavaScript
    ``dict``'s ``properties``, written out as JSON. Python docs are returned unchanged."""
    if language not in _LANGUAGE_NOTES:
        return functions
    name = _LANGUAGE_NAMES[language]
    arrays = ("ArrayList", "Array") if language == "java" else ("array",)
    shown = copy.deepcopy(functions)
    for function in shown:
        function["description"] = function.get("description", "") + _LANGUAGE_NOTES[language]
        for value in function.get("parameters", {}).get("properties", {}).values():
            kind = value.get("type")
            if kind == "any":
                note = f" This parameter can be of any type of {name} object in string representation."
            else:
                note = f" This is {name} {kind} type parameter in string representation."
            value["description"] = value.get("description", "") + note
            if kind in arrays:
                value["description"] += (f" The list elements are of type {value['items']['type']}; they are not "
                                         "in string representation.")
                del value["items"]
            if language == "javascript" and kind == "dict" and "properties" in value:
                value["description"] += (" The dictionary entries have the following schema; they are not in "
                                         f"string representation. {json.dumps(value['properties'])}")
                del value["properties"]
            value["type"] = "string"
    return shown


# The board's "Non-Live AST" summary: the unweighted mean of these groups, each the unweighted mean of its categories.
NON_LIVE_AST_CATEGORIES = (("simple_python", "simple_java", "simple_javascript"), ("multiple",), ("parallel",),
                           ("parallel_multiple",))


def non_live_simple_ast(accuracies: Mapping[str, float], *, missing_as_zero: bool = False) -> float:
    """BFCL's "Simple" column of the non-live AST summary: the unweighted mean of the ``simple_python``,
    ``simple_java`` and ``simple_javascript`` accuracies (400, 100 and 50 cases, each counting a third).
    ``bfcl_eval/eval_checker/eval_runner_helper.py``, ``generate_leaderboard_csv``: ``simple_ast_non_live =
    calculate_unweighted_accuracy([python_simple_ast_non_live, java_simple_ast_non_live,
    javascript_simple_ast_non_live])``. See ``non_live_ast`` for ``missing_as_zero``."""
    return _unweighted([accuracies.get(c) for c in NON_LIVE_AST_CATEGORIES[0]], missing_as_zero)


def non_live_ast(accuracies: Mapping[str, float], *, missing_as_zero: bool = False) -> float:
    """The board's "Non-Live AST" figure (BFCL v4, ``bfcl-eval==2026.3.23``) from per-category accuracies (fractions
    or percentages, by category name; other categories are ignored):

        mean(mean(simple_python, simple_java, simple_javascript), multiple, parallel, parallel_multiple)

    both means unweighted: the case counts do not enter. ``irrelevance`` is not part of it (the board shows it
    beside). Source: ``bfcl_eval/eval_checker/eval_runner_helper.py``, ``generate_leaderboard_csv``,
    ``summary_ast_non_live = calculate_unweighted_accuracy([simple_ast_non_live, multiple_ast_non_live,
    parallel_ast_non_live, parallel_multiple_ast_non_live])`` (``calculate_unweighted_accuracy`` sums the accuracies
    and divides by their number); its "Overall Acc" of the non-live table is the same mean.

    A category BFCL did not evaluate counts as 0 in its number and makes the figure shown "N/A"
    (``get_category_score``): here a missing category gives NaN, or, with ``missing_as_zero``, counts as 0 as in
    BFCL's underlying number (the non-live "Overall Acc", shown even then)."""
    simple = non_live_simple_ast(accuracies, missing_as_zero=missing_as_zero)
    return _unweighted([simple] + [accuracies.get(c) for (c,) in NON_LIVE_AST_CATEGORIES[1:]], missing_as_zero)


def _unweighted(values: list[float | None], missing_as_zero: bool) -> float:
    if any(v is None or math.isnan(v) for v in values) and not missing_as_zero:
        return math.nan
    return sum(0.0 if v is None or math.isnan(v) else float(v) for v in values) / len(values)


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
    language = language_of(category)
    literal = language != "python"  # arguments are Java or JavaScript literals: BFCL's checker scores them
    return Case.model_validate({
        "id": row["id"],
        "messages": turns,
        "tools": language_tools(row["function"], language),
        "expected_calls": expected,
        "tags": tags,
        "split": split_for(row["id"]),
        "strict_arguments": True,
        **({"bfcl_checker": {"language": language, "category": category, "functions": row["function"]}}
           if literal else {}),
    })
