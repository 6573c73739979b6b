"""The offline sweep on hand-made per-case tables: routing, AUROC, APGR, gap recovery, the recommendation."""

import numpy as np
import pandas as pd
import pytest

from evals.stuck_bench import (
    apgr,
    auroc,
    escalation_to_recover,
    oracle_escalation,
    parse_thresholds,
    perfect_router_curve,
    recommend,
    routing_curve,
    sweep_thresholds,
    threshold_candidates,
)
from tool_selection.errors import ToolSelectionError

GRID = parse_thresholds("0:1:0.05")


def table(primary, secondary, score, primary_cost=1.0, secondary_cost=10.0):
    n = len(primary)
    return pd.DataFrame({"primary_correct": primary, "secondary_correct": secondary, "score": score,
                         "primary_cost": [primary_cost] * n, "secondary_cost": [secondary_cost] * n})


# Ten cases: the primary is wrong on the first five, the secondary right on all but case 9 (where the primary is right).
PRIMARY = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
SECONDARY = [1, 1, 1, 1, 1, 1, 1, 1, 1, 0]
PERFECT = [0.9, 0.85, 0.8, 0.75, 0.7, 0.3, 0.25, 0.2, 0.15, 0.1]


def test_escalation_falls_with_the_threshold_and_the_ends_are_the_two_models():
    sweep = sweep_thresholds(table(PRIMARY, SECONDARY, PERFECT), "score", GRID)
    assert sweep["escalation_rate"].is_monotonic_decreasing
    assert sweep["cost"].is_monotonic_decreasing
    at_zero = sweep.iloc[0]
    assert at_zero["threshold"] == 0 and at_zero["escalation_rate"] == 1.0
    assert at_zero["accuracy"] == pytest.approx(np.mean(SECONDARY))
    assert at_zero["cost"] == pytest.approx(11.0) and at_zero["cost_vs_secondary"] == pytest.approx(1.1)
    above = sweep[sweep["threshold"] > max(PERFECT)].iloc[0]
    assert above["escalation_rate"] == 0.0 and above["accuracy"] == pytest.approx(np.mean(PRIMARY))
    assert above["cost"] == pytest.approx(1.0)
    best = sweep.set_index("threshold").loc[0.5]  # exactly the primary's errors escalate
    assert best["escalation_rate"] == 0.5 and best["accuracy"] == 1.0 and best["pgr"] == pytest.approx(1.25)
    assert best["accuracy_ci_low"] <= best["accuracy"] <= best["accuracy_ci_high"]


def test_missing_scores_count_as_stuck_and_overhead_is_charged():
    frame = table(PRIMARY, SECONDARY, [np.nan] + PERFECT[1:]).assign(overhead=0.5)
    sweep = sweep_thresholds(frame, "score", [0.95], overhead="overhead").iloc[0]
    assert sweep["escalation_rate"] == 0.1
    assert sweep["cost"] == pytest.approx(1.0 + 0.5 + 0.1 * 10.0)


def test_auroc_of_perfect_reversed_and_uninformative_scores():
    errors = 1 - np.array(PRIMARY)
    assert auroc(PERFECT, errors) == 1.0
    assert auroc(PERFECT[::-1], errors) == 0.0
    assert auroc([0.5] * 10, errors) == 0.5
    assert np.isnan(auroc(PERFECT, [0] * 10))


def test_apgr_of_a_perfect_router_and_a_random_one():
    primary, secondary = [0] * 5 + [1] * 5, [1] * 10
    perfect = routing_curve(primary, secondary, PERFECT)
    assert perfect.iloc[0]["escalation_rate"] == 0 and perfect.iloc[-1]["escalation_rate"] == 1
    # PGR rises linearly to 1 at an escalation rate of 0.5, then stays: area 0.25 + 0.5
    assert apgr(perfect, 0.5, 1.0) == pytest.approx(0.75)
    assert apgr(routing_curve(primary, secondary, [0.3] * 10), 0.5, 1.0) == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    randoms = [apgr(routing_curve(primary, secondary, rng.random(10)), 0.5, 1.0) for _ in range(400)]
    assert np.mean(randoms) == pytest.approx(0.5, abs=0.02)
    assert np.isnan(apgr(perfect, 0.8, 0.8))  # no gap to recover


def test_escalation_needed_to_recover_the_gap():
    primary, secondary = [0] * 5 + [1] * 5, [1] * 10
    perfect = routing_curve(primary, secondary, PERFECT)
    assert escalation_to_recover(perfect, 0.5, 1.0, 0.5) == pytest.approx(0.3)  # 3 of 5 errors fixed
    assert escalation_to_recover(perfect, 0.5, 1.0, 0.8) == pytest.approx(0.4)
    flat = routing_curve(primary, secondary, [0.3] * 10)
    assert escalation_to_recover(flat, 0.5, 1.0, 0.5) == 1.0  # ties: all or nothing


def test_recommendation_is_the_cheapest_within_a_point_else_the_most_accurate():
    sweep = pd.DataFrame({"threshold": [0.2, 0.4, 0.6, 0.8],
                          "accuracy": [0.90, 0.895, 0.85, 0.80],
                          "cost": [9.0, 6.0, 3.0, 1.0]})
    row, met = recommend(sweep, secondary_accuracy=0.90)
    assert met and row["threshold"] == 0.4  # 0.895 is within 1 point of 0.90, and cheaper than 0.2
    row, met = recommend(sweep, secondary_accuracy=0.95)
    assert not met and row["threshold"] == 0.2
    row, met = recommend(sweep, secondary_accuracy=0.80)
    assert met and row["threshold"] == 0.8


def test_the_cheapest_is_in_measured_seconds_where_every_row_has_them_else_in_price():
    sweep = pd.DataFrame({"threshold": [0.2, 0.4, 0.6], "accuracy": [0.90, 0.90, 0.90],
                          "cost": [3.0, 2.0, 1.0], "seconds": [1.0, 2.0, 3.0]})
    assert recommend(sweep, secondary_accuracy=0.90)[0]["threshold"] == 0.2
    unmeasured = sweep.assign(seconds=[1.0, float("nan"), 3.0])
    assert recommend(unmeasured, secondary_accuracy=0.90)[0]["threshold"] == 0.6


def test_sweeps_carry_seconds_per_case_with_the_detectors_own():
    frame = table(PRIMARY, SECONDARY, PERFECT).assign(primary_seconds=1.0, secondary_seconds=4.0, own=0.5)
    row = sweep_thresholds(frame, "score", [0.5], overhead_seconds="own").iloc[0]
    assert row["seconds"] == pytest.approx(1.0 + 0.5 + 0.5 * 4.0)
    assert row["seconds_vs_secondary"] == pytest.approx(3.5 / 4.0)
    assert np.isnan(sweep_thresholds(table(PRIMARY, SECONDARY, PERFECT), "score", [0.5]).iloc[0]["seconds"])


def test_thresholds_parse_and_refuse_values_outside_the_unit_interval():
    assert parse_thresholds("0:1:0.25") == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert len(GRID) == 21 and GRID[1] == 0.05
    assert parse_thresholds("0.8, 0.2") == [0.2, 0.8]
    with pytest.raises(ToolSelectionError, match=r"within \[0, 1\]"):
        parse_thresholds("0:2:0.5")
    with pytest.raises(ToolSelectionError, match="START:STOP:STEP"):
        parse_thresholds("low:high:step")
    with pytest.raises(ToolSelectionError, match="step must be positive"):
        parse_thresholds("0:1:0")


def test_bunched_scores_still_reach_intermediate_escalation_rates():
    # Every score sits between two grid values: the grid alone jumps from 0% to 100% escalation.
    bunched = [0.42, 0.415, 0.41, 0.405, 0.401, 0.404, 0.403, 0.402, 0.4005, 0.4001]
    frame = table(PRIMARY, SECONDARY, bunched)
    on_grid = sweep_thresholds(frame, "score", GRID)
    assert set(on_grid["escalation_rate"]) == {0.0, 1.0}
    candidates = threshold_candidates(frame["score"], GRID)
    assert set(GRID) <= set(candidates) and 0.41 in candidates
    chosen, met = recommend(sweep_thresholds(frame, "score", candidates), secondary_accuracy=0.9)
    assert met and 0 < chosen["escalation_rate"] < 1
    assert chosen["threshold"] == pytest.approx(0.405)  # escalating the four highest scores (all errors) suffices


def test_oracle_escalation_is_the_least_any_detector_needs_to_match_the_secondary():
    assert oracle_escalation(PRIMARY, SECONDARY) == pytest.approx(0.4)  # 90% - 50%: four of the five it alone gets
    frame = table(PRIMARY, SECONDARY, PERFECT)
    reached = sweep_thresholds(frame, "score", GRID)
    matching = reached[reached["accuracy"] >= frame["secondary_correct"].mean() - 1e-9]
    assert matching["escalation_rate"].min() == pytest.approx(oracle_escalation(PRIMARY, SECONDARY))
    assert oracle_escalation([1, 1], [1, 0]) == 0.0


def test_the_perfect_router_curve_bounds_every_detector():
    rates, accuracies = perfect_router_curve(PRIMARY, SECONDARY)
    assert rates == [0.0, 0.5, 0.9, 1.0] and accuracies == pytest.approx([0.5, 1.0, 1.0, 0.9])
    for scores in (PERFECT, list(reversed(PERFECT))):
        curve = routing_curve(PRIMARY, SECONDARY, scores)
        assert (curve["accuracy"] <= np.interp(curve["escalation_rate"], rates, accuracies) + 1e-9).all()
