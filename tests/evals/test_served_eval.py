"""evaluate(run=RunConfig(serve=N)): the harness starts a model server for the run, sends it cases in parallel,
stops it, and stops the run (finished cases kept) if the server dies. The server is the stand-in llama-server."""

from __future__ import annotations

import json

import pytest

from evals.evaluation import evaluate
from evals.runner import RESULTS_FILE, load_rows
from tool_selection.lm import ServerError
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec

NATIVE = SelectorSpec(strategy="native")


def test_an_evaluation_through_a_served_model(fake_llama_server, suite_path, tmp_path):
    result = evaluate(str(suite_path), fake_llama_server, split="test", selector=NATIVE,
                      run=RunConfig(serve=2, threads=2, mlflow=False, progress=False, cache=False,
                                    run_dir=tmp_path / "run"))
    assert result.params["served_parallel"] == 2 and result.params["model"] == fake_llama_server
    rows = result.results.set_index("id")
    # the stand-in makes one call, to the tool named by a word of the request: right but for the two-call case
    assert rows["full_match"].to_dict() == {"w-1": 1.0, "w-3": 1.0, "w-5": 1.0, "none-1": 1.0, "multi-1": 0.0}
    assert rows["parse_error"].isna().all() and rows["error"].eq(0).all()
    assert rows["input_tokens"].eq(10).all()  # usage comes back through the OpenAI-compatible API


def test_a_server_that_dies_stops_the_run_and_keeps_the_finished_cases(fake_llama_server, suite_path, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv("FAKE_SERVER_MODE", "die-after=2")
    run = tmp_path / "run"
    with pytest.raises(ServerError, match="llama-server died"):
        evaluate(str(suite_path), fake_llama_server, split="test", selector=NATIVE,
                 run=RunConfig(serve=1, mlflow=False, progress=False, cache=False, run_dir=run))
    rows = [json.loads(line) for line in (run / RESULTS_FILE).read_text().splitlines()]
    assert len(rows) == 2 and all(row["error_message"] is None for row in rows)  # no failure was scored


INVENTORY = {"name": "check_inventory", "description": "How many of each product the warehouse holds.",
             "parameters": {"type": "object", "additionalProperties": False,
                            "properties": {"warehouse": {"type": "string", "description": "Warehouse; all if none."}}}}


def _inventory_suite(tmp_path):
    """One case whose right answer is a call of check_inventory without arguments."""
    path = tmp_path / "inventory.jsonl"
    path.write_text(json.dumps({"id": "stock", "request": "What do we have in stock?", "tools": [INVENTORY],
                                "expected_calls": [{"tool_name": "check_inventory", "arguments": {}}],
                                "split": "test"}) + "\n")
    return path


def _evaluate_answering(answer, fake_llama_server, tmp_path, monkeypatch, **selector):
    monkeypatch.setenv("FAKE_SERVER_ANSWER", json.dumps(answer))
    return evaluate(str(_inventory_suite(tmp_path)), fake_llama_server,
                    selector=SelectorSpec.build(strategy="native", **selector),
                    run=RunConfig(serve=1, mlflow=False, progress=False, cache=False, run_dir=tmp_path / "run"))


@pytest.mark.parametrize("arguments", ["{this is not JSON", '["warehouse", "north"]', '"north"'])
def test_unreadable_native_arguments_are_a_parse_failure_even_with_undeclared_arguments_dropped(
        fake_llama_server, tmp_path, monkeypatch, arguments):
    """DSPy hands on an arguments string that is not a JSON object as {"partial_json": ...} or {"value": ...};
    dropping that undeclared key must not leave a call without arguments that scores as right."""
    answer = {"tool_calls": [{"id": "call0", "type": "function",
                              "function": {"name": "check_inventory", "arguments": arguments}}]}
    result = _evaluate_answering(answer, fake_llama_server, tmp_path, monkeypatch, undeclared_arguments="drop")
    row = result.results.iloc[0]
    assert row["full_match"] == 0.0 and row["parse_failure"] == 1.0 and row["error"] == 0.0
    assert "arguments are not a JSON object" in row["parse_error"] and "check_inventory" in row["raw_response"]
    assert result.summary["accuracy"] == 0.0 and result.summary["parse_failure_rate"] == 1.0


@pytest.mark.parametrize("answer, why", [
    ({"status": 500, "error": "The model produced output that does not match the expected Hermes 2 Pro format"},
     "does not match the expected Hermes 2 Pro format"),
    ({"status": 500, "error": "Failed to parse input at pos 12: <tool_call>{check_inventory}</tool_call>"},
     "Failed to parse input at pos 12"),
    ({"tool_calls": [{"id": "call0", "type": "function", "function": {"name": "", "arguments": "{}"}}]},
     "is a tool call with no name"),
])
def test_an_answer_the_server_could_not_read_is_a_parse_failure_not_a_failed_call(
        fake_llama_server, tmp_path, monkeypatch, answer, why):
    """llama-server answers HTTP 500 when its chat parser rejects the model's answer, and DSPy refuses a call
    without a name: both are the model's answer, scored, and not tried again by a resumed run."""
    result = _evaluate_answering(answer, fake_llama_server, tmp_path, monkeypatch)
    row = result.results.iloc[0]
    assert row["parse_failure"] == 1.0 and row["error"] == 0.0 and row["error_message"] is None
    assert why in row["parse_error"] and why in row["raw_response"]
    assert list(load_rows(tmp_path / "run" / RESULTS_FILE, finished_only=True)) == ["stock"]  # resume keeps it


def test_a_server_error_that_is_not_an_answer_stays_a_failed_call(fake_llama_server, tmp_path, monkeypatch):
    result = _evaluate_answering({"status": 500, "error": "slot unavailable"}, fake_llama_server, tmp_path,
                                 monkeypatch)
    row = result.results.iloc[0]
    assert row["error"] == 1.0 and "slot unavailable" in row["error_message"]
