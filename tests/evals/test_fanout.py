"""evaluate(run=RunConfig(ray=...)): cases fanned out over a local Ray instance, rows streamed into the one results
file."""

from __future__ import annotations

import json

import pytest

from evals.evaluation import evaluate
from evals.runner import RESULTS_FILE
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec

NATIVE = SelectorSpec(strategy="native")

ray = pytest.importorskip("ray", reason="the ray extra is not installed")


@pytest.fixture(scope="module", autouse=True)
def shutdown_ray():
    yield
    ray.shutdown()


def test_cases_fan_out_to_ray_workers_against_a_served_model(fake_llama_server, suite_path, tmp_path):
    run = tmp_path / "run"
    served = RunConfig(serve=2, ray="local", threads=2, mlflow=False, progress=False, cache=False, run_dir=run)
    result = evaluate(str(suite_path), fake_llama_server, split="test", selector=NATIVE, run=served)
    assert result.params["ray"] == "local"
    assert result.results["full_match"].tolist() == [1.0, 1.0, 1.0, 1.0, 0.0]  # in suite order
    rows = [json.loads(line) for line in (run / RESULTS_FILE).read_text().splitlines()]
    assert sorted(row["id"] for row in rows) == sorted(result.results["id"])

    again = evaluate(str(suite_path), fake_llama_server, split="test", selector=NATIVE, run=served)
    assert len((run / RESULTS_FILE).read_text().splitlines()) == len(rows)  # resumed: no case ran twice
    assert again.results["full_match"].tolist() == result.results["full_match"].tolist()


def test_an_unreachable_cluster_is_an_error_before_any_work(suite_path, tmp_path, monkeypatch):
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with pytest.raises(ToolSelectionError, match="No Ray cluster answers at '127.0.0.1:9'"):
        evaluate(str(suite_path), "local:qwen2.5-coder-0.5b", split="test", selector=NATIVE,
                 run=RunConfig(ray="127.0.0.1:9", mlflow=False, progress=False, run_dir=tmp_path / "run"))
    assert not (tmp_path / "run" / RESULTS_FILE).exists()
