"""Our scoring of BFCL cases against BFCL's own AST checker: the agreement measured in docs/bfcl-agreement.md."""

import sys
from collections import Counter
from pathlib import Path

import pytest

from evals.bfcl import BFCL_CATEGORIES, bfcl_records
from evals.bfcl_agreement import KNOWN_DIFFERENCES, bfcl_verdict, compare, explain, main, our_verdict
from evals.bfcl_answers import Answer, generated_answers, run_answers
from tool_selection.cli import main as toolsel
from tool_selection.errors import ToolSelectionError

RESULTS = Path(__file__).resolve().parents[2] / "results"
UNPARSEABLE, NULL, GREEDY, DICT_LIST = KNOWN_DIFFERENCES  # in the order the page lists them

# The generated answers of every fifth case of each category (the command scores whole categories, in about a
# minute), and of every case whose BFCL data departs from its own declaration (an argument required but marked
# omittable, not declared, or listed with values of another type) or shows a known difference.
SPECIAL_CASES = {
    "simple_python": ["simple_python_17", "simple_python_149", "simple_python_200", "simple_python_307",
                      "simple_python_337"],
    "parallel": ["parallel_88", "parallel_152", "parallel_178"],
    "parallel_multiple": [f"parallel_multiple_{n}" for n in (12, 21, 26, 87, 94, 119, 135, 187, 195)],
    # no correct answer is right under BFCL's checker (36, 65: numbers in an ArrayList of any; 64: a possible answer
    # not in a list), and every case with a null dropped for an optional argument
    "simple_java": ["simple_java_36", "simple_java_64", "simple_java_65", "simple_java_94"],
    "simple_javascript": ["simple_javascript_1", "simple_javascript_13", "simple_javascript_41"],
}


def sampled_cases(category):
    every_fifth = list(bfcl_records(category)[0])[::5]
    return every_fifth + [c for c in SPECIAL_CASES.get(category, []) if c not in every_fifth]


# category: (answers, agreeing, BFCL right, ours right), and the disagreements by known difference
GENERATED = {
    "simple_python": ((2537, 2488, 431, 480), {NULL: 45, DICT_LIST: 4}),
    "simple_java": ((646, 645, 105, 106), {NULL: 1}),  # scored by BFCL's checker: only the null before it differs
    "simple_javascript": ((380, 376, 66, 70), {NULL: 4}),
    "multiple": ((1252, 1233, 218, 237), {NULL: 19}),
    "parallel": ((1360, 1345, 294, 309), {NULL: 14, GREEDY: 1}),
    "parallel_multiple": ((3033, 2999, 592, 626), {NULL: 31, DICT_LIST: 3}),
    "irrelevance": ((240, 192, 96, 48), {UNPARSEABLE: 48}),
}

# kept run: (answers, agreeing), and each disagreeing case with its known difference
KEPT = {
    "strategies-whole/qwen2.5-coder-1.5b/gate+native/bfcl_irrelevance": (
        (240, 236), dict.fromkeys(["irrelevance_22", "irrelevance_63", "irrelevance_172", "irrelevance_223"],
                                  UNPARSEABLE)),
    "strategies-whole/qwen2.5-coder-1.5b/native-strict/bfcl_multiple": ((200, 200), {}),
    "strategies/qwen2.5-coder-0.5b/native-strict/bfcl_multiple": ((200, 200), {}),
    "strategies/qwen2.5-coder-0.5b/json/bfcl_irrelevance": ((120, 120), {}),
    "strategies/qwen2.5-coder-0.5b/json/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-0.5b/native-cot-strict/bfcl_irrelevance": ((120, 119), {"irrelevance_206": UNPARSEABLE}),
    "strategies/qwen2.5-coder-0.5b/native-cot-strict/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-0.5b/native-cot/bfcl_irrelevance": (
        (120, 118), dict.fromkeys(["irrelevance_22", "irrelevance_206"], UNPARSEABLE)),
    "strategies/qwen2.5-coder-0.5b/native-cot/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-0.5b/native/bfcl_irrelevance": (
        (120, 116), dict.fromkeys(["irrelevance_21", "irrelevance_22", "irrelevance_206", "irrelevance_219"],
                                  UNPARSEABLE)),
    "strategies/qwen2.5-coder-0.5b/native/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-0.5b/text_call/bfcl_irrelevance": (
        (120, 107), dict.fromkeys([f"irrelevance_{n}" for n in (4, 10, 17, 21, 22, 42, 51, 76, 80, 82, 88, 120, 146)],
                                  UNPARSEABLE)),
    "strategies/qwen2.5-coder-0.5b/text_call/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-0.5b/text_fenced/bfcl_irrelevance": ((120, 120), {}),
    "strategies/qwen2.5-coder-0.5b/text_fenced/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-0.5b/text_tags/bfcl_irrelevance": (
        (120, 115), dict.fromkeys([f"irrelevance_{n}" for n in (21, 50, 81, 149, 219)], UNPARSEABLE)),
    "strategies/qwen2.5-coder-0.5b/text_tags/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-1.5b/json-cot/bfcl_irrelevance": ((120, 120), {}),
    "strategies/qwen2.5-coder-1.5b/json-cot/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-1.5b/native-cot-strict/bfcl_irrelevance": ((120, 120), {}),
    "strategies/qwen2.5-coder-1.5b/native-cot-strict/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-1.5b/native-strict/bfcl_multiple": ((120, 120), {}),
    "strategies/qwen2.5-coder-1.5b/native/bfcl_irrelevance": (
        (120, 117), dict.fromkeys(["irrelevance_22", "irrelevance_63", "irrelevance_172"], UNPARSEABLE)),
}


@pytest.fixture(scope="module")
def generated():
    return {category: compare(category, generated_answers(category, sampled_cases(category)), source="generated")
            for category in BFCL_CATEGORIES}


@pytest.mark.parametrize("category", BFCL_CATEGORIES)
def test_generated_answers_agree_but_for_the_known_differences(generated, category):
    report = generated[category]
    (answers, agreeing, bfcl_right, ours_right), kinds = GENERATED[category]
    assert (report.answers, report.agreeing, report.bfcl_valid, report.ours_valid) == \
        (answers, agreeing, bfcl_right, ours_right)
    assert Counter(d.known for d in report.disagreements) == kinds


def test_every_kept_bfcl_run_is_pinned():
    kept = {str(p.relative_to(RESULTS)) for p in RESULTS.glob("strategies*/*/*/bfcl_*") if p.is_dir()}
    assert kept == set(KEPT)


@pytest.mark.parametrize("run", KEPT)
def test_kept_rows_agree_but_for_the_known_differences(run):
    (answers, agreeing), disagreeing = KEPT[run]
    ((category, rows),) = run_answers(RESULTS / run).items()
    report = compare(category, rows, source=run)
    assert (report.answers, report.agreeing) == (answers, agreeing)
    assert {d.answer.case_id: d.known for d in report.disagreements} == disagreeing


def call(name, **arguments):
    return {"tool_name": name, "arguments": arguments}


def test_each_known_difference_is_recognised_by_what_makes_bfcl_agree():
    unparseable = Answer("irrelevance_0", (), parse_failure=True)
    assert bfcl_verdict("irrelevance", unparseable)[0] and not our_verdict("irrelevance", unparseable)
    assert explain("irrelevance", unparseable, True, "") == UNPARSEABLE

    # simple_python_0: calculate_triangle_area(base=10, height=5, unit="" or "units"), unit optional
    with_null = Answer("simple_python_0", (call("calculate_triangle_area", base=10, height=5, unit=None),))
    valid, error = bfcl_verdict("simple_python", with_null)
    assert not valid and "NoneType" in error and our_verdict("simple_python", with_null)
    assert explain("simple_python", with_null, valid, error) == NULL

    # parallel_178: the first expected call accepts Microsoft or Apple; the answer's first Apple call is taken
    calls = [call("get_stock_price", company_name=company, date=date)
             for company, date in [("Apple", "2022-02-01"), ("Apple", "2022-01-01"), ("Microsoft", "2022-02-01"),
                                   ("Microsoft", "2022-01-01")]]
    reordered = Answer("parallel_178", tuple(calls))
    valid, error = bfcl_verdict("parallel", reordered)
    assert not valid and our_verdict("parallel", reordered)
    assert bfcl_verdict("parallel", Answer("parallel_178", tuple(calls[::-1])))[0]
    assert explain("parallel", reordered, valid, error) == GREEDY


def test_a_difference_of_another_kind_is_left_unexplained():
    wrong_value = Answer("simple_python_0", (call("calculate_triangle_area", base=11, height=5),))
    valid, error = bfcl_verdict("simple_python", wrong_value)
    assert not valid and "value_error" in error
    assert explain("simple_python", wrong_value, valid, error) is None  # were ours to call it right
    assert explain("multiple", Answer("multiple_0", (), parse_failure=True), True, "") is None


def test_a_case_bfcl_does_not_hold_is_refused_with_its_id():
    with pytest.raises(ToolSelectionError) as raised:
        compare("multiple", [Answer("multiple_9999", ())], source="RUN")
    assert str(raised.value) == ("RUN: 1 case(s) are not in BFCL's 'multiple' category (e.g. ['multiple_9999']); "
                                 "the agreement reads BFCL's own records of each case.")


def test_the_checker_is_imported_without_bfcls_model_table():
    bfcl_verdict("multiple", Answer("multiple_0", ()))
    assert "bfcl_eval.constants.model_config" not in sys.modules
    assert "bfcl_eval.constants.eval_config" not in sys.modules  # it creates folders beside the package


def test_command_line_prints_the_table_and_exits_1_on_an_unexplained_disagreement(monkeypatch, capsys):
    run = str(RESULTS / "strategies/qwen2.5-coder-1.5b/native/bfcl_irrelevance")
    assert main([run]) == 0
    out = capsys.readouterr().out
    assert "bfcl_irrelevance" in out and " 120    117   97.5" in out and f"3  {UNPARSEABLE}" in out
    monkeypatch.setattr("evals.bfcl_agreement.explain", lambda *args: None)
    assert main([run]) == 1
    assert "irrelevance_22 [row]" in capsys.readouterr().out


def test_toolsel_bench_runs_it(capsys):
    assert toolsel(["bench", "bfcl-agreement", str(RESULTS / "strategies/qwen2.5-coder-0.5b/json/bfcl_multiple")]) == 0
    assert " 120    120  100.0" in capsys.readouterr().out
    assert toolsel(["bench", "bfcl-agreement"]) != 0
    assert "Give run directories, --generated CATEGORY ..., or both." in capsys.readouterr().err
