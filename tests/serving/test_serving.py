import json
from pathlib import Path

import dspy
import pytest
import yaml
from dspy.adapters import JSONAdapter
from dspy.utils import DummyLM

from tool_selection.cli import main
from tool_selection.compiled import Manifest, ProgramStateError, save_compiled, tool_fingerprint
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector
from tool_selection.serving import ServedSelector, load_served_selector, log_selector
from tool_selection.toolset import ToolSet, load_tool_set

SPEC = "openai/served-test-model"


@pytest.fixture
def tracking(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.delenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", raising=False)  # serving must not need it
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def served_lm(monkeypatch):
    """Where the served model builds its LM from the spec, a scripted one; records the specs asked for."""
    import tool_selection.lm

    specs, answers = [], []

    def get_lm(spec, **kwargs):
        specs.append(spec)
        return DummyLM(answers, adapter=JSONAdapter())

    monkeypatch.setattr(tool_selection.lm, "get_lm", get_lm)
    return specs, answers


def _answer(calls):
    return {"reasoning": "The user wants the balance.", "tool_calls": json.dumps(calls)}


def _model_files(info):
    import mlflow

    return Path(mlflow.artifacts.download_artifacts(info.model_uri))


def test_logged_selector_loads_as_pyfunc_and_answers_plain_json(tracking, served_lm):
    specs, answers = served_lm
    selector = MultiToolSelector(load_tool_set("finance"), strategy="json-cot")
    name = selector.tools.names()[0]
    answers.extend([_answer([{"tool_name": name, "arguments": {}}])] * 3)
    info = log_selector(selector, SPEC)

    served = load_served_selector(info.model_uri)
    out = served.predict({"request": "What can you do?"})

    json.dumps(out)  # the scoring server must be able to return it
    assert out["tool_calls"][0]["tool_name"] == name
    assert out["reasoning"] == "The user wants the balance."
    assert isinstance(out["problems"], list)
    assert specs == [SPEC]


def test_a_served_selector_is_data_never_code_nor_a_pickle(tracking, served_lm):
    info = log_selector(MultiToolSelector(load_tool_set("finance"), strategy="json-cot"), SPEC)
    files = _model_files(info)
    flavor = yaml.safe_load((files / "MLmodel").read_text())["flavors"]["python_function"]
    assert flavor["loader_module"] == "tool_selection.served_model"  # imported from the installed package
    assert not {"model_code_path", "python_model", "artifacts"} & set(flavor) and not flavor.get("code")
    assert not [p for p in files.rglob("*") if p.suffix in (".py", ".pyc", ".pkl", ".pickle", ".cloudpickle")]
    program = next(files.rglob("program.json"))
    manifest = json.loads((program.parent / "manifest.json").read_text())
    assert manifest["tool_set"] == "finance" and manifest["model"] == SPEC and manifest["program_sha256"]
    assert sorted(p.name for p in program.parent.iterdir()) == ["manifest.json", "program.json"]


def _stored_model(tracking: Path) -> Path:
    """The logged model's directory in the store itself (what someone with write access to it can edit)."""
    return next(tracking.glob("mlruns/*/models/*/artifacts"))


def _plant_code(model: Path, marker: Path) -> None:
    """Python that records that it ran, where a models-from-code selector kept its model file, and where a loader
    that put the model directory on sys.path would import it from (a file already there keeps its code after it)."""
    for planted in (model / "served_model.py", model / "tool_selection" / "served_model.py"):
        original = planted.read_text() if planted.exists() else ""
        planted.parent.mkdir(exist_ok=True)
        planted.write_text(f"open({str(marker)!r}, 'w').write('ran')\n{original}")


def _load_with_served_selector(uri):
    return load_served_selector(uri).predict({"request": "What can you do?"})


def _load_with_mlflow(uri):
    import mlflow

    return mlflow.pyfunc.load_model(uri).predict({"request": "What can you do?"})


def _load_with_the_scoring_server(uri):
    """What ``mlflow models serve`` runs: its app's loader, then a POST to /invocations."""
    from fastapi.testclient import TestClient
    from mlflow.pyfunc import scoring_server

    app = scoring_server.init(scoring_server.load_model_with_mlflow_config(uri))
    response = TestClient(app).post("/invocations", json={"inputs": {"request": "What can you do?"}})
    assert response.status_code == 200, response.text
    return response.json()["predictions"]


def _load_with_toolsel_serve_selector(uri, monkeypatch):
    """``toolsel serve selector URI``, with uvicorn's loop replaced by one request to the app it was given."""
    import uvicorn
    from fastapi.testclient import TestClient

    answers = []

    def one_request(app, **kwargs):
        response = TestClient(app).post("/invocations", json={"inputs": {"request": "What can you do?"}})
        assert response.status_code == 200, response.text
        answers.append(response.json()["predictions"])

    monkeypatch.setattr(uvicorn, "run", one_request)
    assert main(["serve", "selector", uri]) == 0
    return answers[0]


LOAD_PATHS = {
    "load_served_selector": lambda uri, monkeypatch: _load_with_served_selector(uri),
    "mlflow.pyfunc.load_model": lambda uri, monkeypatch: _load_with_mlflow(uri),
    "mlflow models serve": lambda uri, monkeypatch: _load_with_the_scoring_server(uri),
    "toolsel serve selector": _load_with_toolsel_serve_selector,
}


@pytest.mark.parametrize("load", LOAD_PATHS.values(), ids=LOAD_PATHS.keys())
def test_code_planted_in_the_store_never_runs_when_the_model_loads(tracking, served_lm, load, monkeypatch):
    specs, answers = served_lm
    answers.append(_answer([]))
    info = log_selector(MultiToolSelector(load_tool_set("finance"), strategy="json-cot"), SPEC)
    marker = tracking / "planted-code-ran"
    _plant_code(_stored_model(tracking), marker)
    assert load(info.model_uri, monkeypatch)["tool_calls"] == []
    assert not marker.exists()


@pytest.mark.parametrize("edit", [
    {"loader_module": "mlflow.pyfunc.loaders.code_model", "model_code_path": "served_model.py"},
    {"code": "."},
    {"loader_module": "tool_selection.some_other_module"},
], ids=["models from code", "code on sys.path", "another loader"])
def test_an_mlmodel_edited_to_run_other_code_is_refused(tracking, served_lm, edit, capsys, monkeypatch):
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: pytest.fail("an edited model was served"))
    info = log_selector(MultiToolSelector(load_tool_set("finance"), strategy="json-cot"), SPEC)
    stored = _stored_model(tracking)
    marker = tracking / "planted-code-ran"
    _plant_code(stored, marker)
    mlmodel = yaml.safe_load((stored / "MLmodel").read_text())
    mlmodel["flavors"]["python_function"].update(edit)
    (stored / "MLmodel").write_text(yaml.safe_dump(mlmodel))
    with pytest.raises(ToolSelectionError, match="is not a served selector as log_selector writes it: .*"
                                                 "log the selector again: toolsel serve log"):
        load_served_selector(info.model_uri)
    assert main(["serve", "selector", info.model_uri]) == 2  # refused before uvicorn is started
    assert "is not a served selector" in capsys.readouterr().err
    assert not marker.exists()


def test_a_compiled_directory_is_served_with_its_demos_and_checked_when_loaded(tracking, served_lm, tmp_path):
    specs, answers = served_lm
    answers.append(_answer([]))
    finance = load_tool_set("finance")
    compiled = MultiToolSelector(finance, strategy="json-cot")
    compiled.select.predict.demos = [dspy.Example(request="hi", reasoning="none fits", tool_calls=[], augmented=True)]
    save_compiled(compiled, tmp_path / "prog", Manifest(tool_set="finance", tools=tool_fingerprint(finance.registry()),
                                                        model=SPEC, optimizer="bootstrap"))
    info = log_selector(tmp_path / "prog", SPEC)
    served = load_served_selector(info.model_uri)
    assert served.get_raw_model().selector.select.predict.demos[0]["request"] == "hi"
    assert served.predict({"request": "Tell me a joke."})["tool_calls"] == []

    stored = next(p for p in (tracking / "mlruns").rglob("program.json"))  # the logged artifact itself
    state = json.loads(stored.read_text())
    state["select.predict"]["config"] = {"api_base": "http://127.0.0.1:8765/v1"}
    stored.write_text(json.dumps(state))
    with pytest.raises(ProgramStateError):
        load_served_selector(info.model_uri)


def test_the_model_is_logged_by_spec_never_as_an_lm_object(tracking):
    with pytest.raises(TypeError, match="stores its model by spec"):
        log_selector(MultiToolSelector(load_tool_set("finance"), strategy="json-cot"), DummyLM([_answer([])]))


def test_tools_that_no_tool_set_name_finds_are_refused(tracking):
    from tests.core.tools_fixture import Add, Echo

    with pytest.raises(ToolSelectionError, match="rebuilds its tools from a tool set name"):
        log_selector(MultiToolSelector(ToolSet(name="fixture", tools=(Echo, Add)), strategy="json-cot"), SPEC)


def test_served_selector_reports_unknown_tools_as_problems():
    selector = MultiToolSelector(load_tool_set("finance"), strategy="json-cot")
    lm = DummyLM([_answer([{"tool_name": "launch_rocket", "arguments": {}}])], adapter=JSONAdapter())
    with dspy.context(lm=lm):
        out = ServedSelector(selector)(request="Launch it.")
    assert [p["kind"] for p in out.problems] == ["unknown_tool"]


def test_served_selector_needs_tools():
    with pytest.raises(Exception, match="needs its tools"):
        ServedSelector(MultiToolSelector(strategy="json-cot"))


def test_logging_leaves_no_active_model_behind(tracking):
    import mlflow

    log_selector(MultiToolSelector(load_tool_set("finance"), strategy="json-cot"), SPEC)
    assert mlflow.get_active_model_id() is None  # else later runs' metrics link to it, even in other stores


def test_the_cli_prints_serve_commands_without_pickle(tracking, capsys):
    assert main(["serve", "log", "--tool-set", "finance", "--model", SPEC]) == 0
    out = capsys.readouterr().out
    assert "toolsel serve selector models:/" in out
    assert "mlflow models serve -m models:/" in out and "--env-manager local" in out
    assert "PICKLE" not in out
