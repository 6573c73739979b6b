"""The benchmark end to end on the tiny suite with a weak and a strong fake model, and its command line."""

import json

import pandas as pd
import pytest

import evals.stuck_bench as stuck_bench
from evals.runner import load_results
from tests.stuck.conftest import ScriptedLM, relative_cost, strong_answers, weak_answers, weak_logprobs
from tool_selection.cli import main
from tool_selection.stuck import DETECTORS

PAIR = "test/weak -> test/strong"


def test_tables_per_threshold_detector_and_split(bench_run):
    result, _ = bench_run
    sweep = result.sweep
    assert set(sweep["detector"]) == set(DETECTORS) and set(sweep["split"]) == {"dev", "test"}
    assert len(sweep) == len(DETECTORS) * 2 * 21
    for (_detector, _split), rows in sweep.groupby(["detector", "split"]):
        rows = rows.sort_values("threshold")
        assert rows["escalation_rate"].is_monotonic_decreasing
        assert rows.iloc[0]["accuracy"] == pytest.approx(rows.iloc[0]["secondary_accuracy"])  # threshold 0
    test = result.baselines.set_index(["model", "split"])
    assert test.loc[("test/weak", "test"), "accuracy"] == pytest.approx(3 / 6)
    assert test.loc[("test/strong", "test"), "accuracy"] == pytest.approx(5 / 6)
    assert test.loc[("test/strong", "test"), "cost"] > 5 * test.loc[("test/weak", "test"), "cost"]


def test_summary_ranks_the_informative_detectors(bench_run):
    result, _ = bench_run
    summary = result.summary.set_index("detector")
    assert summary["available"].all()
    assert summary.loc["confidence", "test_auroc"] == 1.0  # the weak fake is unsure exactly where it is wrong
    assert summary.loc["consistency", "test_auroc"] == 0.5  # its samples always agree: no signal
    assert summary.loc["confidence", "test_apgr"] > summary.loc["consistency", "test_apgr"]
    assert summary.loc["confidence", "test_escalation_for_50pct_gap"] <= 0.5
    chosen = summary.loc["confidence"]
    assert chosen["criterion_met_on_dev"] and 0 < chosen["recommended_threshold"] <= 1
    assert chosen["test_accuracy"] >= chosen["test_secondary_accuracy"] - 0.01
    assert chosen["test_cost_vs_secondary"] < 1
    (recommendation,) = result.recommendations.to_dict("records")
    assert recommendation["pair"] == PAIR and recommendation["test_cost_vs_secondary"] < 1


def test_the_primary_runs_through_the_harness_with_detector_scores(bench_run):
    result, _ = bench_run
    run_dirs = sorted((result.out_dir / "runs" / "test").iterdir())
    scored = load_results(next(d for d in run_dirs if "scored" in d.name))
    assert {f"stuck_{d}" for d in DETECTORS} <= set(scored.columns)
    assert scored["stuck_consistency_overhead_output_tokens"].gt(0).all()
    cases = result.cases[(result.cases["split"] == "test")].set_index("id")
    assert cases.loc["w-hanoi", "primary_correct"] == 0 and cases.loc["w-hanoi", "score_validation"] == 1.0


def test_files_plots_live_run_and_mlflow(bench_run):
    result, uri = bench_run
    out = result.out_dir
    for name in ("sweep", "summary", "recommendations", "curves", "baselines", "live"):
        assert (out / f"{name}.csv").exists() and (out / f"{name}.parquet").exists()
    assert pd.read_parquet(out / "sweep.parquet").shape == result.sweep.shape
    slug = "test-weak-test-strong"
    for plot in (f"accuracy_vs_escalation_{slug}.png", f"cost_quality_{slug}.png"):
        assert (out / plot).stat().st_size > 5000
    bench = json.loads((out / "bench.json").read_text())
    assert any("guide strategy" in note and "live runs" in note for note in bench["notes"])

    (live,) = result.live.to_dict("records")
    assert live["strategy"] == "guide" and live["detector"] == "heuristic" and live["cases"] == 6
    assert 0 < live["escalation_rate"] < 1 and live["accuracy"] >= 0.5

    import mlflow

    mlflow.set_tracking_uri(uri)
    run = mlflow.get_run(result.mlflow_run_id)
    assert run.data.params["kind"] == "stuck_bench" and run.data.tags["kind"] == "stuck_bench"
    key = "test-weak__test-strong.confidence.test_apgr"
    assert run.data.metrics[key] == pytest.approx(result.summary.set_index("detector").loc["confidence", "test_apgr"])
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(result.mlflow_run_id)}
    assert {"sweep.parquet", "summary.csv", f"cost_quality_{slug}.png", "bench.json"} <= artifacts
    evals = mlflow.search_runs(experiment_names=["tool-selection"], filter_string="params.kind = 'eval'")
    logged = set(zip(evals["params.model"], evals["params.split"], evals["params.program"]))
    assert logged == {(m, s, "zero-shot") for m in ("test/weak", "test/strong") for s in ("dev", "test")}


@pytest.fixture
def fake_catalog(monkeypatch):
    models = {"test/weak": ScriptedLM(weak_answers(), name="test/weak", logprobs=weak_logprobs()),
              "test/strong": ScriptedLM(strong_answers(), name="test/strong")}
    monkeypatch.setattr(stuck_bench, "resolve_lm", lambda spec, logprobs, **_: models[spec].copy(logprobs=logprobs))
    monkeypatch.setattr(stuck_bench, "catalog_cost", relative_cost)


def test_cli_runs_the_benchmark(suite_path, tmp_path, fake_catalog, capsys):
    code = main(["bench", "stuck", "--suite", str(suite_path), "--pair", "test/weak,test/strong",
                 "--detectors", "validation,confidence", "--thresholds", "0:1:0.1", "--out", str(tmp_path / "o"),
                 "--no-mlflow"])
    out = capsys.readouterr().out
    assert code == 0
    assert "confidence" in out and "Recommended per pair" in out and "live runs" in out
    assert set(pd.read_parquet(tmp_path / "o" / "sweep.parquet")["detector"]) == {"validation", "confidence"}


@pytest.mark.parametrize("argv, message", [
    (["--thresholds", "0:2:0.5"], r"within [0, 1]"),
    (["--detectors", "validation,hunch"], "Unknown detector(s) ['hunch']"),
    (["--dev-split", "train"], "has no 'train' cases"),
    (["--pair", "test/weak"], "write PRIMARY,SECONDARY"),
    (["--pair", "test/weak,test/weak"], "the primary and secondary are the same model"),
    (["--limit", "0"], "--limit must be a positive number"),
])
def test_cli_reports_bad_input_without_traceback(argv, message, suite_path, tmp_path, fake_catalog, capsys):
    base = ["bench", "stuck", "--suite", str(suite_path), "--pair", "test/weak,test/strong", "--no-mlflow",
            "--out", str(tmp_path / "o")]
    if argv[0] == "--pair":
        base = base[:4] + base[6:]
    assert main(base + argv) == 2
    assert message in capsys.readouterr().err


def test_bench_help(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "stuck", "--help"])
    assert "--live-threshold" in capsys.readouterr().out
    assert main(["bench"]) == 2


def test_a_live_delegate_run_matches_the_offline_sweep(suite_path, tmp_path):
    weak = ScriptedLM(weak_answers(), name="test/weak", logprobs=weak_logprobs())
    strong = ScriptedLM(strong_answers(), name="test/strong")
    result = stuck_bench.run_stuck_bench(
        str(suite_path), [(weak, strong)], detectors=["validation", "confidence"], thresholds="0:1:0.5",
        out=tmp_path / "o", mlflow=False, cost_fn=relative_cost, progress=False,
        live_threshold=0.7, strategy="delegate", live_detector="confidence")
    (live,) = result.live.to_dict("records")
    assert live["accuracy"] == live["offline_delegate_accuracy"] == 1.0
    assert live["escalation_rate"] == live["offline_delegate_escalation_rate"] == 0.5
    offline = stuck_bench.sweep_thresholds(result.cases.query("split == 'test'"), "score_confidence", [0.7],
                                           overhead="overhead_cost_confidence").iloc[0]
    assert live["cost"] == pytest.approx(offline["cost"])  # live and offline costs agree too


def test_a_compiled_selector_keeps_its_demos_when_scored():
    import dspy

    from tool_selection.selector import MultiToolSelector
    from tool_selection.stuck import ValidationDetector

    selector = MultiToolSelector()
    selector.select.predict.demos = [dspy.Example(request="weather in Oslo?", tools="...", reasoning="r",
                                                   tool_calls=[])]
    scored = stuck_bench.StuckScoredSelector.wrap(selector, [ValidationDetector()])
    assert scored.select.predict.demos[0]["request"] == "weather in Oslo?"
    assert [d.name for d in scored.detectors] == ["validation"]
