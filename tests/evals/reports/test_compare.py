"""``toolsel eval compare``: what each run is, one unit per metric, and a cached side's cost left out."""

import pandas as pd

from evals.reports.compare import comparison, format_comparison
from evals.runs import Run, describe, open_run, run_label
from tool_selection.cli import main

PARAMS = {"suite": "events", "split": "test", "model": "local:qwen2.5-coder-0.5b", "strategy": "native",
          "program": "zero-shot"}


def _rows(full_match, tokens):
    return pd.DataFrame({"id": [f"c{i}" for i in range(len(full_match))], "full_match": full_match,
                         "error": 0.0, "latency_s": [0.1 if tokens else 0.0] * len(full_match),
                         "input_tokens": [tokens] * len(full_match), "output_tokens": [tokens] * len(full_match)})


def test_runs_name_what_they_are():
    assert run_label(PARAMS) == "events-test-local-qwen2.5-coder-0.5b-native-zero-shot"
    assert run_label({**PARAMS, "strategy": "text:call", "program": "programs/events-mipro"}).endswith(
        "-text-call-events-mipro")
    assert describe(PARAMS) == ("suite events (test), model local:qwen2.5-coder-0.5b, strategy native, "
                                "program zero-shot")


def test_a_cached_side_is_flagged_and_its_cost_is_not_compared():
    a = Run("A", _rows([1.0, 0.0, 0.0, 1.0], 100), PARAMS)
    b = Run("B", _rows([1.0, 1.0, 0.0, 1.0], 0), {**PARAMS, "strategy": "native-strict"})
    result = comparison(a, b)
    assert "latency_s" not in set(result.table["metric"]) and "accuracy" in set(result.table["metric"])
    text = format_comparison(result)
    assert "strategy native-strict" in text and "differ in: strategy" in text
    assert "4 of 4 answers came from DSPy's cache" in text and "latency and tokens are not compared" in text
    accuracy = next(line for line in text.splitlines() if line.startswith("accuracy"))
    assert accuracy.split()[1:6] == ["%", "4", "50.0", "75.0", "+25.0"]  # percent, and points for B-A


def test_uncached_runs_compare_their_cost(tmp_path, capsys):
    for name, matches in (("a", [1.0, 0.0]), ("b", [1.0, 1.0])):
        (tmp_path / name).mkdir()
        _rows(matches, 50).to_parquet(tmp_path / name / "results.parquet")
        (tmp_path / name / "summary.json").write_text(f'{{"params": {{"suite": "events", "strategy": "{name}"}}}}')
    assert open_run(tmp_path / "a").params["strategy"] == "a"
    assert main(["eval", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--plot", str(tmp_path / "d.png")]) == 0
    out = capsys.readouterr().out
    assert "latency_s" in out and "note:" not in out and (tmp_path / "d.png").read_bytes().startswith(b"\x89PNG")


def test_a_logged_run_carries_its_cases_as_a_table_and_view_finds_it(tmp_path):
    import mlflow
    import pytest

    from evals.reports.view import resolve_run, run_address
    from evals.tracking import CASES_TABLE, log_run
    from tool_selection.errors import ToolSelectionError
    from tool_selection.run_config import RunConfig

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    rows = _rows([1.0, 0.0], 10).assign(tags=[["single"], ["multi", "x"]], request=["a?", "b?"])
    run_id = log_run(params=PARAMS, summary={"accuracy": 0.5}, run=RunConfig(tracking_uri=uri), cases=rows)
    table = mlflow.load_table(CASES_TABLE, run_ids=[run_id])
    assert list(table["outcome"]) == ["right", "wrong"] and list(table["tags"]) == ["single", "multi, x"]

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(ToolSelectionError, match="has no mlflow.json: it was run with --no-mlflow"):
        resolve_run(str(run_dir), None)
    (run_dir / "mlflow.json").write_text(f'{{"run_id": "{run_id}", "tracking_uri": "{uri}"}}')
    assert resolve_run(str(run_dir), None) == (run_id, uri)
    assert run_address("http://127.0.0.1:5000", uri, run_id).endswith(f"/runs/{run_id}")
    with pytest.raises(ToolSelectionError, match="No MLflow run 'nope'"):
        run_address("http://127.0.0.1:5000", uri, "nope")
