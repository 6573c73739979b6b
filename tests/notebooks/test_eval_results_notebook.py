"""The results notebook runs end to end on a small pair of logged runs."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from evals.evaluation import evaluate
from tests.evals.test_runner import ANSWERS, CountingLM
from tool_selection.run_config import RunConfig
from tool_selection.selector import ToolSelectionAdapter
from tool_selection.spec import SelectorSpec

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "eval_results.ipynb"


def test_eval_results_notebook_executes(suite_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    for name, answers in (("model-a", ANSWERS), ("model-b", {**ANSWERS, "Oslo": ANSWERS["Rome"]})):
        lm = CountingLM(answers, adapter=ToolSelectionAdapter())
        lm.model = name
        evaluate(str(suite_path), lm, split=None, selector=SelectorSpec(strategy="json-cot"),
                 run=RunConfig(progress=False, run_dir=tmp_path / name))

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = "\n".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "2 evaluation runs" in outputs
    assert "model-a on mini" in outputs or "model-b on mini" in outputs
    assert "paired: B = model-b (json-cot) minus A = model-a (json-cot) on mini" in outputs
    assert (tmp_path / "accuracy_per_model.png").stat().st_size > 1000
    assert (tmp_path / "accuracy_per_tag.png").stat().st_size > 1000
