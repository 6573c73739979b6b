"""The stuck-detection notebook runs end to end on a small benchmark's output directory."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "stuck_detection.ipynb"


def test_notebook_is_committed_with_its_outputs():
    """``make notebooks`` writes it back executed, so that it reads as results on the web."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3  # its three figures


def test_stuck_detection_notebook_executes(bench_run, tmp_path, monkeypatch):
    result, _ = bench_run
    monkeypatch.setenv("STUCK_BENCH_DIR", str(result.out_dir))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()

    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    outputs = "\n".join(o.get("text", "") for c in code_cells for o in c.get("outputs", []))
    assert f"Benchmark {result.out_dir}: suite tiny, 1 pair(s)" in outputs
    assert "test/weak -> test/strong:" in outputs  # the recommendation line
    for name in ("stuck_accuracy_vs_escalation.png", "stuck_cost_quality.png", "stuck_score_distributions.png"):
        assert (tmp_path / name).stat().st_size > 5000
