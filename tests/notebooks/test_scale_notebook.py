"""The scale notebook runs end to end on a 1,000-tool registry with BM25 (no embeddings) and the kept rows."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytest.importorskip("bm25s", reason="the retrieval extra is not installed")

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "scale.ipynb"


def test_scale_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("SCALE_RETRIEVER", "bm25")  # the kernel inherits the environment
    monkeypatch.setenv("PYTHONWARNINGS", "ignore")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = "\n".join(str(o.get("text") or o.get("data", {}).get("text/plain", ""))
                        for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "1000 tools in" in outputs and "catalogs" in outputs
    assert "(expected)" in outputs  # the shown tools mark the expected one
    assert "best catalog, 1 of the others' best beside" in outputs  # the kept rows' table
    assert "What's on tomorrow?" in outputs  # a case the route lost, from the kept per-case rows
    assert (tmp_path / "scale_vs_own.png").stat().st_size > 1000
    assert (tmp_path / "examples-train.json").is_file()
