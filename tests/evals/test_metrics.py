"""Scoring: multiset tool matching, BFCL-style argument matching, abstention and aggregation."""

import math
import random
import time

import numpy as np
import pandas as pd
import pytest

from evals.metrics import (
    _best_pairing,
    arguments_match,
    bootstrap_ci,
    score_case,
    summarize,
    summarize_by_tag,
    value_matches,
)
from evals.suite import Case
from tool_selection.decision import CallProblem, MultiToolDecision, ToolCall


def case(expected, strict=False, tags=("single",)):
    return Case(id="c", request="r", tool_set="x", expected_calls=expected, tags=list(tags), strict_arguments=strict)


def decision(*calls, **kw):
    return MultiToolDecision(tool_calls=[ToolCall(tool_name=n, arguments=a) for n, a in calls], **kw)


@pytest.mark.parametrize(
    ("predicted", "acceptable", "ok"),
    [
        ("New York", ["new york"], True),
        ("new-york.", ["New York"], True),
        ("Boston", ["New York", "NYC"], False),
        (5, [5.0], True),
        (5.0, [5], True),
        (True, [1], False),
        ([1, 2], [[1, 2]], True),
        ([2, 1], [[1, 2]], False),
        ({"unit": "C", "days": 3}, [{"unit": ["c"], "days": [3, ""]}], True),
        ({"unit": "C"}, [{"unit": ["c"], "days": [3, ""]}], True),
        ({"unit": "C", "x": 1}, [{"unit": ["c"]}], False),
        # "" marks an optional argument; BFCL's string checker also accepts it given as an empty string
        ("", [""], True),
        ("", ["", "PC"], True),
        (" ", [""], True),
        ("", ["PC"], False),
        (0, [5, ""], False),
        ({"unit": "C", "days": ""}, [{"unit": ["c"], "days": [3, ""]}], True),
    ],
)
def test_value_matching_follows_bfcl(predicted, acceptable, ok):
    assert value_matches(predicted, acceptable) is ok


def test_exact_match_is_order_independent_multiset():
    c = case([{"tool_name": "a", "arguments": {}}, {"tool_name": "b", "arguments": {}}, {"tool_name": "a", "arguments": {}}])
    assert score_case(c, decision(("b", {}), ("a", {}), ("a", {})))["tool_exact"] == 1.0
    s = score_case(c, decision(("a", {}), ("b", {})))
    assert s["tool_exact"] == 0.0 and s["precision"] == 1.0 and s["recall"] == pytest.approx(2 / 3)


def test_argument_accuracy_and_full_match():
    c = case([{"tool_name": "convert", "arguments": {"to": {"one_of": ["EUR", "euro"]}, "amount": 10}}])
    good = score_case(c, decision(("convert", {"to": "eur", "amount": 10.0, "note": "extra"})))
    assert good["args_correct"] == 1.0 and good["full_match"] == 1.0
    bad = score_case(c, decision(("convert", {"to": "USD", "amount": 10})))
    assert bad["tool_exact"] == 1.0 and bad["args_correct"] == 0.0 and bad["full_match"] == 0.0
    missing = score_case(c, decision(("convert", {"to": "EUR"})))
    assert missing["full_match"] == 0.0


def bfcl_case(arguments, properties, required=()):
    """A BFCL-style (strict) case expecting one call of ``f``, declared with ``properties`` as BFCL writes them."""
    tool = {"name": "f", "description": "F.",
            "parameters": {"type": "dict", "properties": properties, "required": list(required)}}
    return Case(id="b", request="r", tools=[tool], strict_arguments=True,
                expected_calls=[{"tool_name": "f", "arguments": {k: {"one_of": v} for k, v in arguments.items()}}])


def test_strict_cases_reject_unlisted_arguments_and_allow_optional_omission():
    c = bfcl_case({"x": [1], "y": ["", 0]}, {"x": {"type": "integer"}, "y": {"type": "integer"},
                                             "z": {"type": "integer"}}, required=["x"])
    assert score_case(c, decision(("f", {"x": 1})))["full_match"] == 1.0
    assert score_case(c, decision(("f", {"x": 1, "y": 0})))["full_match"] == 1.0
    assert score_case(c, decision(("f", {"x": 1, "z": 2})))["full_match"] == 0.0


INTEGER, FLOAT, TEXT = {"type": "integer"}, {"type": "float"}, {"type": "string"}


@pytest.mark.parametrize(
    ("given", "acceptable", "declared", "ok"),
    [
        pytest.param(3.0, [3], INTEGER, False, id="a float for an integer"),
        pytest.param(3, [3.0], FLOAT, True, id="an integer for a float"),
        pytest.param(True, [1], INTEGER, False, id="a bool for an integer"),
        pytest.param("", ["", 3], INTEGER, False, id="an empty string for an optional integer"),
        pytest.param("", ["", "PC"], TEXT, True, id="an empty string for an optional string"),
        pytest.param([], ["", ["a"]], {"type": "array", "items": TEXT}, True, id="an empty list for an optional list"),
        pytest.param([], [["a"]], {"type": "array", "items": TEXT}, False, id="an empty list for a needed list"),
        pytest.param([1, 2], [[1.0, 2.0]], {"type": "array", "items": FLOAT}, False, id="integers in a float list"),
        pytest.param([1.0, 2.0], [[1, 2]], {"type": "array", "items": INTEGER}, False, id="floats in an integer list"),
        pytest.param([1, 2], [[1, 2]], {"type": "array", "items": FLOAT}, True,
                     id="integers in a float list whose answer has integers"),
        pytest.param([1, 2], ["", [1.0, 2.0]], {"type": "array", "items": FLOAT}, True,
                     id="an optional list's items are not type-checked"),
        pytest.param("data['x']", ["data['x']"], {"type": "array", "items": TEXT}, True, id="a variable, exactly"),
        pytest.param("DATA['x']", ["data['x']"], {"type": "array", "items": TEXT}, False,
                     id="a variable is compared exactly"),
        pytest.param(None, ["", 3], INTEGER, False, id="null is a value of no declared type"),
    ],
)
def test_bfcl_cases_check_the_declared_type_first(given, acceptable, declared, ok):
    c = bfcl_case({"x": acceptable}, {"x": declared})
    assert score_case(c, decision(("f", {"x": given})))["full_match"] == float(ok)


def test_bfcl_cases_need_every_argument_the_tool_requires_and_none_it_does_not_declare():
    c = bfcl_case({"x": ["", 1], "y": [2]}, {"x": INTEGER}, required=["x"])
    assert score_case(c, decision(("f", {"x": 1, "y": 2})))["full_match"] == 0.0  # y is expected but not declared
    assert score_case(c, decision(("f", {})))["full_match"] == 0.0  # x may be omitted by the answer, not the tool


@pytest.mark.parametrize(
    ("predicted", "acceptable", "ok"),
    [
        (8990000000.5, [8990000000.0], False),  # numbers compare exactly: no tolerance that grows with the value
        (1e-300, [0.0], False),
        ("it's", ['it"s'], True),  # BFCL's normalisation also reads ' as "
        ([], ["", ["a"]], True),
    ],
)
def test_value_matching_without_declared_types(predicted, acceptable, ok):
    assert value_matches(predicted, acceptable) is ok


def test_a_call_its_tool_refuses_is_never_a_full_match_outside_bfcl_rules():
    def refused(index, strict):
        problem = CallProblem(kind="invalid_arguments", tool_name="convert", call_index=index,
                              detail="required: extra inputs are not permitted", fields=["required"])
        calls = [("convert", {"to": "EUR", "amount": 10, "required": ["to"]})]
        if index == 1:
            calls.insert(0, ("convert", {"to": "EUR", "amount": 10}))
        c = case([{"tool_name": "convert", "arguments": {"to": "EUR", "amount": 10}}] * len(calls), strict=strict)
        return score_case(c, decision(*calls, problems=[problem]))

    echoed = refused(0, strict=False)
    assert echoed["tool_exact"] == 1.0 and echoed["args_correct"] == 0.0 and echoed["full_match"] == 0.0
    assert refused(1, strict=False)["args_correct"] == 0.5  # only the refused call of the two misses
    c = case([{"tool_name": "convert", "arguments": {"to": "EUR"}}])
    assert score_case(c, decision(("convert", {"to": "EUR", "amount": 10})))["full_match"] == 1.0  # accepted extra


def test_best_pairing_finds_matching_arguments_among_repeated_tools():
    c = case([{"tool_name": "w", "arguments": {"city": "Paris"}}, {"tool_name": "w", "arguments": {"city": "Rome"}}])
    s = score_case(c, decision(("w", {"city": "Rome"}), ("w", {"city": "Paris"})))
    assert s["full_match"] == 1.0 and s["args_correct"] == 1.0


def _exhaustive_pairing(expected, predicted, strict):
    """The exhaustive search the matching replaced, kept as the reference it must agree with."""
    best = (0, 0)

    def search(i, used, named, matched):
        nonlocal best
        if (named + len(expected) - i, matched + len(expected) - i) <= best:
            return
        if i == len(expected):
            best = max(best, (named, matched))
            return
        name, acceptable = expected[i]
        for j, call in enumerate(predicted):
            if j not in used and call.tool_name == name:
                ok = arguments_match(call.arguments, acceptable, strict=strict)
                search(i + 1, used | {j}, named + 1, matched + int(ok))
        search(i + 1, used, named, matched)

    search(0, frozenset(), 0, 0)
    return best


def test_pairing_agrees_with_the_exhaustive_search_on_random_small_cases():
    rng = random.Random(0)
    for _ in range(2000):
        expected = [{"tool_name": rng.choice("ab"),
                     "arguments": {"x": {"one_of": rng.sample(range(4), rng.randint(1, 2))}}}
                    for _ in range(rng.randint(0, 5))]
        c = case(expected, strict=rng.random() < 0.5)
        calls = [(rng.choice("abc"), {"x": rng.randrange(4), **({"y": 1} if rng.random() < 0.2 else {})})
                 for _ in range(rng.randint(0, 6))]
        acceptable = [(e.tool_name, e.acceptable()) for e in c.expected_calls]
        predicted = decision(*calls).tool_calls
        assert _best_pairing(acceptable, predicted, c.strict_arguments) == \
            _exhaustive_pairing(acceptable, predicted, c.strict_arguments), (expected, calls)


def test_many_calls_to_one_tool_are_scored_in_polynomial_time():
    c = case([{"tool_name": "w", "arguments": {"city": f"city {i}"}} for i in range(4)])
    flood = decision(*[("w", {"city": "Nowhere"})] * 60)  # the exhaustive search took 18 s on this
    start = time.perf_counter()
    s = score_case(c, flood)
    assert time.perf_counter() - start < 1.0
    assert s["args_correct"] == 0.0 and s["recall"] == 1.0 and s["full_match"] == 0.0


def test_abstention_scores_and_parse_failures():
    no_tool = case([], tags=("no_tool",))
    s = score_case(no_tool, decision())
    assert s["abstention_correct"] == 1.0 and s["full_match"] == 1.0 and s["f1"] == 1.0
    assert math.isnan(s["false_abstention"])
    s = score_case(no_tool, decision(("a", {})))
    assert s["abstention_correct"] == 0.0 and s["full_match"] == 0.0
    broken = score_case(no_tool, MultiToolDecision(parse_error="bad json"))
    assert broken["parse_failure"] == 1.0 and broken["abstention_correct"] == 0.0 and broken["full_match"] == 0.0
    needs_tool = score_case(case([{"tool_name": "a", "arguments": {}}]), decision())
    assert needs_tool["false_abstention"] == 1.0 and math.isnan(needs_tool["abstention_correct"])


def test_problem_flags_are_copied_from_the_decision():
    d = decision(("x", {}), problems=[CallProblem(kind="unknown_tool", tool_name="x", call_index=0, detail="d")])
    s = score_case(case([{"tool_name": "a", "arguments": {}}]), d)
    assert s["unknown_tool"] == 1.0 and s["invalid_arguments"] == 0.0


def test_bootstrap_interval_brackets_the_mean_and_shrinks_with_more_data():
    rng = np.random.default_rng(1)
    small = rng.integers(0, 2, 40).astype(float)
    large = rng.integers(0, 2, 4000).astype(float)
    mean, low, high = bootstrap_ci(small)
    assert low <= mean <= high
    _, low2, high2 = bootstrap_ci(large)
    assert (high2 - low2) < (high - low)
    assert all(math.isnan(v) for v in bootstrap_ci([math.nan]))


def test_summaries_overall_and_by_tag():
    rows = pd.DataFrame([
        {"tags": ["single"], "full_match": 1.0, "tool_exact": 1.0, "f1": 1.0, "abstention_correct": math.nan},
        {"tags": ["single"], "full_match": 0.0, "tool_exact": 1.0, "f1": 1.0, "abstention_correct": math.nan},
        {"tags": ["no_tool"], "full_match": 1.0, "tool_exact": 1.0, "f1": 1.0, "abstention_correct": 1.0},
    ])
    summary = summarize(rows)
    assert summary["accuracy"] == pytest.approx(2 / 3)
    assert summary["accuracy_ci_low"] <= summary["accuracy"] <= summary["accuracy_ci_high"]
    assert summary["abstention_accuracy"] == 1.0
    by_tag = summarize_by_tag(rows.assign(args_correct=math.nan, parse_failure=0.0)).set_index("tag")
    assert by_tag.loc["single", "accuracy"] == 0.5 and by_tag.loc["all", "cases"] == 3
