"""Paired comparisons: the interval of B - A over the same cases, McNemar's exact test, and the verdict."""

import numpy as np
import pandas as pd
import pytest

from evals.stats import compare_paired, mcnemar_exact, paired_bootstrap_ci


def runs(a, b):
    ids = [f"c{i}" for i in range(len(a))]
    return pd.DataFrame({"id": ids, "full_match": a}), pd.DataFrame({"id": ids[::-1], "full_match": b[::-1]})


def test_mcnemar_counts_only_the_discordant_cases():
    a = np.array([1, 1, 1, 0, 0, 1, 0, 1])
    b = np.array([1, 0, 0, 0, 1, 1, 0, 1])
    p, a_only, b_only = mcnemar_exact(a, b)
    assert (a_only, b_only) == (2, 1) and p == pytest.approx(1.0)
    assert mcnemar_exact(np.ones(30), np.zeros(30))[0] == pytest.approx(2 * 0.5 ** 30)
    assert mcnemar_exact(a, a)[0] == 1.0


def test_a_clear_gain_is_significant_and_a_coin_flip_is_not():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 200).astype(float)
    better = np.where(rng.random(200) < 0.3, 1.0, a)  # B fixes ~30% of cases, breaks none
    table = compare_paired(*runs(a, better), {"accuracy": "full_match"}).set_index("metric")
    row = table.loc["accuracy"]
    assert row["n"] == 200 and row["difference"] > 0.1 and row["ci_low"] > 0
    assert row["p_value"] < 0.001 and row["verdict"] == "B better"

    noise = rng.integers(0, 2, 200).astype(float)
    row = compare_paired(*runs(a, noise), {"accuracy": "full_match"}).iloc[0]
    assert row["verdict"] == "not significant" or row["ci_low"] > 0 or row["ci_high"] < 0


def test_cases_are_paired_by_id_and_missing_values_dropped():
    a = pd.DataFrame({"id": ["x", "y", "z"], "full_match": [1.0, 0.0, np.nan], "latency_s": [1.0, 2.0, 3.0]})
    b = pd.DataFrame({"id": ["z", "y", "w"], "full_match": [1.0, 1.0, 1.0], "latency_s": [5.0, 2.5, 9.0]})
    table = compare_paired(a, b, {"accuracy": "full_match", "latency_s": "latency_s"}).set_index("metric")
    assert table.loc["accuracy", "n"] == 1 and table.loc["accuracy", "difference"] == 1.0  # only y is shared
    assert table.loc["latency_s", "n"] == 2 and pd.isna(table.loc["latency_s", "p_value"])  # not a 0/1 metric


def test_an_interval_without_spread_is_the_point():
    assert paired_bootstrap_ci(np.zeros(10)) == (0.0, 0.0)
    low, high = paired_bootstrap_ci(np.array([0.0, 1.0] * 50))
    assert low < 0.5 < high


def test_a_drop_in_an_error_rate_or_in_seconds_is_the_better_run():
    from evals.stats import compare_runs

    a = pd.DataFrame({"id": [f"c{i}" for i in range(60)], "false_abstention": [1.0] * 60, "latency_s": [4.0] * 60,
                      "full_match": [0.0] * 60})
    b = a.assign(false_abstention=[0.0] * 60, latency_s=[1.0] * 60, full_match=[1.0] * 60)
    verdicts = compare_runs(a, b).set_index("metric")["verdict"]
    assert verdicts["false_abstention_rate"] == "B better" and verdicts["latency_s"] == "B better"
    assert verdicts["accuracy"] == "B better"
    assert compare_runs(b, a).set_index("metric")["verdict"]["false_abstention_rate"] == "A better"
