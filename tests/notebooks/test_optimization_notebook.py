"""The optimization notebook runs end to end on a small logged optimization run, its zero-shot baseline and a
reference model (DSPy's dummy LM, no real model); and says so plainly when there are no runs."""

from pathlib import Path

import pytest

from evals.evaluation import evaluate
from evals.optimization import optimize
from tests.evals.test_runner import ANSWERS, CountingLM, calls
from tool_selection.run_config import RunConfig
from tool_selection.selector import ToolSelectionAdapter
from tool_selection.spec import SelectorSpec

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "optimization.ipynb"

# Right on all five test cases of the mini suite (ANSWERS gets Lima and Baku wrong: 3 of 5).
GOOD = {
    **ANSWERS,
    "Lima": {"reasoning": "weather", "tool_calls": calls(("get_weather", {"city": "Lima"}))},
    "Baku": {"reasoning": "weather", "tool_calls": calls(("get_weather", {"city": "Baku"}))},
}


class LearnerLM(CountingLM):
    """Answers like ANSWERS zero-shot, and right on every case once the prompt carries demonstrations."""

    def forward(self, prompt=None, messages=None, **kwargs):
        self.answers = GOOD if len(messages) > 2 else ANSWERS  # system + request, or demos in between
        return super().forward(prompt=prompt, messages=messages, **kwargs)


def named(lm, name):
    lm.model = name
    return lm


def execute(tmp_path, **parameters) -> str:
    """Run the notebook with ``parameters`` injected after its parameters cell; return its text outputs."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    at = next(i for i, cell in enumerate(notebook.cells) if "parameters" in cell.metadata.get("tags", []))
    injected = "\n".join(f"{name} = {value!r}" for name, value in parameters.items())
    notebook.cells.insert(at + 1, nbformat.v4.new_code_cell(injected))
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    return "\n".join(output.get("text", "") or output.get("data", {}).get("text/plain", "")
                     for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", []))


def test_optimization_notebook_compares_before_and_after(suite_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # the notebook must use the injected URI
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    adapter = ToolSelectionAdapter()
    run = RunConfig(progress=False, tracking_uri=uri)
    evaluate(str(suite_path), named(LearnerLM(ANSWERS, adapter=adapter), "student-small"), split="test",
             selector=SelectorSpec(strategy="json-cot"), run=run.replace(run_dir=tmp_path / "zero-shot"))
    evaluate(str(suite_path), named(CountingLM(GOOD, adapter=adapter), "reference-large"), split="test",
             selector=SelectorSpec(strategy="json-cot"), run=run.replace(run_dir=tmp_path / "reference"))
    result = optimize(str(suite_path), named(LearnerLM(ANSWERS, adapter=adapter), "student-small"),
                      optimizer="bootstrap", selector=SelectorSpec(strategy="json-cot", relevance="none"),
                      run=RunConfig(run_dir=tmp_path / "program", tracking_uri=uri))
    assert result.manifest.scores["test_accuracy"] == 1.0  # the demonstrations took

    outputs = execute(tmp_path, TRACKING_URI=uri)

    assert "1 optimization runs and 2 evaluation runs" in outputs
    assert "No zero-shot baseline" not in outputs
    row = next(line for line in outputs.splitlines() if "student-small" in line and "bootstrap" in line)
    assert "0.600 [" in row  # before: 3 of 5, with its interval
    assert "1.000 [1.000, 1.000]" in row  # after
    assert "+0.400 [" in row  # the gain, with a paired interval from both runs' per-case results
    assert "mini: reference reference-large zero-shot 1.000" in outputs
    assert (tmp_path / "optimization_accuracy.png").stat().st_size > 1000
    assert (tmp_path / "optimization_cost.png").stat().st_size > 1000


def test_optimization_notebook_without_runs_says_so(tmp_path):
    store = tmp_path / "mlflow.db"
    outputs = execute(tmp_path, TRACKING_URI=f"sqlite:///{store}")

    assert "No optimization runs in" in outputs and "toolsel optimize" in outputs
    assert "Nothing to plot" in outputs
    assert not store.exists()  # looking does not create a store
    assert not (tmp_path / "optimization_accuracy.png").exists()
