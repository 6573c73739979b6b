"""BFCL's Java and JavaScript categories: loaded as BFCL shows them to a function-calling model, scored by BFCL's own
checker in their language; and the board's Non-Live AST figure."""

import json
import math
import os
import subprocess
import sys

import pytest

from evals.bfcl import (
    BFCL_CATEGORIES,
    bfcl_records,
    language_tools,
    load_bfcl,
    non_live_ast,
    non_live_simple_ast,
    split_for,
)
from evals.bfcl_agreement import compare, format_report
from evals.bfcl_answers import Answer, generated_answers
from evals.bfcl_checker import check, language_of
from evals.metrics import score_case
from evals.suite import Case, available_suites, load_suite, registry_for
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.strategies import check_decision

CATEGORIES = {"simple_java": ("java", 100), "simple_javascript": ("javascript", 50)}  # bfcl-eval==2026.3.23
# the cases where no correct answer is right under BFCL's own checker (docs/bfcl-agreement.md, "Java and JavaScript")
NEVER_RIGHT = {"simple_java_36", "simple_java_64", "simple_java_65"}


@pytest.fixture(scope="module")
def cases():
    return {case.id: case for case in load_bfcl(list(CATEGORIES)).cases}


def decide(case, *calls):
    """The decision a run makes of these calls ((name, arguments) each)."""
    return check_decision("", [ToolCall(tool_name=name, arguments=args) for name, args in calls], registry_for(case))


@pytest.mark.parametrize("category", CATEGORIES)
def test_each_category_loads_with_bfcls_ids_splits_and_its_checker(category):
    language, count = CATEGORIES[category]
    suite = load_suite(f"bfcl:{category}")
    assert category in BFCL_CATEGORIES and f"bfcl:{category}" in available_suites()
    assert suite.name == f"bfcl_{category}" and len(suite) == count
    assert [case.id for case in suite] == [f"{category}_{n}" for n in range(count)]
    assert set(suite.split_counts()) == {"train", "dev", "test"}
    functions, _ = bfcl_records(category)
    for case in suite:
        assert case.split == split_for(case.id) and case.tags[:2] == [category, "single"] and case.strict_arguments
        assert (case.bfcl_checker.language, case.bfcl_checker.category) == (language, category)
        assert case.bfcl_checker.functions == functions[case.id]  # BFCL's own docs, for its checker
        (tool,) = case.tools
        assert all(p["type"] == "string" for p in tool["parameters"]["properties"].values())  # what the model writes
        assert tool["description"].endswith(" Note that the provided function is in "
                                            f"{'Java 8 SDK' if language == 'java' else 'JavaScript'} syntax.")
        assert registry_for(case).names() == [tool["name"]]
    assert language_of(category) == language


def test_the_python_categories_keep_our_matcher_and_their_fingerprints():
    # as recorded by kept runs (results/board/*/summary.json) before the Java and JavaScript categories came
    recorded = {"simple_python": "42549e196a1e", "multiple": "cc9912ee9fa2", "parallel": "cb31358e7529",
                "irrelevance": "caa9decdea09"}
    for category, fingerprint in recorded.items():
        suite = load_suite(f"bfcl:{category}")
        assert suite.fingerprint == fingerprint
        assert all(case.bfcl_checker is None for case in suite)
    assert language_tools([{"name": "f"}], "python") == [{"name": "f"}]


def test_the_tools_are_what_bfcl_shows_a_function_calling_model(tmp_path):
    """Compared with bfcl-eval's own pre-processing (``load_dataset_entry``), run apart: its config module creates
    folders, here under tmp_path."""
    script = ("import json, sys\nfrom bfcl_eval.utils import load_dataset_entry\n"
              "print(json.dumps({e['id']: e['function'] for c in sys.argv[1:] for e in load_dataset_entry(c)}))")
    done = subprocess.run([sys.executable, "-c", script, *CATEGORIES], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BFCL_PROJECT_ROOT": str(tmp_path)}, check=True)
    theirs = json.loads(done.stdout.splitlines()[-1])
    ours = {case.id: case.tools for case in load_bfcl(list(CATEGORIES)).cases}
    assert ours == theirs


JAVA_MAP = 'new HashMap<String, Object>() {{ put("limit", 50); put("schemaFilter", "public"); }}'
RIGHT_AND_WRONG = {
    # simple_java_1: makeProposalsFromObject(object="Customers", useShortName=true, params={limit: 50, ...})
    "simple_java_1": ("SQLCompletionAnalyzer.makeProposalsFromObject",
                      {"object": "Customers", "useShortName": "true", "params": JAVA_MAP},
                      {"object": "Customers", "useShortName": "false", "params": JAVA_MAP}),
    # simple_javascript_2: status is an array of two strings, written as a JavaScript array literal
    "simple_javascript_2": ("extractLastTransactionId",
                            {"filepath": "/var/log/db.log", "status": '["completed", "failed"]', "encoding": "utf-8",
                             "processFunction": "processFunction"},
                            {"filepath": "/var/log/db.log", "status": '["completed"]', "encoding": "utf-8",
                             "processFunction": "processFunction"}),
}


@pytest.mark.parametrize("case_id", RIGHT_AND_WRONG)
def test_a_right_and_a_wrong_answer_are_scored_by_bfcls_checker(cases, case_id):
    case = cases[case_id]
    name, right, wrong = RIGHT_AND_WRONG[case_id]
    scores = score_case(case, decide(case, (name, right)))
    assert (scores["full_match"], scores["tool_exact"], scores["args_correct"], scores["f1"]) == (1.0, 1.0, 1.0, 1.0)
    assert scores["invalid_arguments"] == scores["parse_failure"] == 0.0
    scores = score_case(case, decide(case, (name, wrong)))
    assert (scores["full_match"], scores["tool_exact"], scores["args_correct"]) == (0.0, 1.0, 0.0)
    # the same values as JSON, not literals: BFCL wants a string per argument (our validation says so too)
    as_json = {k: json.loads(v) if v.startswith(("[", "t", "f")) else v for k, v in right.items() if k != "params"}
    scores = score_case(case, decide(case, (name, as_json)))
    assert scores["full_match"] == 0.0 and scores["args_correct"] == 0.0 and scores["invalid_arguments"] == 1.0
    # a call too many, or another function: wrong, with the name metrics as for every case
    scores = score_case(case, decide(case, (name, right), (name, right)))
    assert (scores["full_match"], scores["tool_exact"], scores["args_correct"], scores["precision"]) == (0, 0, 1, 0.5)
    scores = score_case(case, decide(case, ("another_function", right)))
    assert scores["full_match"] == scores["tool_exact"] == 0.0 and math.isnan(scores["args_correct"])


def test_a_malformed_answer_is_a_scored_failure_never_a_crash(cases):
    case = cases["simple_java_1"]
    scores = score_case(case, MultiToolDecision(parse_error="the answer could not be parsed"))
    assert (scores["full_match"], scores["parse_failure"], scores["tool_exact"]) == (0.0, 1.0, 0.0)
    functions = case.bfcl_checker.functions
    truth = [{"SQLCompletionAnalyzer.makeProposalsFromObject": case.expected_calls[0].acceptable()}]
    written = "object=Customers, useShortName=true, params=..."  # arguments as text, not by name
    valid, error = check(functions, [{"tool_name": functions[0]["name"], "arguments": written}], truth,
                         language="java", category="simple_java")
    assert not valid and error.startswith("checker_error:AttributeError")
    # a type BFCL's Java converter does not implement raises inside BFCL's code: the answer is wrong
    doc = {"name": "Util.unique", "description": "Unique items.",
           "parameters": {"type": "dict", "properties": {"items": {"type": "Set", "description": "The items."}},
                          "required": ["items"]}}
    made = Case.model_validate({
        "id": "set_0", "request": "the unique items of a and b", "tools": language_tools([doc], "java"),
        "expected_calls": [{"tool_name": "Util.unique", "arguments": {"items": {"one_of": [["a", "b"]]}}}],
        "strict_arguments": True, "bfcl_checker": {"language": "java", "category": "simple_java", "functions": [doc]}})
    scores = score_case(made, decide(made, ("Util.unique", {"items": 'new HashSet<>(Arrays.asList("a", "b"))'})))
    assert (scores["full_match"], scores["tool_exact"], scores["args_correct"]) == (0.0, 1.0, 0.0)
    valid, error = check([doc], [{"tool_name": "Util.unique", "arguments": {"items": "x"}}],
                         [{"Util.unique": {"items": [["a", "b"]]}}], language="java", category="simple_java")
    assert not valid and error.startswith("checker_error:NotImplementedError")


@pytest.mark.parametrize("category", CATEGORIES)
def test_bfcls_possible_answers_written_as_literals_score_as_right(cases, category):
    """Every case's first acceptable values, as literals of the declared types: right through our whole scoring path
    (a run's decision, then score_case), except where no correct answer is right under BFCL's checker."""
    wrong = set()
    for answer in generated_answers(category):
        if answer.label == "first acceptable values":
            case = cases[answer.case_id]
            scores = score_case(case, decide(case, *((c["tool_name"], c["arguments"]) for c in answer.calls)))
            assert scores["tool_exact"] == 1.0
            if scores["full_match"] != 1.0:
                wrong.add(answer.case_id)
    assert wrong == {c for c in NEVER_RIGHT if c.startswith(f"{category}_")}


def test_the_agreement_report_says_the_verdicts_agree_by_construction():
    answers = [Answer("simple_javascript_2", ({"tool_name": "extractLastTransactionId",
                                               "arguments": RIGHT_AND_WRONG["simple_javascript_2"][1]},)),
               Answer("simple_javascript_2", (), parse_failure=True)]
    report = compare("simple_javascript", answers, source="two")
    assert (report.answers, report.agreeing, report.bfcl_valid, report.ours_valid) == (2, 2, 1, 1)
    assert "simple_javascript: our scoring is BFCL's own checker" in format_report([report])


def test_non_live_ast_is_bfcls_mean_of_means():
    accuracies = {"simple_python": 0.9, "simple_java": 0.6, "simple_javascript": 0.3, "multiple": 0.8,
                  "parallel": 0.7, "parallel_multiple": 0.5, "irrelevance": 0.0}  # irrelevance is not in it
    assert non_live_simple_ast(accuracies) == pytest.approx(0.6)
    assert non_live_ast(accuracies) == pytest.approx((0.6 + 0.8 + 0.7 + 0.5) / 4)
    # unweighted: not the case-weighted mean of the 1,150 cases ((360 + 60 + 15 + 160 + 140 + 100) / 1150)
    assert non_live_ast(accuracies) != pytest.approx(835 / 1150)
    assert non_live_ast({k: 100 * v for k, v in accuracies.items()}) == pytest.approx(65.0)  # percentages alike
    partial = {k: v for k, v in accuracies.items() if k != "simple_java"}
    assert math.isnan(non_live_simple_ast(partial)) and math.isnan(non_live_ast(partial))  # BFCL shows "N/A"
    assert non_live_ast(partial, missing_as_zero=True) == pytest.approx(((0.9 + 0 + 0.3) / 3 + 2.0) / 4)


def test_a_saved_java_suite_loads_back_and_scores_alike(cases, tmp_path):
    """A suite file keeps bfcl_checker; its expected values (BFCL's, read from literals) are not checked against
    the string-typed tools, which would refuse them."""
    path = tmp_path / "java.jsonl"
    chosen = [cases["simple_java_1"], cases["simple_javascript_2"]]
    path.write_text("".join(case.model_dump_json(exclude_none=True) + "\n" for case in chosen))
    again = load_suite(path)
    assert [c.model_dump() for c in again] == [c.model_dump() for c in chosen]
    name, right, _ = RIGHT_AND_WRONG["simple_java_1"]
    assert score_case(again.cases[0], decide(again.cases[0], (name, right)))["full_match"] == 1.0


def test_a_run_scores_the_answers_a_model_gives(cases):
    """The runner end to end (DSPy's dummy LM answering as the json-cot strategy): each row's scores come from
    BFCL's checker; an answer that does not parse is a scored parse failure."""
    import dspy
    from dspy.utils.dummies import DummyLM

    from evals.runner import Evaluator
    from evals.suite import Suite
    from tool_selection.selector import MultiToolSelector

    def answer(name, arguments):
        return {"reasoning": "r", "tool_calls": json.dumps([{"tool_name": name, "arguments": arguments}])}

    java_name, java_right, _ = RIGHT_AND_WRONG["simple_java_1"]
    js_name, _, js_wrong = RIGHT_AND_WRONG["simple_javascript_2"]
    answers = {"SQL completion proposals": answer(java_name, java_right),
               "database log file": answer(js_name, js_wrong),
               "GIS geometry": {"reasoning": "r", "tool_calls": "GeometryPresentation.createPresentation(mapController"}}
    suite = Suite("bfcl_java_js", [cases[i] for i in ("simple_java_1", "simple_javascript_2", "simple_java_0")])
    result = Evaluator(suite=suite, progress=False)(MultiToolSelector(strategy="json-cot"),
                                                    lm=DummyLM(answers, adapter=dspy.JSONAdapter()))
    rows = result.results.set_index("id")
    assert rows.loc["simple_java_1", ["full_match", "args_correct"]].tolist() == [1.0, 1.0]
    assert rows.loc["simple_javascript_2", ["full_match", "tool_exact", "args_correct"]].tolist() == [0.0, 1.0, 0.0]
    assert rows.loc["simple_java_0", ["full_match", "parse_failure"]].tolist() == [0.0, 1.0]
    assert result.summary["accuracy"] == pytest.approx(1 / 3)
