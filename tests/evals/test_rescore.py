"""toolsel eval rescore: a run's parse failures read again with today's parsers, no model call."""

import json

import pandas as pd
import pytest

from evals.rescore import rescore_run
from evals.runner import RESULTS_FILE
from tool_selection.cli import main
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec


def _run(tmp_path, rows, strategy="native"):
    run = tmp_path / "run"
    run.mkdir()
    (run / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "summary.json").write_text(json.dumps({"params": {"suite": "finance", "strategy": strategy},
                                                  "summary": {}}))
    return run


def _failure(case_id, raw):
    return {"id": case_id, "split": "test", "tags": [], "request": "r", "expected": "[]", "predicted": "[]",
            "reasoning": "", "problems": "[]", "parse_error": "AdapterParseError: ...", "raw_response": raw,
            "error_message": None, "full_match": 0.0, "parse_failure": 1.0, "latency_s": 2.5, "input_tokens": 900.0,
            "output_tokens": 40.0}


def test_a_failure_todays_parser_reads_is_scored_again_and_the_rest_stay(tmp_path):
    from evals.suite import load_suite

    case = next(c for c in load_suite("finance").split("test") if len(c.expected_calls) == 1)
    call = case.expected_calls[0]
    arguments = {name: values[0] if isinstance(values, list) else values
                 for name, values in call.model_dump()["arguments"].items()}
    readable = json.dumps({"name": call.tool_name, "arguments": arguments}) + ' {"ok": true}'
    run = _run(tmp_path, [_failure(case.id, readable), _failure("finance-unreadable", '{"name": "x", "argu')])

    assert main(["eval", "rescore", str(run)]) == 0
    table = pd.read_parquet(run / "results.parquet").set_index("id")
    fixed = table.loc[case.id]
    assert fixed["parse_failure"] == 0.0 and pd.isna(fixed["parse_error"]) and fixed["latency_s"] == 2.5
    assert fixed["full_match"] == 1.0
    assert json.loads(fixed["predicted"])[0]["tool_name"] == call.tool_name
    assert table.loc["finance-unreadable", "parse_failure"] == 1.0
    assert json.loads((run / "summary.json").read_text())["params"]["rescored"] is True
    assert rescore_run(run) == 0  # nothing left that today's parser reads


def _answered(case, arguments, full_match):
    predicted = [{"tool_name": case.expected_calls[0].tool_name, "arguments": arguments}]
    return {**_failure(case.id, None), "predicted": json.dumps(predicted), "parse_error": None,
            "parse_failure": 0.0, "full_match": full_match}


def test_calls_are_checked_and_scored_again_with_todays_rules(tmp_path):
    from evals.suite import load_suite

    first, second = [c for c in load_suite("finance").split("test")
                     if len(c.expected_calls) == 1 and c.expected_calls[0].arguments][:2]

    def right(case):
        return {name: values[0] for name, values in case.expected_calls[0].acceptable().items()}

    # scored before the tool's refusal counted: an echoed schema key beside the right arguments
    echoed = _answered(first, {**right(first), "required": ["x"]}, full_match=1.0)
    clean = _answered(second, right(second), full_match=1.0)
    run = _run(tmp_path, [echoed, clean])

    assert rescore_run(run) >= 1
    table = pd.read_parquet(run / "results.parquet").set_index("id")
    assert table.loc[first.id, "full_match"] == 0.0 and table.loc[first.id, "invalid_arguments"] == 1.0
    assert "required" in table.loc[first.id, "problems"]
    assert table.loc[second.id, "full_match"] == 1.0
    assert rescore_run(run) == 0


def test_a_folder_that_is_not_a_finished_run_is_refused(tmp_path):
    with pytest.raises(ToolSelectionError, match="no summary.json"):
        rescore_run(tmp_path)


def test_a_dropping_copy_counts_nothing_dropped_on_an_unreadable_answer(tmp_path):
    from evals.suite import load_suite

    case = load_suite("finance").split("test").cases[0]
    run = _run(tmp_path, [_failure(case.id, '{"name": "x", "argu')])
    assert main(["eval", "rescore", str(run), "--undeclared-arguments", "drop", "--into", str(tmp_path / "d")]) == 0
    row = pd.read_parquet(tmp_path / "d" / "results.parquet").iloc[0]
    assert row["parse_failure"] == 1.0 and row["undeclared_dropped"] == 0.0  # what a live dropping run records


def test_a_run_on_a_suite_file_is_rescored_from_anywhere(suite_path, tmp_path, monkeypatch):
    from evals.evaluation import evaluate
    from tests.evals.test_runner import ANSWERS, CountingLM
    from tool_selection.selector import ToolSelectionAdapter

    monkeypatch.chdir(suite_path.parent)
    lm = CountingLM(ANSWERS, adapter=ToolSelectionAdapter())
    run = evaluate(suite_path.name, lm, split=None, selector=SelectorSpec(strategy="json-cot"),
                   run=RunConfig(mlflow=False, progress=False, run_dir=tmp_path / "run")).run_dir
    assert json.loads((run / "summary.json").read_text())["params"]["suite_ref"] == str(suite_path.resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["eval", "rescore", str(run)]) == 0


def test_a_run_that_does_not_record_its_suite_file_names_the_fix(suite_path, tmp_path, capsys):
    run = _run(tmp_path, [])
    summary = json.loads((run / "summary.json").read_text())
    summary["params"]["suite"] = "mini"  # made on mini.jsonl before runs recorded suite_ref
    (run / "summary.json").write_text(json.dumps(summary))
    assert main(["eval", "rescore", str(run)]) == 2
    err = capsys.readouterr().err
    assert "Unknown suite 'mini'" in err and "--suite PATH" in err, err
    assert main(["eval", "rescore", str(run), "--suite", str(suite_path)]) == 0


def _finished(path, rows, **params):
    path.mkdir()
    (path / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "summary.json").write_text(json.dumps({"params": {
        "suite": "finance", "suite_fingerprint": "f1", "split": "test", "model": "local:m", "limit": None,
        "cases": len(rows), **params}, "summary": {}}))
    return path


def test_a_splice_keeps_the_base_rows_but_for_the_cases_run_again(tmp_path):
    from evals.rescore import splice_run
    from evals.suite import load_suite

    first, second = [case for case in load_suite("finance").split("test") if case.expected_calls][:2]
    base = _finished(tmp_path / "base", [_answered(first, {}, 0.0), _answered(second, {}, 1.0)],
                     strategy="native-strict-cover", suite_ref="runs/finance.jsonl")
    rerun = _finished(tmp_path / "rerun", [_answered(first, {}, 1.0), {**_answered(first, {}, 1.0), "id": "other"}],
                      strategy="native-strict-more", ids=f"{first.id},other", cases=2,
                      suite_ref=str(tmp_path / "runs" / "finance.jsonl"))
    assert main(["eval", "splice", str(base), str(rerun), "--into", str(tmp_path / "both")]) == 0
    table = pd.read_parquet(tmp_path / "both" / "results.parquet").set_index("id")
    assert list(table.index) == [first.id, second.id] and list(table["full_match"]) == [1.0, 1.0]
    meta = json.loads((tmp_path / "both" / "summary.json").read_text())
    assert meta["params"]["strategy"] == "native-strict-more" and meta["params"]["cases"] == 2
    assert meta["params"]["spliced_from"] == "base" and meta["params"]["rerun_ids"] == first.id  # base's cases only
    assert "ids" not in meta["params"] and meta["summary"]["accuracy"] == 1.0
    assert meta["params"]["suite_ref"] == "runs/finance.jsonl"  # where base found the suite, as base wrote it

    other_model = _finished(tmp_path / "other", [_answered(first, {}, 1.0)], model="local:n", ids=first.id)
    with pytest.raises(ToolSelectionError, match="differ in model"):
        splice_run(base, other_model, tmp_path / "x")
    not_by_id = _finished(tmp_path / "limited", [_answered(first, {}, 1.0)], limit=1)
    none_shared = _finished(tmp_path / "elsewhere", [{**_answered(first, {}, 1.0), "id": "other"}], ids="other")
    for wrong in (not_by_id, none_shared):
        with pytest.raises(ToolSelectionError, match="chosen by id"):
            splice_run(base, wrong, tmp_path / "y")
    with pytest.raises(ToolSelectionError, match="exists"):
        splice_run(base, rerun, tmp_path / "both")
