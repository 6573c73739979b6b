"""``toolsel sweep``: plans from flags and sweep files (the axes' product, refused before any model loads when an
axis is bad), and a sweep with scripted LMs end to end: one folder per cell, the table, the paired rows, the
figure, a failed cell reported, and a re-run that reads finished cells back without asking the model."""

import argparse
import math
from pathlib import Path

import pytest

from evals.reports.collect import collect
from evals.sweep import SweepError, SweepPlan, parse_baseline, run_sweep
from evals.sweep_cli import add_arguments, sweep_plan
from tests.evals.test_runner import ANSWERS, CountingLM
from tool_selection.cli import main
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec

SWEEPS = Path(__file__).resolve().parents[2] / "evals" / "sweeps"


def _plan(*argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return sweep_plan(parser.parse_args(list(argv)))


def test_flags_make_the_product_of_the_axes():
    plan = _plan("--suite", "treasure_hunt,events", "--strategy", "native,native-strict", "--limit", "5",
                 "--no-mlflow")
    cells = plan.cells()
    assert [(c.suite, c.model, c.spec.strategy) for c in cells] == [
        ("treasure_hunt", "local:qwen2.5-coder-0.5b", "native"),
        ("treasure_hunt", "local:qwen2.5-coder-0.5b", "native-strict"),
        ("events", "local:qwen2.5-coder-0.5b", "native"), ("events", "local:qwen2.5-coder-0.5b", "native-strict")]
    assert plan.run.limit == 5 and not plan.run.mlflow and plan.split == "test"
    assert len({c.folder for c in cells}) == 4 and cells[0].folder.startswith("treasure-hunt-local-qwen2.5")
    assert plan.name == "treasure-hunt-events-native-native-strict"
    assert plan.baseline_of(cells[3], cells) is cells[2]  # the same suite, the first strategy
    assert plan.cells()[0].folder == cells[0].folder  # the same plan, the same folders: a re-run resumes


def test_selector_axes_go_into_each_cells_spec():
    plan = _plan("--strategy", "gate+native", "--gate-threshold=-inf,0.3", "--retrieve", "3", "--rerank", "5,6",
                 "--baseline", "gate_threshold=0.3")
    cells = plan.cells()
    assert [(c.spec.gate.threshold, c.spec.retrieval.k, c.spec.retrieval.rerank) for c in cells] == [
        (float("-inf"), 3, 5), (float("-inf"), 3, 6), (0.3, 3, 5), (0.3, 3, 6)]
    assert plan.baseline_of(cells[1], cells) is cells[3]
    assert "retrieve=3" in cells[0].settings and "gate_threshold=-inf" in cells[0].settings


def test_a_sweep_file_gives_the_plan_and_flags_change_it(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("split: dev\nselector: {relevance: none}\nrun: {limit: 3, mlflow: false}\n"
                    "axes: {suite: [events], strategy: [native, json]}\nbaseline: {strategy: json}\n")
    plan = SweepPlan.load_yaml(path)
    assert (plan.name, plan.split, plan.selector.relevance, plan.run.limit) == ("mine", "dev", "none", 3)
    assert plan.baseline_values == {"strategy": "json"}
    changed = _plan(str(path), "--model", "local:a,local:b", "--limit", "4", "--name", "other")
    assert changed.run.limit == 4 and not changed.run.mlflow and changed.axes["strategy"] == ["native", "json"]
    assert changed.name == "other" and len(changed.cells()) == 4
    assert SweepPlan.load_yaml(path).to_yaml()  # and back: what sweep.yaml holds loads again
    for shipped in SWEEPS.glob("*.yaml"):  # the shipped sweep files name known suites and strategies
        assert SweepPlan.load_yaml(shipped).cells()


@pytest.mark.parametrize(("argv", "message"), [
    (["--suite", "treasure_hunt,nosuch"], "suite 'nosuch'"),
    (["--strategy", "native,bogus"], "Unknown selection strategy 'bogus'"),
    (["--strategy", "native", "--baseline", "strategy=json"], "baseline strategy=json is not among"),
    (["--suite", "events,finance", "--baseline", "suite=events"], "cannot name a suite"),
    (["--baseline", "colour=red"], "give AXIS=VALUE pairs"),
    (["--retrieve", "2", "--baseline", "retrieve=two"], "retrieve value 'two': 'two' is not a whole number"),
    (["--retrieve", "two"], "retrieve value 'two': 'two' is not a whole number"),
    (["--retriever", "bm25"], "give retrieve \\(--retrieve\\) too"),
    (["--run-dir", "somewhere"], "name the sweep's folder with --out"),
])
def test_bad_axes_are_refused_before_anything_runs(argv, message):
    with pytest.raises(ToolSelectionError, match=message):
        _plan(*argv).cells()


def test_unknown_axes_in_a_file_are_named():
    with pytest.raises(SweepError, match="unknown axis 'colour'"):
        SweepPlan.build(name="x", axes={"colour": ["red"]})
    assert parse_baseline("strategy=native, gate-threshold=0.5") == {"strategy": "native", "gate_threshold": 0.5}


def test_a_sweep_runs_each_cell_then_writes_the_table_the_paired_rows_and_the_figure(suite_path, tmp_path):
    plan = SweepPlan.build(name="mini", split="all", selector=SelectorSpec(relevance="none"),
                           run=RunConfig(mlflow=False, progress=False),
                           axes={"suite": [str(suite_path)], "model": ["scripted", "broken"],
                                 "strategy": ["json-cot", "json"]})
    lines: list[str] = []
    scripted, broken = CountingLM(ANSWERS), CountingLM(ANSWERS, fail_on=["?", "joke"])
    result = run_sweep(plan, tmp_path / "sweep", lms={"scripted": scripted, "broken": broken},
                       progress=lines.append)
    cells = result.cells
    assert list(cells["status"]) == ["ran", "ran", "failed", "failed"]
    assert "first 3 cases all failed" in cells["error"].iloc[2]
    assert lines[1].startswith("cell 1/4: suite ") and any(line.startswith("cell 3/4") and "failed" in line
                                                           for line in lines)
    first = cells.iloc[0]
    assert (first["suite"], first["model"], first["strategy"], first["cases"]) == ("mini", "scripted", "json-cot", 8)
    assert first["accuracy"] == pytest.approx(4 / 8) and first["accuracy_low"] <= 0.5 <= first["accuracy_high"]
    assert first["abstention"] == 1.0 and first["false_abstention"] == 0.0
    # DSPy's dummy LM records no usage, as a cached answer: time and tokens leave such cases out, and say so
    assert first["cached"] == 8 and math.isnan(first["tokens_per_case"]) and math.isnan(first["seconds_per_case"])
    assert first["settings"] == ""  # zero-shot, no relevance model
    # the json cell against the json-cot cell (the baseline: each axis' first value), on the same eight cases
    assert len(result.paired) == 1
    paired = result.paired.iloc[0]
    assert (paired["cell"], paired["baseline"], paired["cases"]) == ("model=scripted, strategy=json",
                                                                     "strategy=json-cot", 8)
    assert paired["low_points"] <= paired["difference_points"] <= paired["high_points"]
    out = tmp_path / "sweep"
    for name in ("sweep.yaml", "sweep.csv", "sweep_paired.csv", "sweep.md", "sweep.png"):
        assert (out / name).is_file(), name
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / cells["folder"].iloc[0] / "summary.json").is_file()
    markdown = (out / "sweep.md").read_text()
    assert "| mini | scripted | json-cot |" in markdown and "50.0 [" in markdown and "failed:" in markdown
    assert SweepPlan.load_yaml(out / "sweep.yaml") == plan  # the plan, written first, loads back
    reported = {key[:2] for key in collect([out]).runs}  # toolsel report reads the sweep's folder
    assert {("dummy", "json-cot"), ("dummy", "json")} <= reported

    again_scripted = CountingLM(ANSWERS)
    lines.clear()
    again = run_sweep(plan, out, lms={"scripted": again_scripted, "broken": CountingLM(ANSWERS)},
                      progress=lines.append)
    assert again_scripted.calls == 0  # finished cells are read back from their rows
    assert list(again.cells["status"]) == ["done before", "done before", "ran", "ran"]  # failed ones retried
    assert again.cells["accuracy"].iloc[0] == pytest.approx(first["accuracy"]) and len(again.paired) == 3
    assert "finished before" in lines[1]


def test_the_command_line_runs_a_sweep_and_a_bad_one_stops_with_one_message(suite_path, tmp_path, capsys,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--suite", "nosuch", "--model", "local:qwen2.5-coder-0.5b"]) == 2
    assert "Unknown suite 'nosuch'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert "toolsel sweep --suite treasure_hunt,events" in capsys.readouterr().out


def test_numeric_axis_values_written_as_text_compare_as_numbers():
    plan = SweepPlan.build(name="x", axes={"strategy": ["gate+native"], "gate_threshold": ["-inf", 0.3]},
                           baseline={"gate_threshold": "0.3"})
    assert plan.axes["gate_threshold"] == [float("-inf"), 0.3] and plan.baseline == {"gate_threshold": 0.3}
    with pytest.raises(SweepError, match="retrieve value 'two': 'two' is not a whole number"):
        SweepPlan.build(name="x", axes={"retrieve": ["two"]})
