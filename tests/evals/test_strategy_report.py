"""The README's strategy tables: paired rows per suite, and the domain suites pooled."""

import json

import pandas as pd
import pytest

from evals.benchmarks.strategy_report import fastest_per_correct, paired_table


def _rows(prefix, outcomes, seconds):
    return pd.DataFrame({"id": [f"{prefix}-{i}" for i in range(len(outcomes))], "full_match": outcomes,
                         "latency_s": seconds})


def test_paired_rows_per_suite_and_the_domain_suites_pooled():
    model = "qwen2.5-coder-0.5b"
    runs = {
        (model, "json-cot", "events"): _rows("events", [0, 0, 1, 0], 8.0),
        (model, "native", "events"): _rows("events", [1, 1, 1, 0], 3.0),
        (model, "json-cot", "finance"): _rows("finance", [0, 1], 8.0),
        (model, "native", "finance"): _rows("finance", [1, 1], 3.0),
        (model, "json-cot", "bfcl_multiple"): _rows("bfcl", [1, 0], 8.0),
        (model, "gate+native", "bfcl_multiple"): _rows("bfcl", [1, 1], 3.0),
    }
    table = paired_table(runs)
    assert "| events | 0.5b | 4 | 25.0 | 75.0 | +50.0 [" in table
    assert "| 2 domain suites pooled | 0.5b | 6 | 33.3 | 83.3 | +50.0 [" in table
    assert "| bfcl_multiple | 0.5b | 2 | 50.0 | 100.0 |" in table and "pooled | 0.5b | 8" not in table
    assert "- events, 0.5b: native (4.0 s per correct decision)" in fastest_per_correct(runs)


def test_every_other_strategy_is_paired_with_native_once():
    from evals.benchmarks.strategy_report import NAMED_PAIRS, strategy_pairs

    model = "qwen2.5-coder-0.5b"
    runs = {
        (model, "gate+native", "bfcl_multiple"): _rows("bfcl", [1, 1, 0], 3.0),
        (model, "text:tags", "bfcl_multiple"): _rows("bfcl", [1, 0, 0], 3.0),
        (model, "native-cot", "bfcl_multiple"): _rows("bfcl", [1, 1, 1], 5.0),
        (model, "json-cot", "bfcl_multiple"): _rows("bfcl", [0, 0, 0], 8.0),
    }
    pairs = strategy_pairs(runs)
    assert pairs == [*NAMED_PAIRS, ("native", "native-cot"), ("native", "text:tags")]  # json-cot: already named
    assert "| bfcl_multiple | 0.5b | 3 | 66.7 | 33.3 | -33.3 [" in paired_table(runs, "native", "text:tags")
    assert paired_table(runs, "native-drop", "native-strict").count("\n") == 1  # no such runs: header only


def test_the_optimization_report_pairs_each_program_with_the_zero_shot_rows():
    from evals.benchmarks.report import paired_accuracy

    before = _rows("case", [0] * 20 + [1] * 5, 1.0)
    after = _rows("case", [1] * 20 + [1] * 5, 1.0)
    text = paired_accuracy(before, after)
    assert text.startswith("+80.0 [") and ", p=0.000" in text and "n.s." not in text
    assert paired_accuracy(before, before).startswith("+0.0 [+0.0, +0.0]") and "(n.s.)" in paired_accuracy(before, before)
    assert paired_accuracy(None, after) == "-"


def test_the_stuck_report_pairs_the_cascade_with_the_secondary_alone():
    from evals.benchmarks.report import routed_vs_secondary

    cases = pd.DataFrame({"id": [f"c{i}" for i in range(4)], "primary_correct": [1.0, 0.0, 0.0, 1.0],
                          "secondary_correct": [1.0, 1.0, 1.0, 0.0], "score_validation": [0.0, 1.0, 0.0, float("nan")]})
    # escalated: c1 (score 1) and c3 (unscored counts as stuck); routed correct: c0, c1 -> 2 of 4, secondary 3 of 4
    assert routed_vs_secondary(cases, "validation", 0.5).startswith("-25.0 [")
    assert routed_vs_secondary(cases, "confidence", 0.5) == "-"


def test_the_accuracy_plot_draws_each_run_at_its_accuracy_one_panel_per_model(tmp_path):
    from evals.benchmarks.strategy_report import accuracy_figure, plot_accuracy

    small, large = "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"
    runs = {
        (small, "json-cot", "events"): _rows("events", [0, 0, 1, 0], 8.0),
        (small, "gate+native", "events"): _rows("events", [1, 1, 1, 0], 3.0),
        (small, "native", "finance"): _rows("finance", [1, 0], 3.0),
        (large, "native", "events"): _rows("events", [1, 1, 1, 1], 3.0),
    }
    fig = accuracy_figure(runs)
    left, right = fig.axes
    assert (left.get_title(), right.get_title()) == (small, large)
    assert [tick.get_text() for tick in left.get_yticklabels()] == ["finance", "events"]
    points = sorted((bar.lines[0].get_xdata()[0], bar.get_label()) for bar in left.containers)
    assert points == [(25.0, "json-cot"), (50.0, "native"), (75.0, "native")]  # gate+native stands for native
    assert sorted(text.get_text() for text in left.get_legend().get_texts()) == ["json-cot", "native"]
    path = plot_accuracy(runs, tmp_path / "figures" / "strategies.png")
    assert path.read_bytes().startswith(b"\x89PNG")


def test_kept_runs_hold_the_text_files_and_load_as_the_run_did(tmp_path):
    from evals.benchmarks.keep_results import keep_results
    from evals.runner import load_results

    run = tmp_path / "runs" / "qwen2.5-coder-0.5b" / "native" / "events"
    run.mkdir(parents=True)
    rows = _rows("events", [1, 0, 1], 2.0)
    (run / "results.jsonl").write_text(rows.to_json(orient="records", lines=True))
    (run / "summary.json").write_text('{"params": {}, "summary": {}}')
    rows.iloc[:1].to_parquet(run / "results.parquet")  # a stale table must not shadow the rows
    (tmp_path / "runs" / "unfinished").mkdir()
    (tmp_path / "runs" / "unfinished" / "results.jsonl").write_text("{}\n")  # no summary: not finished
    kept = keep_results(tmp_path / "runs", tmp_path / "results")
    assert kept == [tmp_path / "results" / "qwen2.5-coder-0.5b" / "native" / "events"]
    assert sorted(p.name for p in kept[0].iterdir()) == ["results.jsonl", "summary.json"]
    assert load_results(kept[0])["full_match"].tolist() == [1, 0, 1]
    with pytest.raises(FileNotFoundError, match="not a directory of runs"):
        keep_results(tmp_path / "missing", tmp_path / "results")


def test_a_kept_run_names_its_suite_file_relative_to_the_repository(tmp_path, monkeypatch):
    from evals.benchmarks.keep_results import keep_results

    monkeypatch.chdir(tmp_path)
    for name, reference in (("inside", str(tmp_path / "runs" / "cases.jsonl")), ("outside", "/elsewhere/c.jsonl"),
                            ("named", "finance")):
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "results.jsonl").write_text("{}\n")
        (run / "summary.json").write_text(json.dumps({"params": {"suite_ref": reference}, "summary": {}}))
    keep_results(tmp_path / "runs", tmp_path / "results")

    def kept(name):
        return json.loads((tmp_path / "results" / name / "summary.json").read_text())["params"]["suite_ref"]

    assert (kept("inside"), kept("outside"), kept("named")) == ("runs/cases.jsonl", "/elsewhere/c.jsonl", "finance")


def test_a_compiled_selector_is_kept_with_its_evaluations(tmp_path):
    from evals.benchmarks.keep_results import keep_results

    program = tmp_path / "programs" / "events-native-mipro"
    (program / "test_eval").mkdir(parents=True)
    (program / "program.json").write_text('{"select": {}}')
    (program / "manifest.json").write_text('{"strategy": "native"}')
    (program / "optimizer_log").mkdir()
    (program / "optimizer_log" / "trial.json").write_text("{}")  # the optimizer's scratch is not kept
    rows = _rows("events", [1, 0], 2.0)
    (program / "test_eval" / "results.jsonl").write_text(rows.to_json(orient="records", lines=True))
    (program / "test_eval" / "summary.json").write_text('{"params": {}, "summary": {}}')
    (tmp_path / "programs" / "half-written").mkdir()
    (tmp_path / "programs" / "half-written" / "manifest.json").write_text("{}")  # no program.json: not kept

    kept = keep_results(tmp_path / "programs", tmp_path / "results")
    target = tmp_path / "results" / "events-native-mipro"
    assert kept == [target, target / "test_eval"]
    assert sorted(p.name for p in target.iterdir()) == ["manifest.json", "program.json", "test_eval"]
    assert (target / "program.json").read_text() == '{"select": {}}'
    assert sorted(p.name for p in (target / "test_eval").iterdir()) == ["results.jsonl", "summary.json"]


def test_a_strategy_with_a_colon_is_kept_under_a_safe_name_and_read_back(tmp_path):
    from evals.benchmarks.keep_results import keep_results
    from evals.benchmarks.strategy_report import _load_runs

    model = "qwen2.5-coder-0.5b"
    for strategy, ran in (("text:call", "text:call"), ("native-drop", "native")):
        run = tmp_path / "runs" / model / strategy / "events"
        run.mkdir(parents=True)
        (run / "results.jsonl").write_text(_rows("events", [1, 0], 2.0).to_json(orient="records", lines=True))
        (run / "summary.json").write_text(json.dumps({"params": {"strategy": ran}, "summary": {}}))
    keep_results(tmp_path / "runs", tmp_path / "results")
    assert sorted(p.name for p in (tmp_path / "results" / model).iterdir()) == ["native-drop", "text_call"]
    assert set(_load_runs(tmp_path / "results")) == {(model, "text:call", "events"), (model, "native-drop", "events")}


def test_strategy_directories_are_read_as_specs_of_registered_strategies():
    from evals.reports.strategies import NAMED_PAIRS, _shown, pair_heading, run_spec

    assert run_spec("gate+native").gated and _shown("gate+native") == "native"
    assert run_spec("native-drop").undeclared_arguments == "drop" and _shown("native-drop") == "native-drop"
    assert _shown("gate+native-drop") == "native-drop"
    assert run_spec("text_call") is None and _shown("text_call") == "text_call"  # not a strategy's name: kept
    assert run_spec("nope-drop") is None
    assert NAMED_PAIRS[2] == ("native-drop", "native-strict")
    assert pair_heading(*NAMED_PAIRS[2]) == "native, undeclared arguments: drop (A) vs native-strict (B)"
