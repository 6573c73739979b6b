"""The learned stuck detector's benchmark (evals.benchmarks.learned_router), on small synthetic rows: no files, no
model."""

import math

import numpy as np
import pandas as pd
import pytest

from evals.benchmarks.learned_router import (
    FREE_SIGNALS,
    VARIANTS,
    Comparison,
    GroupData,
    choose_threshold,
    compare_to_secondary,
    evaluate_variant,
    fit_detector,
    markdown_page,
    pair_rows,
    pays,
    run_cascade,
    wrong_probability,
)
from tool_selection.errors import ToolSelectionError

SIGNALS = ("call_open", "dense_best")


def model_rows(wrong: list[bool], *, latency: float, stage: float, splits: list[str]) -> pd.DataFrame:
    """One model's per-case rows: right where ``wrong`` is False; ``call_open`` is -3 on its mistakes, +3 otherwise
    (the signal that marks them), every other signal the same on every row."""
    n = len(wrong)
    rows = pd.DataFrame({"id": [f"c-{i}" for i in range(n)], "split": splits,
                         "full_match": [0.0 if w else 1.0 for w in wrong],
                         "latency_s": latency, "relevance_seconds": stage})
    for name in (*FREE_SIGNALS, "verify"):
        rows[f"rel_{name}"] = 0.5
    rows["rel_call_open"] = [-3.0 if w else 3.0 for w in wrong]
    return rows


def paired_table(n: int = 90, signals=SIGNALS) -> tuple[pd.DataFrame, np.ndarray]:
    """A suite whose primary is wrong on every third case and whose secondary is always right."""
    wrong = [i % 3 == 0 for i in range(n)]
    splits = [("train", "dev", "test")[(i // 3) % 3] for i in range(n)]
    primary = model_rows(wrong, latency=3.0, stage=1.0, splits=splits)
    secondary = model_rows([False] * n, latency=12.0, stage=2.0, splits=splits)
    return pair_rows(primary, secondary, "mini", signals), np.array(wrong)


def test_the_fitted_detector_escalates_the_rows_its_signals_mark_wrong():
    table, wrong = paired_table()
    result = evaluate_variant("mini", "free", table, SIGNALS)
    test_wrong = wrong[table["split"].to_numpy() == "test"]
    assert result.cascade.escalated.tolist() == test_wrong.tolist()
    assert result.metrics.auroc == 1.0
    assert result.cascade.accuracy == 1.0 and result.threshold_met
    assert result.pays  # the secondary's accuracy, escalating a third, at (2 + 10/3) s against 10 s


def test_the_detector_imputes_missing_signals_and_refuses_an_empty_one():
    table, _ = paired_table()
    train = table[table["split"] == "train"].reset_index(drop=True)
    train.loc[::4, "rel_dense_best"] = math.nan
    scores = wrong_probability(fit_detector(train, SIGNALS), train, SIGNALS)
    assert np.isfinite(scores).all()
    train["rel_dense_best"] = math.nan
    with pytest.raises(ToolSelectionError, match="dense_best have no value on the train rows"):
        fit_detector(train, SIGNALS)


def dev(primary, secondary, scores) -> pd.DataFrame:
    return pd.DataFrame({"primary_correct": primary, "secondary_correct": secondary, "score": scores})


SCORES = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05]


def test_the_dev_threshold_is_the_least_escalation_within_a_point_of_the_secondary():
    # primary 70%, secondary 90%: escalating the top two (0.9, 0.8) reaches 90%; the top four reach 100%
    rows = dev([0, 0, 1, 0, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1, 0, 1], SCORES)
    threshold, met, point = choose_threshold(rows, rows["score"])
    assert (threshold, met, point["escalation_rate"], point["accuracy"]) == (0.8, True, 0.2, 0.9)


def test_the_dev_threshold_escalates_nothing_when_the_primary_is_already_close_enough():
    rows = dev([1] * 10, [1] * 9 + [0], SCORES)
    threshold, met, point = choose_threshold(rows, rows["score"])
    assert math.isinf(threshold) and met and point["escalation_rate"] == 0.0


def test_the_dev_threshold_escalates_everything_when_only_that_matches_the_secondary():
    # the primary's one mistake scores lowest: only escalating every case reaches the secondary's 100%
    rows = dev([1] * 9 + [0], [1] * 10, SCORES)
    threshold, met, point = choose_threshold(rows, rows["score"])
    assert (threshold, met, point["escalation_rate"]) == (0.05, True, 1.0)


def test_the_cascade_takes_the_secondarys_answer_and_seconds_where_it_escalates():
    table = pd.DataFrame({"primary_correct": [0.0, 1.0, 0.0, 1.0], "secondary_correct": [1.0, 0.0, 0.0, 1.0],
                          "primary_seconds": [1.0, 2.0, 3.0, 4.0], "secondary_seconds": [10.0, 20.0, 30.0, 40.0]})
    cascade = run_cascade(table, [0.9, 0.1, 0.6, 0.2], 0.5, detector_seconds=[0.5] * 4)
    assert cascade.escalated.tolist() == [True, False, True, False]
    assert cascade.correct.tolist() == [1.0, 1.0, 0.0, 1.0] and cascade.accuracy == 0.75
    assert cascade.seconds.tolist() == [11.5, 2.5, 33.5, 4.5] and cascade.seconds_per_case == 13.0
    assert run_cascade(table, [0.9, 0.1, 0.6, 0.2], 0.5).seconds_per_case == 12.5  # a free detector costs nothing


def test_the_paid_detector_adds_the_stage_seconds():
    table, _ = paired_table(signals=(*SIGNALS, "verify"))
    free = evaluate_variant("mini", "free", table, SIGNALS)
    paid = evaluate_variant("mini", "free + verify", table, (*SIGNALS, "verify"))
    assert free.cascade.seconds_per_case == pytest.approx(2.0 + 10.0 / 3)
    assert paid.cascade.seconds_per_case == pytest.approx(free.cascade.seconds_per_case + 1.0)
    assert free.secondary_seconds == 10.0  # 12 s recorded, less its own 2 s stage


def test_the_verdict_needs_both_the_accuracy_and_the_seconds():
    level = Comparison(-0.02, -0.06, 0.01, 0.3, 2, 4)
    below = Comparison(-0.05, -0.08, -0.02, 0.01, 0, 8)
    below_but_p_over = Comparison(-0.03, -0.05, -0.01, 0.06, 0, 5)
    assert pays(level, 5.0, 10.0) and not pays(level, 11.0, 10.0)
    assert not pays(below, 5.0, 10.0) and pays(below_but_p_over, 5.0, 10.0)
    same = compare_to_secondary([1, 0, 1], [1, 0, 1])
    assert (same.difference, same.ci_low, same.ci_high, same.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_rows_that_do_not_pair_by_id_are_refused_with_the_fix():
    wrong = [False, True, False]
    primary = model_rows(wrong, latency=1.0, stage=0.0, splits=["train", "dev", "test"])
    secondary = primary.assign(id=["c-0", "c-1", "other-9"])
    with pytest.raises(ToolSelectionError, match=r"do not pair by id: 1 only in the primary's \['c-2'\].*"
                                                 r"Evaluate both models on the same suite"):
        pair_rows(primary, secondary, "mini", SIGNALS)
    with pytest.raises(ToolSelectionError, match="different splits"):
        pair_rows(primary, primary.assign(split="test"), "mini", SIGNALS)


def test_a_missing_signal_column_is_refused_naming_it_and_the_fix():
    primary = model_rows([False, True], latency=1.0, stage=0.0, splits=["train", "test"]).drop(columns="rel_verify")
    with pytest.raises(ToolSelectionError, match=r"The primary's mini rows have no column rel_verify: record the "
                                                 r"signal with `toolsel eval --split all --relevance-signals cheap`"):
        pair_rows(primary, primary, "mini", ("call_open", "verify"))


def test_the_page_names_its_inputs_and_warns_about_the_latencies():
    table, _ = paired_table(signals=VARIANTS["free + verify"])
    results = [evaluate_variant("mini", variant, table, signals) for variant, signals in VARIANTS.items()]
    sources = [{"model": "m", "suite": "mini", "path": "results/relevance/m/mini", "rows": len(table),
                "commit": "abc", "suite_fingerprint": "f00", "filled": []}]
    page = markdown_page([GroupData("mini", table, sources)], results, command="python -m x", commit="c0ffee",
                         today="2026-01-01")
    assert "`results/relevance/m/mini/results.parquet`" in page and "`python -m x`" in page
    assert "not all measured with the machine to itself" in page and "**mini, free: pays**" in page


def test_the_router_is_fitted_on_train_rows_only():
    table, _ = paired_table()
    scrambled = table.copy()
    held_out = scrambled["split"] != "train"
    scrambled.loc[held_out, "rel_call_open"] = -scrambled.loc[held_out, "rel_call_open"]
    scrambled.loc[held_out, "primary_correct"] = 1 - scrambled.loc[held_out, "primary_correct"]
    first, second = (evaluate_variant("mini", "free", t, SIGNALS) for t in (table, scrambled))
    assert first.model == second.model  # dev and test rows changed, the fit did not
    assert first.model.trained_on["rows"] == int((table["split"] == "train").sum())


def test_an_out_of_fold_threshold_reads_train_and_dev_and_never_test():
    from evals.benchmarks.learned_router import OUT_OF_FOLD

    table, _ = paired_table()
    scrambled = table.copy()
    test = scrambled["split"] == "test"
    scrambled.loc[test, "rel_call_open"] = -scrambled.loc[test, "rel_call_open"]
    scrambled.loc[test, "primary_correct"] = 1 - scrambled.loc[test, "primary_correct"]
    first, second = (evaluate_variant("mini", "free", t, SIGNALS, threshold_on=OUT_OF_FOLD) for t in (table, scrambled))
    assert first.model == second.model and first.threshold == second.threshold  # test rows changed, nothing else
    assert first.model.trained_on == {"suites": ["mini"], "split": "train+dev", "rows": 60, "wrong": 20}
    assert first.threshold_on == OUT_OF_FOLD and first.threshold_met and first.cascade.accuracy == 1.0


def test_the_stage_verdict_is_read_from_its_own_columns():
    from evals.benchmarks.learned_router import column_of
    from tool_selection.stuck.learned import STAGE_INPUTS

    table, _ = paired_table(signals=())
    table["relevance_overruled"] = (table["primary_correct"] == 0).astype(float)  # the stage dropped the wrong calls
    result = evaluate_variant("mini", "free + stage", table, ("relevance_overruled",))
    assert [column_of(name) for name in ("call_open", *STAGE_INPUTS)] == ["rel_call_open", *STAGE_INPUTS]
    assert result.model.signals == ("relevance_overruled",) and result.model.reads_stage
    assert result.metrics.auroc == 1.0
    primary, secondary = (model_rows([False] * 3, latency=1.0, stage=0.0, splits=["train", "dev", "test"])
                          for _ in range(2))
    with pytest.raises(ToolSelectionError, match="no column relevance_p: run the model with its relevance model"):
        pair_rows(primary, secondary, "mini", ("relevance_p",))


def test_the_board_group_reads_each_models_whole_category_run_of_the_default_selector(tmp_path):
    import json

    from evals.benchmarks.learned_router import BOARD_STRATEGY, board_run

    def kept(name: str, **params) -> None:
        (tmp_path / "m" / name).mkdir(parents=True)
        (tmp_path / "m" / name / "summary.json").write_text(json.dumps({"params": {"split": "all", **params}}))

    kept("bfcl-multiple-local-m-a", strategy=BOARD_STRATEGY, cases=40)
    kept("bfcl-multiple-local-m-b", strategy=BOARD_STRATEGY, cases=200)
    kept("bfcl-multiple-local-m-c", strategy=BOARD_STRATEGY, cases=400, demos=3)
    kept("bfcl-multiple-local-m-d", strategy="native-strict", cases=400)
    kept("bfcl-parallel-multiple-local-m-e", strategy=BOARD_STRATEGY, cases=400)
    assert board_run(tmp_path, "m", "multiple").name == "bfcl-multiple-local-m-b"
    with pytest.raises(ToolSelectionError, match="No run of m's default selector on bfcl:irrelevance"):
        board_run(tmp_path, "m", "irrelevance")


def test_the_shipped_router_carries_its_dev_threshold_and_loads_back(tmp_path):
    from evals.benchmarks.learned_router import shipped_router
    from tool_selection.stuck.learned import RouterModel

    table, _ = paired_table()
    result = evaluate_variant("mini", "free", table, SIGNALS)
    router = shipped_router(result)
    assert router.threshold == result.threshold and router.dev["within_tolerance"]
    assert router.primary == "local:qwen2.5-coder-0.5b" and router.secondary == "local:qwen2.5-coder-1.5b"
    loaded = RouterModel.load(router.save(tmp_path / "qwen2.5-coder-0.5b.json"))
    assert loaded == router and loaded.fingerprint == router.fingerprint
    test = table[table["split"] == "test"]
    assert (loaded.probabilities(test) >= loaded.threshold).tolist() == result.cascade.escalated.tolist()


def test_the_live_page_pairs_the_cascade_with_the_larger_model_on_the_same_cases():
    from evals.benchmarks.live_cascade import cascade_table

    n = 40
    table = pd.DataFrame({"escalated": [float(i % 4 == 0) for i in range(n)],
                          "primary_seconds": 1.0, "secondary_seconds": [3.0 if i % 4 == 0 else 0.0 for i in range(n)],
                          "small_correct": [float(i % 4 != 0) for i in range(n)], "large_correct": 1.0,
                          "cascade_correct": 1.0, "small_s": 1.0, "large_s": 4.0,
                          "cascade_s": [4.0 if i % 4 == 0 else 1.0 for i in range(n)]})
    row = cascade_table(table, "mini")
    assert row["escalated %"] == "25.0" and row["cascade - 1.5B [95% CI]"].startswith("+0.0")
    assert row["ratio to 1.5B"] == "0.44" and row["pays"] == "yes"
    assert row["cascade: primary + secondary s"] == "1.00 + 0.75"
    slower = table.assign(cascade_s=5.0)
    assert cascade_table(slower, "mini")["pays"] == "no"  # as accurate, but not cheaper


def test_the_live_page_is_made_from_kept_runs_and_names_each_command(tmp_path):
    import json as json_module

    from evals.benchmarks.live_cascade import main as live_main

    def write(folder, rows):
        folder.mkdir(parents=True)
        (folder / "results.jsonl").write_text("".join(json_module.dumps(r) + "\n" for r in rows))
        (folder / "summary.json").write_text(json_module.dumps({"params": {"cases": len(rows)}}))

    for suite in ("multiple", "irrelevance"):
        ids = [f"{suite}_{i}" for i in range(20)]
        escalate = [i < 5 for i in range(20)]
        write(tmp_path / f"cascade-{suite}", [
            {"id": c, "full_match": 1.0, "latency_s": 4.0 if e else 1.0, "cascade_escalated": float(e),
             "cascade_wrong_p": 0.9 if e else 0.1, "cascade_primary_seconds": 1.0,
             "cascade_secondary_seconds": 3.0 if e else 0.0} for c, e in zip(ids, escalate, strict=True)])
        write(tmp_path / f"large-{suite}", [{"id": c, "full_match": 1.0, "latency_s": 3.0} for c in ids])
        write(tmp_path / f"small-{suite}", [{"id": c, "full_match": 0.0 if e else 1.0, "latency_s": 1.0}
                                           for c, e in zip(ids, escalate, strict=True)])
    out = tmp_path / "cascade.md"
    assert live_main(["--runs", str(tmp_path), "--board", str(tmp_path / "no-board"), "--out", str(out)]) == 0
    page = out.read_text()
    assert "| both | 40 | 75.0 | 100.0 | 100.0 | +0.0 [+0.0, +0.0]" in page  # the cascade recovers every mistake
    assert "| 20.0 | 95.0 | 100.0 | 1.60 (0.53x) |" in page  # the frontier: 8 of the 10 mistakes escalated
    assert "| 30 of 30 | yes |" in page and "(no board rows kept to check against)" in page and "--cascade auto" in page
