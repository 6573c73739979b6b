"""Resuming a run: failed model calls are tried again, scored answers are not, and a damaged tail is skipped."""

import json
import logging

from evals.runner import RESULTS_FILE, Evaluator, load_rows
from evals.suite import load_suite
from tests.evals.test_runner import ANSWERS, CountingLM
from tool_selection.selector import MultiToolSelector


def test_a_failed_model_call_is_retried_on_resume_but_a_parse_failure_is_not(suite_path, tmp_path):
    suite = load_suite(suite_path)
    run_dir = tmp_path / "run"
    flaky = CountingLM(ANSWERS, fail_on=["Rome"])
    first = Evaluator(suite=suite, progress=False)(MultiToolSelector(), lm=flaky, run_dir=run_dir)
    assert first.results.set_index("id").loc["w-2", "error"] == 1.0

    again = CountingLM(ANSWERS)
    second = Evaluator(suite=suite, progress=False)(MultiToolSelector(), lm=again, run_dir=run_dir)
    assert again.calls == 1  # only the failed call; Baku's unparseable answer is a scored result and stays
    rows = second.results.set_index("id")
    assert rows.loc["w-2", "error"] == 0.0 and rows.loc["w-5", "parse_failure"] == 1.0
    assert len(second.results) == len(suite)


def test_any_damaged_tail_is_skipped_with_a_warning(suite_path, tmp_path, caplog):
    suite = load_suite(suite_path)
    run_dir = tmp_path / "run"
    Evaluator(suite=suite.limit(2), progress=False)(MultiToolSelector(), lm=CountingLM(ANSWERS), run_dir=run_dir)
    results = run_dir / RESULTS_FILE
    with results.open("ab") as handle:
        handle.write(b'123\nnull\n[1, 2]\n{"no_id": 1}\n{"id": 7}\n\xff\xfe not utf-8\n{"id": "w-9", "torn')
    with caplog.at_level(logging.WARNING, logger="evals.runner"):
        rows = load_rows(results)
    assert set(rows) == {"w-0", "w-1"}
    assert sum("damaged" in r.message for r in caplog.records) == 7
    resumed = CountingLM(ANSWERS)
    result = Evaluator(suite=suite, progress=False)(MultiToolSelector(), lm=resumed, run_dir=run_dir)
    assert resumed.calls == len(suite) - 2 and len(result.results) == len(suite)
    assert json.loads(results.read_text(errors="replace").splitlines()[-1])["id"] in {c.id for c in suite}
