"""Relevance by catalog size, from rows: AUROC within each size group, and where a group cannot rank."""

import math

import pandas as pd
import pytest

from evals.benchmarks.relevance_by_size import by_size, findings, size_group


def rows():
    # one tool listed: two requests that need a call (high signal), two that need none (low); two to four tools
    # listed: only requests that need a call, one of them answered with no call
    return pd.DataFrame({
        "id": list("abcdef"), "suite": ["s1"] * 4 + ["s2"] * 2, "tools_listed": [1, 1, 1, 1, 3, 4],
        "abstention_correct": [math.nan, math.nan, 1.0, 0.0, math.nan, math.nan],
        "predicted": ['[{"tool_name": "f"}]', '[{"tool_name": "f"}]', "[]", '[{"tool_name": "f"}]',
                      '[{"tool_name": "g"}]', "[]"],
        "rel_overlap": [0.9, 0.8, 0.1, 0.2, 0.7, 0.6], "relevance_p": [0.9, 0.7, 0.2, 0.4, 0.8, 0.3],
    })


def test_size_groups():
    assert [size_group(n) for n in (0, 1, 2, 4, 5, 40)] == ["1", "1", "2-4", "2-4", "5+", "5+"]


def test_aurocs_are_read_within_each_size_group_and_undefined_where_one_kind_is_listed():
    table = by_size(rows()).set_index("tools listed")
    assert list(table.index) == ["1", "2-4", "all"]
    assert table.loc["1", "overlap"] == 1.0 and table.loc["1", "relevance_p"] == 1.0
    assert math.isnan(table.loc["2-4", "overlap"])  # every case there needs a call: nothing to rank
    assert table.loc["1", "need a call %"] == 50.0 and table.loc["2-4", "false abstention %"] == 50.0
    assert table.loc["1", "mean P, cases needing a call"] == pytest.approx(0.8)
    assert table.loc["all", "cases"] == 6


def test_the_findings_read_the_table():
    text = findings(by_size(rows()))
    assert "With one tool listed the relevance probability's AUROC is 1.000 (all cases pooled:" in text
    assert "0.800 with 1 listed (0.0% false abstention), 0.550 with 2-4 listed (50.0% false abstention)" in text
    assert text.endswith("No case lists 5+ tools here.")


def test_over_the_called_rows_only_the_probability_and_false_abstention_are_left_out():
    frame = rows().assign(parse_error=None)
    table = by_size(frame, called_only=True).set_index("tools listed")
    assert table.loc["1", "cases"] == 3 and table.loc["all", "cases"] == 4  # the two answers without a call dropped
    assert "relevance_p" not in table and table["false abstention %"].isna().all()
    assert table.loc["1", "overlap"] == 1.0
