"""evaluate(serve=N): the harness starts a model server for the run, sends it cases in parallel, stops it, and
stops the run (finished cases kept) if the server dies. The server is the stand-in llama-server."""

from __future__ import annotations

import json

import pytest

from evals.evaluate import evaluate
from evals.runner import RESULTS_FILE
from tool_selection.lm import ServerError


def test_an_evaluation_through_a_served_model(fake_llama_server, suite_path, tmp_path):
    result = evaluate(str(suite_path), fake_llama_server, split="test", serve=2, threads=2, strategy="native",
                      mlflow=False, progress=False, cache=False, run_dir=tmp_path / "run")
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
        evaluate(str(suite_path), fake_llama_server, split="test", serve=1, strategy="native", mlflow=False,
                 progress=False, cache=False, run_dir=run)
    rows = [json.loads(line) for line in (run / RESULTS_FILE).read_text().splitlines()]
    assert len(rows) == 2 and all(row["error_message"] is None for row in rows)  # no failure was scored
