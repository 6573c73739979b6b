"""The Python side: a light import, a documented top-level API, the same decisions as the CLI, the Python blocks
of the docs' "From Python" page and the quickstart notebook executed for real, and rich display in Jupyter."""

import json
import re
import subprocess
import sys
from pathlib import Path

import dspy
import pandas as pd
import pytest

import tool_selection
from tool_selection import MultiToolDecision, ToolCall

ROOT = Path(__file__).parents[2]
MODEL = "qwen2.5-coder-0.5b"


def test_import_is_light_and_every_public_name_resolves():
    code = "import sys, tool_selection; print('dspy' in sys.modules, 'evals' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split() == ["False",
                                                                                                         "False"]
    assert tool_selection.__all__ == sorted(tool_selection.__all__)
    for name in tool_selection.__all__:
        assert getattr(tool_selection, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        tool_selection.nonesuch  # noqa: B018


def test_the_harness_package_resolves_its_public_names():
    import evals

    assert evals.__all__ == sorted(evals.__all__)
    for name in evals.__all__:
        assert getattr(evals, name) is not None, name
    from evals import evaluate, optimize

    assert callable(evaluate) and callable(optimize)


def test_the_core_does_not_import_the_harness():
    """Arrows point down: ``tool_selection`` never names ``evals`` (the CLI finds it through entry points)."""
    import ast

    for path in sorted((ROOT / "tool_selection").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                       [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(m == "evals" or m.startswith("evals.") for m in modules), path
        assert '"evals.' not in path.read_text(), path


def test_the_default_model_is_written_in_one_module():
    from tool_selection.defaults import DEFAULT_MODEL, DEFAULT_MODEL_NAME

    assert DEFAULT_MODEL == f"local:{DEFAULT_MODEL_NAME}"
    # an assignment, a parameter's default or an argparse default (examples in docstrings pass the name on)
    defaults = re.compile(r"""(^[ \t]*\w+[ \t]*(:[^=\n]+)?=[ \t]*|default=|\w+: str = )["'](local:)?qwen2\.5-coder-0\.5b["']""",
                          re.MULTILINE)
    for package in ("tool_selection", "evals", "tool_sets"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name != "defaults.py":
                assert not defaults.search(path.read_text()), path


def test_a_decision_renders_as_html_with_its_problems():
    html = MultiToolDecision(reasoning="x < y", tool_calls=[ToolCall(tool_name="f", arguments={"a": 1})],
                             parse_error="cut off")._repr_html_()
    assert "<code>f</code>" in html and "x &lt; y" in html and "parse error" in html
    assert "<i>no call</i>" in MultiToolDecision()._repr_html_()


def test_an_eval_result_renders_its_summary_tags_and_parse_failures():
    from evals.metrics import summarize, summarize_by_tag
    from evals.runner import EvalResult

    rows = pd.DataFrame({"id": ["a", "b"], "tags": [["single"], ["single"]], "full_match": [1.0, 0.0],
                         "tool_exact": [1.0, 0.0], "f1": [1.0, 0.0], "args_correct": [1.0, float("nan")],
                         "abstention_correct": [float("nan")] * 2, "parse_error": [None, "bad JSON"],
                         "parse_failure": [0.0, 1.0]})
    result = EvalResult(rows, summarize(rows), summarize_by_tag(rows), params={"suite": "s", "strategy": "native"})
    html = result._repr_html_()
    assert "suite s, strategy native: 2 cases" in html and "accuracy" in html and "bad JSON" in html


def _local_model_or_skip():
    pytest.importorskip("llama_cpp")
    from tool_selection.lm.assemble import model_status

    if model_status(MODEL).state == "missing":
        pytest.skip(f"the {MODEL} model is not assembled (toolsel models pull {MODEL})")


@pytest.mark.local_model
def test_python_and_the_cli_give_identical_decisions(tmp_path, monkeypatch):
    """The CLI's run fills DSPy's cache; the Python selector, configured with only the LM and the relevance model
    the CLI applies by default, must send the same prompts (so it is answered from that cache) and reach the same
    decisions."""
    _local_model_or_skip()
    from dspy.clients.cache import Cache

    from evals.suite import load_suite
    from tool_selection import MultiToolSelector, get_lm, load_tool_set
    from tool_selection.cli import main
    from tool_selection.relevance import shipped_relevance_model

    monkeypatch.setattr(dspy, "cache", Cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=None))
    run_dir = tmp_path / "run"
    assert main(["eval", "--suite", "finance", "--split", "test", "--limit", "2", "--model", f"local:{MODEL}",
                 "--run-dir", str(run_dir), "--no-mlflow", "--cache"]) == 0
    rows = pd.read_parquet(run_dir / "results.parquet").set_index("id")

    dspy.configure(lm=get_lm(f"local:{MODEL}"))
    selector = MultiToolSelector(load_tool_set("finance"), relevance=shipped_relevance_model(MODEL))
    for case in load_suite("finance").split("test").limit(2):
        decision = selector.decide(case.prompt)
        assert json.dumps([c.model_dump() for c in decision.tool_calls], ensure_ascii=False) == rows.loc[case.id,
                                                                                                       "predicted"]
        assert decision.reasoning == rows.loc[case.id, "reasoning"]


def _python_blocks() -> list[str]:
    page = (ROOT / "docs" / "guide" / "python.md").read_text()
    return re.findall(r"```python\n(.*?)```", page, re.DOTALL)


def test_the_python_page_has_blocks_to_run():
    blocks = _python_blocks()
    assert len(blocks) >= 3 and any("MultiToolSelector" in b for b in blocks) and any("evaluate(" in b for b in blocks)


@pytest.mark.local_model
def test_the_python_page_blocks_run(tmp_path, monkeypatch):
    _local_model_or_skip()
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in _python_blocks():
        exec(compile(block, "docs/guide/python.md", "exec"), namespace)
    assert namespace["json_cot"].results.shape[0] == 4
    assert namespace["compiled"].strategy_name == "native-strict-cover"  # the default, auto, as a local model runs it


@pytest.mark.local_model
def test_the_quickstart_notebook_runs_on_the_embedded_model(tmp_path, monkeypatch):
    _local_model_or_skip()
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("QUICKSTART_LIMIT", "2")
    notebook = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    html = "".join(o.get("data", {}).get("text/html", "") for c in notebook.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    assert "<th>tool</th>" in html and "value [95% CI]" in html
    assert (tmp_path / "quickstart_accuracy_per_tag.png").stat().st_size > 1000
    assert (tmp_path / "programs" / "quickstart" / "manifest.json").exists()
