"""A relevance model from recorded rows, offline: fitted on train only, its threshold chosen on dev with a
balanced objective, reported on test against the selection alone."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from evals.gate import choose_threshold as choose_gate_threshold
from evals.relevance import (
    FalseAbstentionCap,
    apply_relevance,
    called,
    choose_threshold,
    fit_on_rows,
    relevance_report,
    signal_aurocs,
)
from tool_selection import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec


def row(case_id, split, needs_call, called_right, signal, *, abstained=False):
    """One scored row: a case that needs a call (or none), answered with a call (right or wrong) or none."""
    call = "[]" if abstained else json.dumps([{"tool_name": "t", "arguments": {}}])
    right = (not needs_call) if abstained else (needs_call and called_right)
    return {"id": case_id, "split": split, "tags": ["single" if needs_call else "no_tool"], "predicted": call,
            "parse_error": None, "full_match": float(right), "tool_exact": float(right),
            "precision": float(right), "recall": float(right), "f1": float(right),
            "args_correct": 1.0 if needs_call and not abstained else math.nan,
            "abstention_correct": math.nan if needs_call else float(abstained),
            "false_abstention": float(abstained) if needs_call else math.nan,
            "unknown_tool": 0.0, "invalid_arguments": 0.0, "parse_failure": 0.0, "error": 0.0,
            "latency_s": 1.0, "input_tokens": 10.0, "output_tokens": 2.0, "rel_dense_best": signal,
            "rel_bm25_best": (hash(case_id) % 100) / 100, "gate_score": signal}


def rows(split, n=40, seed=0):
    """Half the cases need a call; the selector calls on all of them; dense_best separates them, with overlap."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        needs = i % 2 == 0
        out.append(row(f"{split}-{i}", split, needs, True, float(rng.normal(0.6 if needs else 0.2, 0.15))))
    out.append(row(f"{split}-abstained", split, True, False, 0.9, abstained=True))
    return pd.DataFrame(out)


def test_the_model_is_fitted_on_train_rows_only():
    with pytest.raises(ToolSelectionError, match="train rows only"):
        fit_on_rows(pd.concat([rows("train"), rows("dev")]), ["dense_best"])
    with pytest.raises(ToolSelectionError, match="--relevance-signals verify"):
        fit_on_rows(rows("train"), ["verify"])


def test_applying_a_model_turns_low_probability_calls_into_abstentions():
    model = fit_on_rows(rows("train"), ["dense_best"]).with_threshold(0.5)
    test = rows("test", seed=2)
    after = apply_relevance(test, model).set_index("id")
    overruled = after[after["relevance_overruled"] == 1]
    assert len(overruled) and (overruled["predicted"] == "[]").all()
    assert not called(after.reset_index())[after.index.get_loc("test-abstained")]
    assert after.loc["test-abstained", "relevance_overruled"] == 0.0  # nothing to overrule
    no_tool = after[after["abstention_correct"].notna()]
    assert no_tool["abstention_correct"].mean() > 0.7  # most no-tool cases now abstain, rightly


def test_the_threshold_is_balanced_so_refusing_everything_cannot_win():
    # 9 no-tool cases for each tool case: plain accuracy would refuse everything
    dev = pd.DataFrame([row(f"d{i}", "dev", i % 10 == 0, True, 0.8 if i % 10 == 0 else 0.1 + 0.08 * (i % 10))
                        for i in range(40)])
    model = fit_on_rows(rows("train"), ["dense_best"])
    choice = choose_threshold(model, dev)
    after = apply_relevance(dev, choice.model)
    tool_cases = after[after["abstention_correct"].isna()]
    assert tool_cases["full_match"].mean() == 1.0  # every case that needs a call still gets it
    assert choice.model.dev["balanced_accuracy"] > 0.9
    sweep = choice.sweep
    refuse_all = sweep.loc[sweep["overruled"].idxmax()]
    assert refuse_all["accuracy"] >= choice.model.dev["accuracy"]  # what plain accuracy would have picked


def test_the_chosen_threshold_is_rounded_so_that_last_bits_do_not_move():
    dev = rows("dev", seed=3)
    model = fit_on_rows(rows("train"), ["dense_best"])
    nudged = dev.assign(rel_dense_best=dev["rel_dense_best"] * (1 + 1e-13))
    first, second = (choose_threshold(model, table).model.threshold for table in (dev, nudged))
    assert first == second and float(f"{first:.6g}") == first


def test_the_gate_threshold_is_balanced_too():
    dev = pd.DataFrame([row(f"d{i}", "dev", i % 10 == 0, True, 0.8 if i % 10 == 0 else 0.1 + 0.08 * (i % 10))
                        for i in range(40)])
    choice = choose_gate_threshold(dev)
    gated = dev[dev["gate_score"] >= choice.threshold]
    assert (gated["abstention_correct"].isna()).sum() == 4  # all four tool cases pass the gate


def test_aurocs_per_signal():
    aurocs = signal_aurocs(rows("test"), ["dense_best", "bm25_best"])
    assert aurocs["dense_best"] > 0.9 and 0.2 < aurocs["bm25_best"] < 0.8


def test_the_report_fits_on_train_chooses_on_dev_and_compares_on_test():
    runs = {"a": pd.concat([rows("train"), rows("dev", seed=1), rows("test", seed=2)]),
            "b": pd.concat([rows("train", seed=3), rows("dev", seed=4), rows("test", seed=5)])}
    for name, frame in runs.items():
        frame["id"] = name + frame["id"]
    report = relevance_report(runs, ["dense_best", "bm25_best"])
    assert report.model.trained_on["suites"] == ["a", "b"] and report.model.trained_on["split"] == "train"
    test = report.test.set_index("suite")
    assert list(test.index) == ["a", "b", "pooled"] and test.loc["pooled", "cases"] == 82
    assert test.loc["pooled", "abstention_accuracy_after"] > test.loc["pooled", "abstention_accuracy_before"] == 0
    assert report.aurocs.loc["combined", "pooled"] > 0.9


def xor_rows(split, n=120, seed=0):
    """A call is needed where exactly one of two signals is high: no weighted sum of them tells the kinds apart."""
    rng = np.random.default_rng(seed)
    a, b = rng.random(n), rng.random(n)
    out = pd.DataFrame([row(f"{split}-{i}", split, bool((a[i] > 0.5) != (b[i] > 0.5)), True, float(a[i]))
                        for i in range(n)])
    return out.assign(rel_bm25_best=b)


def test_gradient_boosting_is_compared_under_the_same_protocol_and_learns_what_a_sum_cannot():
    runs = {"x": pd.concat([xor_rows("train"), xor_rows("dev", seed=1), xor_rows("test", seed=2)])}
    table = relevance_report(runs, ["dense_best", "bm25_best"]).classifiers.set_index("classifier")
    assert list(table.index) == ["logistic regression (the model above)", "gradient boosting, depth 2",
                                 "gradient boosting, depth 3"]
    logistic, boosted = table.iloc[0], table.loc["gradient boosting, depth 2"]
    assert boosted["dev balanced"] > logistic["dev balanced"] + 0.2  # thresholded on dev, like the regression
    assert boosted["x accuracy"] > 0.8 > 0.6 > logistic["x accuracy"]


def test_the_bench_command_reports_saves_the_model_and_writes_a_page(tmp_path, capsys):
    from tool_selection.cli import main
    from tool_selection.relevance import RelevanceModel

    run_dirs = []
    for suite, seed in (("alpha", 0), ("beta", 10)):
        frame = pd.concat([rows("train", seed=seed), rows("dev", seed=seed + 1), rows("test", seed=seed + 2)])
        frame["id"] = suite + frame["id"]
        run_dir = tmp_path / suite
        run_dir.mkdir()
        frame.to_parquet(run_dir / "results.parquet", index=False)
        (run_dir / "summary.json").write_text(json.dumps({"params": {"suite": suite, "model": "local:fake",
                                                                     "strategy": "native-strict", "cases": 123}}))
        run_dirs.append(str(run_dir))
    model_path, page = tmp_path / "relevance.json", tmp_path / "relevance.md"
    assert main(["bench", "relevance", *run_dirs, "--signals", "dense_best", "--save", str(model_path),
                 "--markdown", str(page), "--section", "results/relevance/by-size.md"]) == 0
    out = capsys.readouterr().out
    assert "AUROC" in out and "pooled" in out and "dense_best" in out
    assert RelevanceModel.load(model_path).signals == ("dense_best",)
    text = page.read_text()
    assert "## Provenance" in text and "| alpha |" in text and "local:fake" in text
    assert "## Against the targets" not in text  # the issue set targets for the two local models only
    assert '\n--8<-- "results/relevance/by-size.md"\n\n## The model' in text
    assert "--section results/relevance/by-size.md` on" in text
    assert main(["bench", "relevance", *run_dirs, "--signals", "dense_best", "--cap-per-suite", "--save",
                 str(model_path), "--markdown", str(page)]) == 0
    assert RelevanceModel.load(model_path).dev["capped_per_suite"]
    assert "--cap-per-suite --save" in page.read_text() and "added there, in each suite too)" in page.read_text()
    assert main(["bench", "relevance", run_dirs[0], "--signals", "verify"]) == 2  # not recorded: a clear error
    assert "--relevance-signals verify" in capsys.readouterr().err


def test_each_model_is_held_to_its_own_targets():
    from types import SimpleNamespace

    from evals.benchmarks.relevance import target_table

    test = pd.DataFrame({"suite": ["bfcl_irrelevance (all splits)", "bfcl_multiple (all splits)"],
                         "abstention_accuracy_after": [0.84, math.nan], "accuracy_after": [0.84, 0.905]})
    report = SimpleNamespace(test=test)
    small = target_table(report, "local:qwen2.5-coder-0.5b").set_index("row")
    large = target_table(report, "local:qwen2.5-coder-1.5b").set_index("row")
    assert small.loc["bfcl_irrelevance (all splits)", "met"] == "yes" and small.loc[
        "bfcl_multiple (all splits)", "met"] == "yes"
    assert large.loc["bfcl_irrelevance (all splits)", "met"] == "no (-1.0)" and large.loc[
        "bfcl_multiple (all splits)", "met"] == "yes"
    assert target_table(report, "local:fake").empty


def test_decision_signals_are_filled_from_the_rows_cases():
    from evals.relevance import fill_decision_signals
    from evals.suite import Case

    case = Case.model_validate({"id": "c1", "request": "Weather in Oslo please", "tool_set": "treasure_hunt",
                                "expected_calls": [], "tags": ["no_tool"], "split": "test"})
    frame = pd.DataFrame([{"id": "c1", "predicted": json.dumps([{"tool_name": "move", "arguments": {"direction":
                                                                                                       "north"}}])}])
    filled = fill_decision_signals(frame, {"c1": case})
    assert filled.loc[0, "rel_grounded_args"] == 0.0 and filled.loc[0, "rel_unlisted"] == 0.0
    with pytest.raises(ToolSelectionError, match="no case"):
        fill_decision_signals(frame, {})
    with pytest.raises(ToolSelectionError, match="call_open cannot be computed from kept rows"):
        fill_decision_signals(frame, {"c1": case}, ["call_open"])
    only = fill_decision_signals(frame, {"c1": case}, ["grounded_args"])
    assert "rel_grounded_args" in only and "rel_unlisted" not in only
    spliced = pd.concat([frame.assign(id="c2", rel_grounded_args=0.5), frame.assign(rel_grounded_args=math.nan)],
                        ignore_index=True)  # a re-run case recorded the signal, the base's case did not
    case2 = case.model_copy(update={"id": "c2"})
    filled = fill_decision_signals(spliced, {"c1": case, "c2": case2}, ["grounded_args"])
    assert filled["rel_grounded_args"].tolist() == [0.5, 0.0]


def test_suites_are_pooled_into_bfcl_domains_and_all():
    from evals.relevance import suite_groups

    assert suite_groups(["bfcl_multiple", "bfcl_irrelevance", "events", "finance"]) == {
        "bfcl": ["bfcl_multiple", "bfcl_irrelevance"], "domains": ["events", "finance"],
        "pooled": ["bfcl_multiple", "bfcl_irrelevance", "events", "finance"]}
    assert suite_groups(["bfcl_multiple", "bfcl_irrelevance"]) == {"pooled": ["bfcl_multiple", "bfcl_irrelevance"]}
    assert suite_groups(["events"]) == {}


def test_the_threshold_adds_little_false_abstention_on_dev():
    # the only threshold that catches the no-tool cases also refuses half the cases that need a call
    dev = pd.DataFrame([row(f"d{i}", "dev", i % 2 == 0, True, 0.2 if i % 2 else (0.1 if i % 4 == 0 else 0.9))
                        for i in range(40)])
    model = fit_on_rows(rows("train"), ["dense_best"])
    strict = choose_threshold(model, dev, cap=FalseAbstentionCap(0.05))
    assert strict.model.dev["false_abstention_rate"] <= 0.05
    loose = choose_threshold(model, dev, cap=FalseAbstentionCap(1.0))
    assert loose.model.dev["false_abstention_rate"] == 0.5 and loose.model.dev["abstention_accuracy"] == 1.0


def test_a_cap_per_suite_keeps_one_suite_from_paying_for_the_pooled_gain():
    from evals.relevance import SUITE_COLUMN

    def suite(name, calls, no_tool):  # (count, signal) groups of rows that need a call and that need none
        out = [row(f"{name}-c{i}-{j}", "dev", True, True, signal) for i, (count, signal) in enumerate(calls)
               for j in range(count)]
        out += [row(f"{name}-n{i}-{j}", "dev", False, True, signal) for i, (count, signal) in enumerate(no_tool)
                for j in range(count)]
        return pd.DataFrame(out).assign(**{SUITE_COLUMN: name})

    # catching suite a's no-tool requests (0.35) also refuses 2 of its 10 that need a call (0.3): 5% pooled, 20% in a
    dev = pd.concat([suite("a", [(8, 0.9), (2, 0.3)], [(10, 0.35)]), suite("b", [(30, 0.9)], [(10, 0.1)])],
                    ignore_index=True)
    model = fit_on_rows(rows("train"), ["dense_best"])
    pooled = choose_threshold(model, dev, cap=FalseAbstentionCap(0.05))
    capped = choose_threshold(model, dev, cap=FalseAbstentionCap(0.05, per_suite=True))
    assert pooled.model.dev["false_abstention_rate"] == pytest.approx(0.05)
    assert capped.model.dev["false_abstention_rate"] == 0.0 and capped.model.dev["most_added_in_a_suite"] == 0.0
    assert capped.model.dev["abstention_accuracy"] == 0.5 < pooled.model.dev["abstention_accuracy"]
    assert capped.model.dev["capped_per_suite"] and "capped_per_suite" not in pooled.model.dev
    with pytest.raises(ToolSelectionError, match="A cap per suite needs the dev rows' suites"):
        choose_threshold(model, dev.drop(columns=SUITE_COLUMN), cap=FalseAbstentionCap(per_suite=True))


def test_the_harness_applies_the_shipped_model_by_default_and_none_turns_it_off(tmp_path, monkeypatch, suite_path):
    from evals.evaluation import evaluate
    from tests.evals.test_runner import ANSWERS, CountingLM
    from tests.relevance.test_model import table
    from tool_selection.relevance import fit_relevance_model
    from tool_selection.relevance import model as relevance_model

    x, y = table()
    shipped = fit_relevance_model(x, y, ["unlisted", "grounded_args"]).with_threshold(0.0)
    shipped.save(tmp_path / "dummy.json")  # DummyLM's model name
    monkeypatch.setattr(relevance_model, "SHIPPED_DIR", tmp_path)
    runs = {}
    for relevance in ("auto", "none"):
        runs[relevance] = evaluate(str(suite_path), CountingLM(ANSWERS),
                                   selector=SelectorSpec(strategy="json-cot", relevance=relevance),
                                   run=RunConfig(mlflow=False, progress=False, run_dir=tmp_path / relevance))
    assert runs["auto"].params["relevance"].startswith(f"relevance (model {shipped.fingerprint}")
    assert "relevance_p" in runs["auto"].results and "relevance" not in runs["none"].params


def test_the_trade_off_moves_both_ways_as_the_threshold_rises_and_marks_the_shipped_point(tmp_path):
    from evals.relevance_curve import plot_tradeoff, tradeoff_curve

    model = fit_on_rows(rows("train"), ["dense_best"]).with_threshold(0.45)
    curve = tradeoff_curve(model, {"suite": rows("test", seed=2)}, thresholds=(0.0, 0.3, 0.6, 1.0))
    assert list(curve["threshold"]) == [0.0, 0.3, 0.45, 0.6, 1.0]
    assert list(curve["operating"]) == [False, False, True, False, False]
    assert curve["abstention"].is_monotonic_increasing and curve["false_abstention"].is_monotonic_increasing
    assert curve["abstention"].iloc[0] == 0.0 and curve["abstention"].iloc[-1] == 1.0
    assert curve["false_abstention"].iloc[0] == pytest.approx(1 / 21)  # the selector's own abstention
    assert plot_tradeoff(curve, tmp_path / "curve.png").read_bytes().startswith(b"\x89PNG")
