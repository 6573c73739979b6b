"""The benchmark end to end on the tiny suite with a weak and a strong fake model, and its command line."""

import json

import pandas as pd
import pytest

import evals.stuck_bench as stuck_bench
import evals.stuck_bench.bench as bench
from evals.bench_cli import parse_pair
from evals.runner import load_results
from evals.stuck_bench.routing import routing_curve, routing_metrics
from evals.stuck_bench.tables import DetectorSplit, summarize
from tests.stuck.conftest import ScriptedLM, relative_cost, strong_answers, weak_answers, weak_logprobs
from tool_selection.cli import main
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec
from tool_selection.stuck import DETECTORS, DetectorUnavailable, StuckDetector, detector_names, register_detector

PAIR = "test/weak -> test/strong"


def quiet_run(out):
    """A run into ``out`` with no MLflow run and no progress bars."""
    return RunConfig(run_dir=out, mlflow=False, progress=False)


def test_tables_per_threshold_detector_and_split(bench_run):
    result, _ = bench_run
    sweep = result.sweep
    benchmarked = detector_names(fitted=False)  # the learned detector needs a router file: not by default
    assert set(sweep["detector"]) == set(benchmarked) and set(sweep["split"]) == {"dev", "test"}
    assert len(sweep) == len(benchmarked) * 2 * 21
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


def test_the_verdict_is_in_measured_seconds(bench_run):
    result, _ = bench_run
    summary = result.summary.set_index("detector")
    assert (summary["cheapest_by"] == "seconds").all()
    chosen = summary.loc["confidence"]
    assert chosen["test_seconds"] > 0 and chosen["test_secondary_seconds"] > 0
    assert chosen["test_seconds_vs_secondary"] == pytest.approx(chosen["test_seconds"] / chosen["test_secondary_seconds"])
    assert chosen["test_verdict"].startswith(("confidence: pays", "confidence: does not pay"))
    assert chosen["test_pays"] == (chosen["test_seconds_vs_secondary"] < 1 and chosen["test_vs_secondary_p"] >= 0.05
                                   or chosen["test_seconds_vs_secondary"] < 1 and chosen["test_vs_secondary_ci_high"] >= 0)
    curves = result.curves
    assert curves["seconds"].gt(0).all()
    assert stuck_bench.format_report(result).count("verdict on test") == 1


def test_the_primary_runs_through_the_harness_with_detector_scores(bench_run):
    result, _ = bench_run
    run_dirs = sorted((result.out_dir / "runs" / "test").iterdir())
    scored = load_results(next(d for d in run_dirs if "scored" in d.name))
    assert {f"stuck_{d}" for d in detector_names(fitted=False)} <= set(scored.columns)
    assert scored["stuck_consistency_overhead_output_tokens"].gt(0).all()
    own = scored[[f"stuck_{d}_seconds" for d in ("heuristic", "validation", "confidence")]].sum(axis=1)
    assert scored["stuck_combined_seconds"].ge(own).all()  # a composite's seconds include its components'
    assert scored["stuck_seconds"].ge(own + scored["stuck_consistency_seconds"]).all()
    assert scored["latency_s"].gt(scored["stuck_seconds"]).all()
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
    monkeypatch.setattr(bench, "resolve_lm", lambda spec, logprobs, **_: models[spec].copy(logprobs=logprobs))
    monkeypatch.setattr(bench, "catalog_cost", relative_cost)


def test_cli_runs_the_benchmark(suite_path, tmp_path, fake_catalog, capsys):
    code = main(["bench", "stuck", "--suite", str(suite_path), "--pair", "test/weak,test/strong",
                 "--detectors", "validation,confidence", "--thresholds", "0:1:0.1", "--run-dir", str(tmp_path / "o"),
                 "--no-mlflow", "--strategy", "json-cot"])
    out = capsys.readouterr().out
    assert code == 0
    assert "confidence" in out and "Recommended per pair" in out and "live runs" in out
    assert "- validation: " in out and "s per case against" in out
    assert set(pd.read_parquet(tmp_path / "o" / "sweep.parquet")["detector"]) == {"validation", "confidence"}


@pytest.mark.parametrize("argv, message", [
    (["--thresholds", "0:2:0.5"], r"within [0, 1]"),
    (["--detectors", "validation,hunch"], "Unknown stuck detector 'hunch'; choose one of: heuristic, validation"),
    (["--dev-split", "train"], "has no 'train' cases"),
    (["--pair", "test/weak"], "write PRIMARY,SECONDARY"),
    (["--pair", "test/weak,test/weak"], "the primary and secondary are the same model"),
    (["--temperature", "3"], "temperature: Input should be less than or equal to 2"),
    (["--pair", "local:qwen-typo,test/strong"],
     "--pair 'local:qwen-typo,test/strong': Unknown embedded model 'qwen-typo' in spec 'local:qwen-typo'."),
])
def test_cli_reports_bad_input_without_traceback(argv, message, suite_path, tmp_path, fake_catalog, capsys):
    base = ["bench", "stuck", "--suite", str(suite_path), "--pair", "test/weak,test/strong", "--no-mlflow",
            "--run-dir", str(tmp_path / "o")]
    if argv[0] == "--pair":
        base = base[:4] + base[6:]
    assert main(base + argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--limit", "0"], "argument --limit: 0 is out of range: give a number at least 1"),
    (["--consistency-k", "1"], "argument --consistency-k: 1 is out of range: give a number from 2 to 32"),
])
def test_the_parser_refuses_counts_out_of_range(argv, message, suite_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["bench", "stuck", "--suite", str(suite_path), "--no-mlflow", *argv])
    assert exited.value.code == 2 and message in capsys.readouterr().err


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
        run=quiet_run(tmp_path / "o"), cost_fn=relative_cost,
        live_threshold=0.7, strategy="delegate", live_detector="confidence",
        selector=SelectorSpec(strategy="json-cot"))
    (live,) = result.live.to_dict("records")
    assert live["accuracy"] == live["offline_delegate_accuracy"] == 1.0
    assert live["escalation_rate"] == live["offline_delegate_escalation_rate"] == 0.5
    offline = stuck_bench.sweep_thresholds(result.cases.query("split == 'test'"), "score_confidence", [0.7],
                                           overhead="overhead_cost_confidence").iloc[0]
    assert live["cost"] == pytest.approx(offline["cost"])  # live and offline costs agree too


def test_the_live_run_asks_the_models_in_the_benchs_selection_strategy(suite_path, tmp_path, monkeypatch):
    built = []

    class RecordingProtocol(bench.ModelCollaborationProtocol):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self.selector.strategy_name)

    monkeypatch.setattr(bench, "ModelCollaborationProtocol", RecordingProtocol)
    weak = ScriptedLM(weak_answers(), name="test/weak", logprobs=weak_logprobs())
    strong = ScriptedLM(strong_answers(), name="test/strong")
    stuck_bench.run_stuck_bench(
        str(suite_path), [(weak, strong)], detectors=["validation"], thresholds="0:1:0.5",
        run=quiet_run(tmp_path / "o"), cost_fn=relative_cost, live_threshold=0.7, strategy="delegate",
        live_detector="validation", selector=SelectorSpec(strategy="chat-cot"))
    assert built == ["chat-cot"]


def test_a_compiled_selector_keeps_its_demos_when_scored():
    import dspy

    from tool_selection.selector import MultiToolSelector
    from tool_selection.stuck import ValidationDetector

    selector = MultiToolSelector(strategy="json-cot")
    selector.select.predict.demos = [dspy.Example(request="weather in Oslo?", tools="...", reasoning="r",
                                                   tool_calls=[])]
    scored = stuck_bench.StuckScoredSelector.wrap(selector, [ValidationDetector()])
    assert scored.select.predict.demos[0]["request"] == "weather in Oslo?"
    assert [d.name for d in scored.detectors] == ["validation"]


@pytest.mark.parametrize("text, pair", [
    ("local:/models/small.gguf,local:/models/large.gguf", ("local:/models/small.gguf", "local:/models/large.gguf")),
    ("local:qwen2.5-coder-0.5b, openai/gpt-4o-mini", ("local:qwen2.5-coder-0.5b", "openai/gpt-4o-mini")),
    ("test/weak,test/strong", ("test/weak", "test/strong")),
])
def test_pair_specs_are_parsed_by_model_spec(text, pair):
    assert parse_pair(text) == pair


# ------------------------------------------------------------------------------------------------ failing detectors


class Crashing(StuckDetector):
    """A detector with a bug."""

    name = "crashing"

    def detect(self, attempt):
        raise KeyError("bug")


class Blind(StuckDetector):
    """A detector that lacks what it measures."""

    name = "blind"

    def detect(self, attempt):
        raise DetectorUnavailable("cannot see")


@pytest.fixture
def failing_detectors():
    for cls in (Crashing, Blind):
        register_detector(cls)
    yield
    for cls in (Crashing, Blind):
        DETECTORS.unregister(cls.name)


def bench_with(detectors, out):
    weak = ScriptedLM(weak_answers(), name="test/weak", logprobs=weak_logprobs())
    strong = ScriptedLM(strong_answers(), name="test/strong")
    return out, lambda suite: stuck_bench.run_stuck_bench(
        str(suite), [(weak, strong)], detectors=detectors, thresholds="0:1:0.5", run=quiet_run(out),
        cost_fn=relative_cost, selector=SelectorSpec(strategy="json-cot"))


def test_a_crashing_detector_stops_the_run_instead_of_escalating(suite_path, tmp_path, failing_detectors):
    out, run = bench_with(["validation", "crashing"], tmp_path / "o")
    with pytest.raises(stuck_bench.DetectorFailed, match=r"The stuck detector 'crashing' crashed on the request "
                                                         r"'What is the weather in \w+\?' \(KeyError: 'bug'\)") as error:
        run(suite_path)
    assert isinstance(error.value.__cause__, KeyError)
    assert not (out / "sweep.csv").exists()  # no table where its cases would count as stuck


def test_an_unavailable_detector_is_recorded_and_left_out(suite_path, tmp_path, failing_detectors):
    _, run = bench_with(["validation", "blind"], tmp_path / "o")
    result = run(suite_path)
    summary = result.summary.set_index("detector")
    assert summary.loc["validation", "available"] and not summary.loc["blind", "available"]
    assert set(result.sweep["detector"]) == {"validation"}
    assert f"{PAIR}: detector blind was unavailable (cannot see); left out." in result.notes


def test_the_summary_is_built_from_typed_detector_splits():
    table = pd.DataFrame({"primary_correct": [0, 0, 1, 1], "secondary_correct": [1, 1, 1, 0],
                          "primary_cost": [1.0] * 4, "secondary_cost": [10.0] * 4,
                          "score_validation": [1.0, 1.0, 0.0, 0.0], "overhead_cost_validation": [0.0] * 4})
    curve = routing_curve(table["primary_correct"], table["secondary_correct"], table["score_validation"])
    metrics = routing_metrics(table, "score_validation", curve)
    # escalating the two errors gains them and keeps case 4, which only the primary gets: PGR 2 at 50%, 1 at 100%
    assert (metrics.auroc, metrics.apgr, metrics.oracle_escalation) == (1.0, pytest.approx(1.25), 0.25)
    key = {"pair": "a -> b", "primary": "a", "secondary": "b"}
    runs = [DetectorSplit(**key, detector="validation", split=s, cases=table, metrics=metrics) for s in ("dev", "test")]
    runs += [DetectorSplit(**key, detector="confidence", split=s, cases=table, metrics=None) for s in ("dev", "test")]
    summary = summarize(runs, ["dev", "test"], [0.5]).set_index("detector")
    row = summary.loc["validation"]
    assert row["dev_auroc"] == row["test_auroc"] == 1.0 and row["test_primary_accuracy"] == 0.5
    assert row["recommended_threshold"] == 1.0 and row["test_escalation_rate"] == 0.5  # ties: the higher threshold
    assert not summary.loc["confidence", "available"] and pd.isna(summary.loc["confidence", "test_auroc"])


def test_the_cases_generation_limit_and_cache_come_from_the_run_config(suite_path, tmp_path, monkeypatch):
    from tool_selection.errors import ToolSelectionError
    from tool_selection.run_config import RunConfig

    loaded = []
    real = bench.resolve_lm
    monkeypatch.setattr(bench, "resolve_lm", lambda model, **options: loaded.append(options) or real(model, **options))
    weak = ScriptedLM(weak_answers(), name="test/weak", logprobs=weak_logprobs())
    strong = ScriptedLM(strong_answers(), name="test/strong")
    result = stuck_bench.run_stuck_bench(
        str(suite_path), [(weak, strong)], selector=SelectorSpec(strategy="json-cot"), detectors=["validation"],
        thresholds="0:1:0.5", cost_fn=relative_cost,
        run=RunConfig(run_dir=tmp_path / "o", mlflow=False, progress=False, limit=2, max_tokens=64))
    assert result.cases.groupby("split").size().to_dict() == {"dev": 2, "test": 2}
    assert {(o["max_tokens"], o["cache"]) for o in loaded} == {(64, True)}  # the bench's cache is on unless told
    with pytest.raises(ToolSelectionError, match="first cases of each split"):
        stuck_bench.run_stuck_bench(str(suite_path), [(weak, strong)], run=RunConfig(sample=2, mlflow=False))


def _router(primary, path, *, stage: bool = False):
    from tool_selection.stuck.learned import RouterModel

    # wrong where the call's argument values are not in the request (grounded_args 0: P 0.99; 1: P 0.007); with
    # ``stage``, also reading the relevance stage's verdict (weightless)
    read = 2 if stage else 1
    return RouterModel(signals=("grounded_args", "relevance_overruled")[:read], means=(0.5, 0.5)[:read],
                       scales=(0.5, 0.5)[:read], coefficients=(-5.0, 0.0)[:read], intercept=0.0,
                       missing=(3.0, 0.0)[:read], threshold=0.5, primary=primary, secondary="test/strong").save(path)


def _relevance_model(tmp_path):
    from tests.relevance.test_model import table
    from tool_selection.relevance import fit_relevance_model

    x, y = table()
    return str(fit_relevance_model(x, y, ["unlisted", "grounded_args"]).save(tmp_path / "tiny.json"))


def test_a_router_reading_the_stages_verdict_is_refused_without_a_relevance_model(suite_path, tmp_path):
    weak, strong = ScriptedLM(weak_answers(), name="test/weak"), ScriptedLM(strong_answers(), name="test/strong")
    router = _router("test/weak", tmp_path / "router.json", stage=True)
    with pytest.raises(Exception, match="reads the relevance stage's verdict .*run with relevance auto"):
        stuck_bench.run_stuck_bench(str(suite_path), [(weak, strong)], detectors=["learned"], router=str(router),
                                    run=quiet_run(tmp_path / "o"), cost_fn=relative_cost,
                                    selector=SelectorSpec(strategy="json-cot", relevance="none"))
    assert not weak.calls and not strong.calls


@pytest.mark.parametrize("stage", [False, True], ids=["signals", "signals and the stage's verdict"])
def test_the_learned_detector_reads_the_signals_its_router_needs(suite_path, tmp_path, stage):
    weak = ScriptedLM(weak_answers(), name="test/weak", logprobs=weak_logprobs())
    strong = ScriptedLM(strong_answers(), name="test/strong")
    router = _router("test/weak", tmp_path / "router.json", stage=stage)
    relevance = _relevance_model(tmp_path) if stage else "none"  # the stage's verdict needs a relevance model
    result = stuck_bench.run_stuck_bench(
        str(suite_path), [(weak, strong)], detectors=["validation", "learned"], thresholds="0:1:0.5",
        router=str(router), run=quiet_run(tmp_path / "o"), cost_fn=relative_cost,
        selector=SelectorSpec(strategy="json-cot", relevance=relevance))
    scored = load_results(next(d for d in (result.out_dir / "runs" / "test").iterdir() if "scored" in d.name))
    assert "rel_grounded_args" in scored and scored["stuck_learned"].notna().all()
    assert scored["stuck_learned_seconds"].ge(0).all()
    summary = result.summary.set_index("detector")
    assert summary.loc["learned", "available"] and summary.loc["learned", "test_verdict"].startswith("learned: ")


@pytest.mark.parametrize("fields, message", [
    ({"detectors": ["learned"]}, r"No router ships for test/weak \(routers ship for: qwen2.5-coder-0.5b\): give --router"),
    ({"detectors": ["learned"], "router": "local:qwen2.5-coder-0.5b"},
     "fitted on the decisions of local:qwen2.5-coder-0.5b, and the pair's primary is test/weak"),
    ({"selector": SelectorSpec(cascade="auto")}, "The stuck benchmark is the cascade"),
])
def test_a_detector_or_selector_the_bench_cannot_run_is_refused_before_any_model_runs(fields, message, suite_path,
                                                                                         tmp_path):
    weak, strong = ScriptedLM(weak_answers(), name="test/weak"), ScriptedLM(strong_answers(), name="test/strong")
    with pytest.raises(Exception, match=message):
        stuck_bench.run_stuck_bench(str(suite_path), [(weak, strong)], run=quiet_run(tmp_path / "o"),
                                    cost_fn=relative_cost, **fields)
    assert not weak.calls and not strong.calls


def test_a_live_run_with_a_relevance_model_is_refused(suite_path, tmp_path, monkeypatch):
    relevance = _relevance_model(tmp_path)
    weak, strong = ScriptedLM(weak_answers(), name="test/weak"), ScriptedLM(strong_answers(), name="test/strong")
    with pytest.raises(Exception, match="add --relevance none to compare live runs"):
        stuck_bench.run_stuck_bench(str(suite_path), [(weak, strong)], detectors=["validation"],
                                    run=quiet_run(tmp_path / "o"), cost_fn=relative_cost, live_threshold=0.5,
                                    selector=SelectorSpec(relevance=str(relevance)))
    assert not weak.calls and not strong.calls
