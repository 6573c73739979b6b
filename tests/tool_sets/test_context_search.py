"""The context_search tool set: the exact result shape, the documented scoring recomputed independently,
recency, the source filter, every refusal in the tool-failure shape, and the shipped debate history."""

import datetime
import json

import pydantic
import pytest

from tests.tool_sets.test_calculator import assert_failure, check_tool_set
from tests.tool_sets.test_web_search import reference_bm25
from tool_selection import ToolArgumentError
from tool_sets.context_search import TOOL_SET, ContextSearch, default_history
from tool_sets.web_search import tokenize

TOP_KEYS = {"results", "total_found", "search_query"}

HISTORY = [
    {"content": "Solar panels are cheap now.", "source": "ana", "timestamp": "2025-01-01T10:00:00Z"},
    {"content": "Wind turbines need steady wind.", "source": "ben"},
    {"content": "Solar and wind together cover most demand; solar peaks at noon.", "source": "ana",
     "timestamp": "2025-01-01T10:02:00+00:00"},
    {"content": "Batteries store solar power for the evening.", "source": "turn-4"},
    {"content": "Nuclear plants run day and night.", "source": "ben", "timestamp": "2025-01-01T10:04:00Z"},
]


def run(tool: ContextSearch | None = None, **arguments) -> dict:
    result = (tool or ContextSearch()).validate_and_execute(**arguments)
    assert json.loads(json.dumps(result)) == result
    return result


def expected_ranking(history: list[dict], query: str, recency_weight: float) -> list[tuple[float, int]]:
    """The docstring's scoring written out: (score, position) of each matching entry, best first."""
    terms = tokenize(query)
    bm25 = reference_bm25([tokenize(e["content"]) for e in history], terms)
    best = max(bm25)
    n = len(history)
    scored = [(round((1 - recency_weight) * s / best + recency_weight * i / (n - 1), 4), i)
              for i, s in enumerate(bm25) if s > 0]
    return sorted(scored, key=lambda p: (-p[0], -p[1]))


# ------------------------------------------------------------------------------------------ the set
def test_tool_set_loads_and_every_schema_is_bounded(monkeypatch):
    check_tool_set(TOOL_SET, monkeypatch)
    assert TOOL_SET.names() == ["context_search"]


def test_default_history_is_the_shipped_debate():
    history = default_history()
    assert len(history) == 30 and {e.source for e in history} == {"Moderator", "Priya", "Daniel"}
    times = [datetime.datetime.fromisoformat(e.timestamp) for e in history]
    assert times == sorted(times) and len(set(times)) == 30
    assert ContextSearch().history == history


# ------------------------------------------------------------------------------------------ shape and scoring
def test_result_shape_is_exact():
    result = run(query="Tallinn ridership")
    assert set(result) == TOP_KEYS and result["search_query"] == "Tallinn ridership"
    assert result["total_found"] == 2 and len(result["results"]) == 2
    for entry in result["results"]:
        assert list(entry) == ["content", "relevance_score", "source", "timestamp"]
        assert "Tallinn" in entry["content"] and 0 < entry["relevance_score"] <= 1
    assert {e["source"] for e in result["results"]} == {"Priya", "Daniel"}


def test_timestamp_appears_only_when_the_entry_has_one():
    result = run(ContextSearch(history=HISTORY), query="solar", max_results=20)
    by_source_content = {e["content"]: e for e in result["results"]}
    for entry in HISTORY:
        if "solar" in entry["content"].lower():
            found = by_source_content[entry["content"]]
            assert found.get("timestamp") == entry.get("timestamp")
            assert set(found) == {"content", "relevance_score", "source"} | ({"timestamp"} & set(entry))


@pytest.mark.parametrize("query", ["solar", "solar wind", "wind night", "batteries evening power"])
@pytest.mark.parametrize("recency_weight", [0.0, 0.2, 0.5, 1.0])
def test_scores_follow_the_documented_formula(query, recency_weight):
    result = run(ContextSearch(history=HISTORY), query=query, max_results=20, recency_weight=recency_weight)
    expected = expected_ranking(HISTORY, query, recency_weight)
    assert [(e["relevance_score"], e["content"]) for e in result["results"]] == \
           [(score, HISTORY[i]["content"]) for score, i in expected]
    assert result["total_found"] == len(expected)


def test_recency_decides_between_equal_matches():
    history = [{"content": "The budget is 90 million.", "source": "a"}, {"content": "Unrelated.", "source": "b"},
               {"content": "The budget is 90 million.", "source": "c"}]
    for weight in (0.0, 0.3):
        assert [e["source"] for e in run(ContextSearch(history=history), query="budget",
                                         recency_weight=weight)["results"]] == ["c", "a"]
    scores = [e["relevance_score"] for e in run(ContextSearch(history=history), query="budget",
                                                recency_weight=0.3)["results"]]
    assert scores == [1.0, 0.7]


def test_max_results_limits_results_but_not_total_found():
    result = run(query="free transport fares", max_results=3)
    assert len(result["results"]) == 3 and result["total_found"] > 3
    scores = [e["relevance_score"] for e in result["results"]]
    assert scores == sorted(scores, reverse=True)


def test_source_filter_is_case_insensitive():
    result = run(query="congestion charge", source="daniel", max_results=20)
    assert result["results"] and {e["source"] for e in result["results"]} == {"Daniel"}
    everyone = run(query="congestion charge", max_results=20)
    assert everyone["total_found"] > result["total_found"]


def test_a_single_entry_history_and_an_empty_one():
    single = run(ContextSearch(history=[{"content": "Hello there", "source": "x"}]), query="hello")
    assert single == {"results": [{"content": "Hello there", "relevance_score": 1.0, "source": "x"}],
                      "total_found": 1, "search_query": "hello"}
    assert run(ContextSearch(history=[]), query="hello") == {"results": [], "total_found": 0,
                                                              "search_query": "hello"}
    assert run(query="quantum chromodynamics") == {"results": [], "total_found": 0,
                                                   "search_query": "quantum chromodynamics"}


# ------------------------------------------------------------------------------------------ failures
def test_a_query_without_search_terms_is_a_failure():
    result = run(query="what is the ...?")
    assert_failure(result, "no_search_terms")
    assert result["query"] == "what is the ...?"


def test_an_unknown_source_is_a_failure_with_close_matches():
    result = run(query="fares", source="Danial")
    assert_failure(result, "unknown_source")
    assert result["suggestions"] == ["Daniel"] and "Moderator, Priya, Daniel" in result["message"]


@pytest.mark.parametrize("entry", [
    {"content": "No source"},
    {"content": "", "source": "a"},
    {"content": "Bad time", "source": "a", "timestamp": "yesterday"},
    {"content": "Extra", "source": "a", "speaker": "a"},
])
def test_a_malformed_history_is_refused_when_the_tool_is_built(entry):
    with pytest.raises(pydantic.ValidationError):
        ContextSearch(history=[entry])


# ------------------------------------------------------------------------------------------ validation
INVALID = [
    ({"query": ""}, "query"),
    ({"query": "x" * 301}, "query"),
    ({"query": "fares", "max_results": 0}, "max_results"),
    ({"query": "fares", "max_results": 21}, "max_results"),
    ({"query": "fares", "recency_weight": 1.5}, "recency_weight"),
    ({"query": "fares", "recency_weight": -0.1}, "recency_weight"),
    ({"query": "fares", "source": "x" * 65}, "source"),
    ({"query": "fares", "history": []}, "history"),
]


@pytest.mark.parametrize("arguments, field", INVALID, ids=[f"{f}-{i}" for i, (_, f) in enumerate(INVALID)])
def test_invalid_arguments_raise_naming_the_field(arguments, field):
    with pytest.raises(ToolArgumentError) as caught:
        TOOL_SET.registry().execute("context_search", arguments)
    assert field in [p.field for p in caught.value.problems]
