import json

import dspy
import pytest
from dspy.adapters import JSONAdapter
from dspy.utils import DummyLM

from tool_selection.selector import MultiToolSelector
from tool_selection.serving import ServedSelector, load_served_selector, log_selector
from tool_selection.toolset import load_tool_set


@pytest.fixture
def tracking(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "true")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _answer(calls):
    return {"reasoning": "The user wants the balance.", "tool_calls": json.dumps(calls)}


def test_logged_selector_loads_as_pyfunc_and_answers_plain_json(tracking):
    selector = MultiToolSelector(load_tool_set("finance"))
    name = selector.tools.names()[0]
    lm = DummyLM([_answer([{"tool_name": name, "arguments": {}}])] * 3, adapter=JSONAdapter())
    info = log_selector(selector, lm)

    served = load_served_selector(info.model_uri)
    out = served.predict({"request": "What can you do?"})

    json.dumps(out)  # the scoring server must be able to return it
    assert out["tool_calls"][0]["tool_name"] == name
    assert out["reasoning"] == "The user wants the balance."
    assert isinstance(out["problems"], list)


def test_served_selector_reports_unknown_tools_as_problems():
    selector = MultiToolSelector(load_tool_set("finance"))
    lm = DummyLM([_answer([{"tool_name": "launch_rocket", "arguments": {}}])], adapter=JSONAdapter())
    with dspy.context(lm=lm):
        out = ServedSelector(selector)(request="Launch it.")
    assert [p["kind"] for p in out.problems] == ["unknown_tool"]


def test_served_selector_needs_tools():
    with pytest.raises(Exception, match="needs its tools"):
        ServedSelector(MultiToolSelector())


def test_logging_leaves_no_active_model_behind(tracking):
    import mlflow

    selector = MultiToolSelector(load_tool_set("finance"))
    log_selector(selector, DummyLM([_answer([])], adapter=JSONAdapter()))
    assert mlflow.get_active_model_id() is None  # else later runs' metrics link to it, even in other stores
