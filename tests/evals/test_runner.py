"""The runner with DSPy's dummy LM: scoring, malformed answers, model errors, resume, threads, MLflow, compare."""

import functools
import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.evaluation import evaluate
from evals.runner import RESULTS_FILE, EvalAborted, Evaluator, load_results
from evals.stats import compare_runs
from evals.suite import load_suite
from tool_selection.cli import main
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter
from tool_selection.spec import RetrievalSpec, SelectorSpec

JSON_COT = functools.partial(MultiToolSelector, strategy="json-cot")  # the answers below are json-cot answers


def calls(*pairs):
    return json.dumps([{"tool_name": n, "arguments": a} for n, a in pairs])


ANSWERS = {
    "Oslo": {"reasoning": "weather", "tool_calls": calls(("get_weather", {"city": "Oslo"}))},
    "Paris": {"reasoning": "weather", "tool_calls": calls(("get_weather", {"city": "paris"}))},
    "Rome": {"reasoning": "wrong tool", "tool_calls": calls(("get_time", {"city": "Rome"}))},
    "Lima": {"reasoning": "bad args", "tool_calls": calls(("get_weather", {"town": "Lima"}))},
    "Kyiv": {"reasoning": "unknown", "tool_calls": calls(("get_forecast", {"city": "Kyiv"}))},
    "Baku": {"reasoning": "garbled", "tool_calls": "get_weather(Baku)"},
    "joke": {"reasoning": "no tool fits", "tool_calls": "[]"},
    "Quito": {"reasoning": "both", "tool_calls": calls(("get_time", {"city": "Quito"}), ("get_weather", {"city": "Quito"}))},
}


class CountingLM(DummyLM):
    def __init__(self, answers, fail_on=(), adapter=None):
        super().__init__(answers, adapter=adapter or dspy.JSONAdapter())  # the selector's own format (json-cot)
        self.calls = 0
        self.fail_on = fail_on

    def forward(self, prompt=None, messages=None, **kwargs):
        self.calls += 1
        if any(key in messages[-1]["content"] for key in self.fail_on):
            raise ConnectionError("server went away")
        return super().forward(prompt=prompt, messages=messages, **kwargs)


def test_scores_every_kind_of_answer(suite_path):
    suite = load_suite(suite_path)
    result = Evaluator(suite=suite, progress=False)(JSON_COT(), lm=CountingLM(ANSWERS))
    rows = result.results.set_index("id")
    assert rows.loc["w-0", "full_match"] == 1.0
    assert rows.loc["w-1", "full_match"] == 1.0  # "paris" matches "Paris"
    assert rows.loc["w-2", "tool_exact"] == 0.0
    assert rows.loc["w-3", "invalid_arguments"] == 1.0 and rows.loc["w-3", "full_match"] == 0.0
    assert rows.loc["w-4", "unknown_tool"] == 1.0
    assert rows.loc["w-5", "parse_failure"] == 1.0 and rows.loc["w-5", "error"] == 0.0
    assert rows.loc["none-1", "abstention_correct"] == 1.0
    assert rows.loc["multi-1", "full_match"] == 1.0
    assert result.summary["accuracy"] == pytest.approx(4 / 8)
    assert result.summary["parse_failure_rate"] == pytest.approx(1 / 8)
    assert (rows["latency_s"] > 0).all()
    assert set(result.by_tag["tag"]) == {"all", "single", "no_tool", "multi"}


def test_model_errors_are_scored_and_a_broken_setup_aborts(suite_path):
    suite = load_suite(suite_path)
    result = Evaluator(suite=suite, progress=False)(JSON_COT(), lm=CountingLM(ANSWERS, fail_on=["Rome"]))
    row = result.results.set_index("id").loc["w-2"]
    assert row["error"] == 1.0 and "server went away" in row["error_message"] and row["full_match"] == 0.0
    with pytest.raises(EvalAborted, match="first 3 cases all failed"):
        Evaluator(suite=suite, progress=False)(JSON_COT(), lm=CountingLM(ANSWERS, fail_on=["?", "joke"]))


def test_interrupted_run_resumes_without_recomputing(suite_path, tmp_path):
    suite = load_suite(suite_path)
    run_dir = tmp_path / "run"
    first = CountingLM(ANSWERS)
    Evaluator(suite=suite.limit(3), progress=False)(JSON_COT(), lm=first, run_dir=run_dir)
    assert first.calls == 3
    with (run_dir / RESULTS_FILE).open("a") as handle:
        handle.write('{"id": "w-3", "trunc')  # a run killed mid-write
    second = CountingLM(ANSWERS)
    result = Evaluator(suite=suite, progress=False, threads=2)(JSON_COT(), lm=second, run_dir=run_dir)
    assert second.calls == 5  # five cases left, one call each (the JSON adapter makes no fallback call)
    assert list(result.results["id"]) == [c.id for c in suite]
    assert len(load_results(run_dir)) == 8
    third = CountingLM(ANSWERS)
    Evaluator(suite=suite, progress=False)(JSON_COT(), lm=third, run_dir=run_dir)
    assert third.calls == 0


def test_evaluate_logs_to_mlflow_and_runs_compare(suite_path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    json_answers = CountingLM(ANSWERS, adapter=ToolSelectionAdapter())  # answers formatted as JSON
    json_cot = SelectorSpec(strategy="json-cot")
    a = evaluate(str(suite_path), json_answers, split=None, selector=json_cot,
                 run=RunConfig(tracking_uri=uri, progress=False))
    assert a.accuracy == pytest.approx(4 / 8)
    worse = {**ANSWERS, "Oslo": ANSWERS["Rome"]}
    b = evaluate(str(suite_path), CountingLM(worse, adapter=ToolSelectionAdapter()), split=None, selector=json_cot,
                 run=RunConfig(tracking_uri=uri, progress=False, run_dir=tmp_path / "runs" / "b"))
    assert (a.run_dir / "results.parquet").exists() and a.mlflow_run_id

    import mlflow

    mlflow.set_tracking_uri(uri)
    run = mlflow.get_run(a.mlflow_run_id)
    assert run.data.params["suite"] == "mini" and run.data.params["split"] == "all"
    assert run.data.metrics["accuracy"] == pytest.approx(a.accuracy)
    assert "tag.no_tool.accuracy" in run.data.metrics

    table = compare_runs(a.results, b.results).set_index("metric")
    assert table.loc["accuracy", "B-A"] == pytest.approx(-1 / 8)
    assert main(["eval", "compare", str(a.run_dir), b.mlflow_run_id, "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out
    assert "accuracy" in out and "B-A" in out


def test_cli_reports_bad_input_without_traceback(capsys):
    assert main(["eval", "--suite", "nonesuch", "--model", "local:qwen2.5-coder-0.5b"]) == 2
    assert "Unknown suite 'nonesuch'" in capsys.readouterr().err


def test_cached_answers_are_counted_for_the_cache_note():
    import pandas as pd

    from evals.eval_report import _cached_cases

    results = pd.DataFrame({"input_tokens": [1200, 0, 0], "output_tokens": [60, 0, 0], "error": [0.0, 0.0, 1.0]})
    assert _cached_cases(results) == 1  # the failed call is an error, not a cache hit


def test_a_row_whose_case_holds_a_lone_surrogate_is_written(tmp_path):
    """Files refuse such a case at load; one built in Python still gets its row written, the surrogate replaced."""
    from evals.suite import Case, Suite
    from tests.evals.conftest import make_cases

    case = Case.model_validate({**make_cases()[0], "tags": ["single", "\ud800"]})
    result = Evaluator(suite=Suite("s", [case]), progress=False)(JSON_COT(), lm=CountingLM(ANSWERS),
                                                                 run_dir=tmp_path / "run")
    assert result.results.loc[0, "full_match"] == 1.0
    assert json.loads((tmp_path / "run" / RESULTS_FILE).read_text())["tags"] == ["single", "?"]


def test_evaluate_refuses_a_nan_gate_threshold_and_a_retrieval_that_keeps_every_tool(suite_path):
    from tool_selection.errors import ToolSelectionError

    quiet = RunConfig(mlflow=False, progress=False)
    with pytest.raises(ToolSelectionError, match=r"gate_threshold \(--gate-threshold\) is NaN"):
        evaluate(str(suite_path), CountingLM(ANSWERS), run=quiet,
                 selector=SelectorSpec.build(strategy="gate+json-cot", gate={"threshold": float("nan")}))
    with pytest.raises(ToolSelectionError, match=r"retrieve=2 \(--retrieve\) keeps every tool of every case \(the "
                                                 r"largest catalog has 2\)"):
        evaluate(str(suite_path), CountingLM(ANSWERS), selector=SelectorSpec(retrieval=RetrievalSpec(k=2)), run=quiet)


def test_dspy_evaluate_with_the_accuracy_metric_reports_what_evaluate_does(suite_path):
    """DSPy's own evaluator over make_examples(cases) with accuracy_metric gives the harness's accuracy; the
    optimizers' selection_metric weighs each class to half, so its mean is the balanced accuracy instead."""
    from evals.metrics import balanced_accuracy
    from evals.optimization import accuracy_metric, make_examples, selection_metric

    suite = load_suite(suite_path)
    harness = Evaluator(suite=suite, progress=False)(JSON_COT(), lm=CountingLM(ANSWERS))
    examples = make_examples(suite)
    with dspy.context(lm=CountingLM(ANSWERS)):
        plain = dspy.Evaluate(devset=examples, metric=accuracy_metric, display_progress=False)(JSON_COT())
        balanced = dspy.Evaluate(devset=examples, metric=selection_metric, display_progress=False)(JSON_COT())
    assert plain.score / 100 == pytest.approx(harness.summary["accuracy"], abs=1e-4)  # DSPy rounds to 0.01%
    assert balanced.score / 100 == pytest.approx(balanced_accuracy(harness.results), abs=1e-4)
    assert harness.summary["accuracy"] != pytest.approx(balanced_accuracy(harness.results))  # the two differ here
