"""The relevance gate's threshold, chosen offline on dev from one open-gate run."""

import math

import pandas as pd
import pytest

from evals.gate import choose_threshold, gated_results, sweep_gate
from tool_selection import ToolSelectionError


def rows():
    # two no-tool cases the selector got wrong (it called something), two tool cases it got right
    return pd.DataFrame({
        "id": ["n1", "n2", "t1", "t2"], "tags": [["no_tool"], ["no_tool"], ["single"], ["single"]],
        "gate_score": [-3.0, 0.5, 2.0, 1.0],
        "full_match": [0.0, 0.0, 1.0, 1.0], "tool_exact": [0.0, 0.0, 1.0, 1.0], "precision": [0.0, 0.0, 1, 1],
        "recall": [1.0, 1.0, 1, 1], "f1": [0.0, 0.0, 1, 1], "args_correct": [math.nan, math.nan, 1, 1],
        "abstention_correct": [0.0, 0.0, math.nan, math.nan], "false_abstention": [math.nan, math.nan, 0.0, 0.0],
        "unknown_tool": [0.0] * 4, "invalid_arguments": [0.0] * 4, "parse_failure": [0.0] * 4,
        "error": [0.0] * 4, "latency_s": [1.0] * 4, "input_tokens": [10.0] * 4, "output_tokens": [5.0] * 4})


def test_a_closed_gate_turns_decisions_into_abstentions():
    gated = gated_results(rows(), 0.75).set_index("id")
    assert gated.loc["n1", "full_match"] == 1.0 and gated.loc["n1", "abstention_correct"] == 1.0
    assert gated.loc["n2", "full_match"] == 1.0  # 0.5 < 0.75: closed
    assert gated.loc["t2", "full_match"] == 1.0 and gated.loc["t2", "gate_closed"] == 0.0  # 1.0 >= 0.75: open
    closed_tool = gated_results(rows(), 1.5).set_index("id").loc["t2"]
    assert closed_tool["full_match"] == 0.0 and closed_tool["false_abstention"] == 1.0


def test_the_sweep_and_the_dev_choice():
    sweep = sweep_gate(rows()).set_index("threshold")
    assert sweep.loc[-math.inf, "accuracy"] == 0.5 and sweep.loc[-math.inf, "gate_closed"] == 0.0
    assert sweep.loc[1.0, "accuracy"] == 1.0  # closes exactly the two no-tool cases
    choice = choose_threshold(rows())
    assert choice.dev_accuracy == 1.0 and choice.threshold == pytest.approx(1.0)


def test_results_without_gate_scores_name_the_fix():
    with pytest.raises(ToolSelectionError, match="--gate-threshold -inf"):
        sweep_gate(rows().drop(columns="gate_score"))
