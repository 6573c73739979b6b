"""Whether a cascade pays, in seconds, on hand-made per-case tables: the paired comparison with the secondary, the
break-even escalation, and the line that says when no detector can make it pay."""

import math

import pandas as pd
import pytest

from evals.stuck_bench.verdict import break_even_escalation, verdict

# Ten cases: the primary is wrong on the first five, the secondary right on all but the last.
PRIMARY = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
SECONDARY = [1, 1, 1, 1, 1, 1, 1, 1, 1, 0]
PERFECT = [0.9, 0.85, 0.8, 0.75, 0.7, 0.3, 0.25, 0.2, 0.15, 0.1]


def cases(primary_seconds, secondary_seconds, detector_seconds=0.0, *, primary=PRIMARY, secondary=SECONDARY,
          score=PERFECT):
    n = len(primary)
    return pd.DataFrame({"primary_correct": primary, "secondary_correct": secondary, "score": score,
                         "primary_seconds": [primary_seconds] * n, "secondary_seconds": [secondary_seconds] * n,
                         "detector_seconds": [detector_seconds] * n})


def test_a_fast_primary_and_a_sharp_detector_pay():
    judged = verdict(cases(1.0, 10.0, 0.1), "sharp", "score", 0.5, overhead_seconds="detector_seconds")
    assert judged.escalation_rate == 0.5 and judged.accuracy == 1.0 and judged.secondary_accuracy == 0.9
    assert judged.seconds == pytest.approx(1.0 + 0.1 + 0.5 * 10.0)
    assert judged.seconds_vs_secondary == pytest.approx(0.61)
    assert judged.break_even == pytest.approx(0.89)
    assert judged.pays and not judged.out_of_reach
    assert judged.line().startswith("sharp: pays - 100.0% against the secondary's 90.0% (not significantly below")


def test_escalating_too_much_costs_more_than_the_secondary():
    judged = verdict(cases(1.0, 10.0), "eager", "score", 0.0)
    assert judged.escalation_rate == 1.0 and judged.seconds == pytest.approx(11.0)
    assert not judged.pays and "does not pay" in judged.line()


def test_a_cascade_significantly_below_the_secondary_does_not_pay_however_fast():
    many = 40
    table = cases(1.0, 10.0, primary=[0] * many, secondary=[1] * many, score=[0.0] * many)
    judged = verdict(table, "blind", "score", 0.5)  # escalates nothing: the primary's answers, all wrong
    assert judged.comparison.significantly_below and judged.seconds < judged.secondary_seconds
    assert not judged.pays and "(significantly below" in judged.line()


def test_when_matching_the_secondary_needs_more_escalation_than_breaks_even_no_detector_can_pay():
    primary = [0] * 9 + [1]  # a perfect detector must escalate 90% to match the secondary
    judged = verdict(cases(6.0, 10.0, primary=primary, secondary=[1] * 10), "any", "score", 0.5)
    assert judged.break_even == pytest.approx(0.4) and judged.oracle_escalation == pytest.approx(0.9)
    assert judged.out_of_reach and not judged.pays
    assert "Even a perfect detector must escalate 90.0%" in judged.line()
    assert "no detector can make it pay" in judged.line()


def test_a_primary_as_slow_as_the_secondary_can_never_pay():
    judged = verdict(cases(9.0, 10.0, 1.5), "any", "score", 0.5, overhead_seconds="detector_seconds")
    assert judged.break_even < 0 and judged.out_of_reach and not judged.pays
    assert "no cascade of this pair can pay" in judged.line()


def test_rows_without_seconds_cannot_be_judged_and_are_not_called_paying():
    table = cases(1.0, 10.0).drop(columns=["primary_seconds", "secondary_seconds"])
    judged = verdict(table, "sharp", "score", 0.5)
    assert math.isnan(judged.seconds) and not judged.measured and not judged.pays and not judged.out_of_reach
    assert "cannot be judged (no seconds)" in judged.line()


def test_break_even_escalation():
    assert break_even_escalation(2.0, 0.5, 10.0) == pytest.approx(0.75)
    assert break_even_escalation(12.0, 0.0, 10.0) == pytest.approx(-0.2)
    assert math.isnan(break_even_escalation(1.0, 0.0, 0.0))
