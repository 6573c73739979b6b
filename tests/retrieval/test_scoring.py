import pytest

from tool_selection.retrieval import RetrievedTool, mean_score, recall_at_k, reciprocal_rank

RANKED = ["search", "get_weather", "book", "get_time", "translate"]


def test_recall_at_k_is_the_share_of_expected_tools_in_the_first_k():
    assert recall_at_k(["get_weather"], RANKED, 1) == 0.0
    assert recall_at_k(["get_weather"], RANKED, 2) == 1.0
    assert recall_at_k(["get_weather", "get_time", "get_weather"], RANKED, 3) == 0.5  # distinct names
    assert recall_at_k(["get_weather", "get_time"], RANKED, 10) == 1.0


def test_recall_accepts_retrieved_tools():
    assert recall_at_k(["b"], [RetrievedTool("a", 2.0), RetrievedTool("b", 1.0)], 2) == 1.0


def test_reciprocal_rank_is_one_over_the_rank_of_the_first_expected_tool():
    assert reciprocal_rank(["book", "get_time"], RANKED) == pytest.approx(1 / 3)
    assert reciprocal_rank(["search"], RANKED) == 1.0
    assert reciprocal_rank(["missing"], RANKED) == 0.0


def test_abstention_cases_have_no_score():
    assert recall_at_k([], RANKED, 5) is None
    assert reciprocal_rank([], RANKED) is None


def test_the_mean_leaves_abstention_cases_out():
    assert mean_score([1.0, None, 0.0, None]) == 0.5
    assert mean_score([None, None]) is None


def test_k_must_be_positive():
    with pytest.raises(ValueError, match="^k must be a positive integer, got 0$"):
        recall_at_k(["a"], RANKED, 0)
