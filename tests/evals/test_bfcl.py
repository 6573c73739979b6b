"""BFCL import: categories from the bfcl-eval package and files of the same format."""

import json

import pytest

from evals.bfcl import BFCL_CATEGORIES, load_bfcl, load_bfcl_file, split_for
from evals.metrics import score_case
from evals.suite import SuiteError, load_suite, registry_for
from tool_selection.decision import MultiToolDecision, ToolCall

CASES = {"simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200, "parallel": 200,
         "parallel_multiple": 200, "irrelevance": 240}  # bfcl-eval==2026.3.23


@pytest.mark.parametrize("category", BFCL_CATEGORIES)
def test_every_supported_category_imports(category):
    suite = load_bfcl([category])
    assert len(suite) == CASES[category]
    case = suite.cases[0]
    assert case.strict_arguments and case.tools
    registry = registry_for(case)
    assert len(registry) == len(case.tools)
    if category == "irrelevance":
        assert all(not c.expected_calls and "no_tool" in c.tags for c in suite)
    else:
        names = set(registry.names())
        assert all(call.tool_name in names for call in case.expected_calls)


def test_ground_truth_scores_as_correct_and_splits_are_fixed():
    suite = load_suite("bfcl:multiple+irrelevance")
    assert suite.name == "bfcl_multiple+irrelevance"
    assert {c.split for c in suite} == {"train", "dev", "test"}
    assert split_for("multiple_0") == split_for("multiple_0")
    for case in suite.cases[:50]:
        calls = [ToolCall(tool_name=c.tool_name, arguments={k: next(v for v in vals if v != "")
                                                            for k, vals in c.acceptable().items() if vals != [""]})
                 for c in case.expected_calls]
        assert score_case(case, MultiToolDecision(tool_calls=calls))["full_match"] == 1.0, case.id


def test_ground_truth_arguments_validate_against_imported_schemas():
    suite = load_bfcl(["simple_python"])
    checked = 0
    for case in suite.cases[:100]:
        registry = registry_for(case)
        for call in case.expected_calls:
            args = {k: next(v for v in vals if v != "") for k, vals in call.acceptable().items() if vals != [""]}
            problems = registry.get(call.tool_name).check_arguments(args)
            checked += not problems
    assert checked >= 90  # BFCL's own answers occasionally disagree with its schemas (e.g. int for float)


def test_files_of_the_same_format_import(tmp_path):
    question = {"id": "mine_0", "question": [[{"role": "user", "content": "hypot of 3 and 4"}]],
                "function": [{"name": "math.hypot", "description": "Euclidean norm.",
                              "parameters": {"type": "dict", "properties": {"x": {"type": "integer", "description": "x"},
                                                                            "y": {"type": "integer", "description": "y"}},
                                             "required": ["x", "y"]}}]}
    (tmp_path / "possible_answer").mkdir()
    (tmp_path / "BFCL_v4_mine.json").write_text(json.dumps(question) + "\n")
    (tmp_path / "possible_answer" / "BFCL_v4_mine.json").write_text(
        json.dumps({"id": "mine_0", "ground_truth": [{"math.hypot": {"x": [3], "y": [4]}}]}) + "\n")
    suite = load_suite(f"bfcl:{tmp_path / 'BFCL_v4_mine.json'}")
    assert len(suite) == 1 and suite.cases[0].expected_calls[0].tool_name == "math.hypot"
    assert suite.cases[0].prompt == "hypot of 3 and 4"
    with pytest.raises(SuiteError, match="Unknown BFCL category 'nope'"):
        load_bfcl(["nope"])
    (tmp_path / "possible_answer" / "BFCL_v4_mine.json").write_text(json.dumps({"id": "other", "ground_truth": []}) + "\n")
    with pytest.raises(SuiteError, match="do not match"):
        load_bfcl_file(tmp_path / "BFCL_v4_mine.json", tmp_path / "possible_answer" / "BFCL_v4_mine.json")


def test_categories_interleave_so_a_limited_split_draws_on_each():
    suite = load_suite("bfcl:multiple+irrelevance")
    first = suite.split("test").limit(20)
    categories = [case.id.split("_")[0] for case in first]
    assert abs(categories.count("multiple") - categories.count("irrelevance")) <= 2
    assert len(suite) == len(load_bfcl(["multiple"])) + len(load_bfcl(["irrelevance"]))
