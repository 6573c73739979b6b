"""Each case of a tracked evaluation is an MLflow trace of the run: the request, the prompt and the model's answer,
the parsed calls, the score and the latency; none without MLflow."""

import dspy
import mlflow
import pytest

from evals.evaluation import evaluate
from evals.suite import load_suite
from tests.evals.test_runner import ANSWERS, CountingLM
from tool_selection.run_config import RunConfig
from tool_selection.selector import ToolSelectionAdapter
from tool_selection.spec import SelectorSpec

SPEC = SelectorSpec(strategy="json-cot", relevance="none")


def _traces(uri, run_id):
    client = mlflow.MlflowClient(uri)
    experiment = client.get_run(run_id).info.experiment_id
    mlflow.set_tracking_uri(uri)
    return {trace.info.tags["case_id"]: trace
            for trace in mlflow.search_traces(run_id=run_id, locations=[experiment], return_type="list")}


def test_every_case_is_a_trace_of_the_run(suite_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run = RunConfig(tracking_uri=uri, progress=False, threads=2, cache=False, run_dir=tmp_path / "run")
    track_usage = dspy.settings.track_usage
    result = evaluate(str(suite_path), CountingLM(ANSWERS, adapter=ToolSelectionAdapter()), selector=SPEC,
                      split=None, run=run.replace(limit=5))
    rows = result.results.set_index("id")
    traces = _traces(uri, result.mlflow_run_id)
    assert set(traces) == set(rows.index) and set(rows["trace_id"]) == {t.info.trace_id for t in traces.values()}

    rome = traces["w-2"]  # the wrong tool
    root = rome.data.spans[0]
    assert root.name == "w-2" and root.inputs == "What is the weather in Rome?"
    assert root.get_attribute("expected") == [{"tool_name": "get_weather", "arguments": {"city": "Rome"}}]
    assert root.get_attribute("tools") == ["get_time", "get_weather"]
    assert root.outputs["predicted"] == [{"tool_name": "get_time", "arguments": {"city": "Rome"}}]
    assert root.outputs["outcome"] == "wrong" and root.outputs["full_match"] == 0.0
    assert root.outputs["latency_s"] == pytest.approx(rows.loc["w-2", "latency_s"])
    assert rome.info.tags["outcome"] == "wrong" and rome.info.tags["split"] == "train"
    model_call = next(span for span in rome.data.spans if span.name == "CountingLM.__call__")
    assert "What is the weather in Rome?" in model_call.inputs["messages"][-1]["content"]  # the prompt
    assert "get_time" in model_call.outputs[0]  # the model's answer, as it came
    assert not any(type(c).__name__ == "MlflowCallback" for c in dspy.settings.callbacks)  # autologging put back
    assert dspy.settings.track_usage == track_usage

    resumed = evaluate(str(suite_path), CountingLM(ANSWERS, adapter=ToolSelectionAdapter()), selector=SPEC,
                       split=None, run=run)
    assert len(_traces(uri, resumed.mlflow_run_id)) == len(load_suite(suite_path))  # the first five's too


def test_no_traces_without_mlflow(suite_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = evaluate(str(suite_path), CountingLM(ANSWERS, adapter=ToolSelectionAdapter()), selector=SPEC,
                      split=None, run=RunConfig(mlflow=False, progress=False, limit=2, run_dir=tmp_path / "run"))
    assert "trace_id" not in result.results
