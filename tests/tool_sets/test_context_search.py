"""The context_search tool set: the exact output schema (success and error), 200-character snippets, substring
matching over every round and contribution type of a live conversation, the history fallback, the documented
ranking recomputed independently, the source filter, and bad arguments answered in the error shape."""

import datetime
import json
import re
from types import SimpleNamespace

import jsonschema
import pydantic
import pytest

from tests.tool_sets.test_calculator import assert_failure, check_tool_set
from tool_selection.tool_failures import is_failure
from tool_sets.context_search import SNIPPET_CHARS, TOOL_SET, ContextSearch, default_history, snippet

MATCH_KEYS = ["roundNumber", "agentId", "agentRole", "type", "contentSnippet"]
SUCCESS = {  # the interface the debate protocol fixes; extra fields are allowed
    "type": "object", "required": ["status", "result"],
    "properties": {"status": {"const": "success"}, "result": {
        "type": "object", "required": ["matches"],
        "properties": {"matches": {"type": "array", "items": {
            "type": "object", "required": MATCH_KEYS,
            "properties": {"roundNumber": {"type": "integer"}, "agentId": {"type": "string"},
                           "agentRole": {"type": "string"}, "type": {"type": "string"},
                           "contentSnippet": {"type": "string", "maxLength": SNIPPET_CHARS}}}}}}}}
ERROR = {"type": "object", "required": ["status", "result"],
         "properties": {"status": {"const": "error"}, "result": {"type": "string", "minLength": 1}}}

HISTORY = [
    {"content": "Solar panels are cheap now.", "source": "ana", "timestamp": "2025-01-01T10:00:00Z"},
    {"content": "Wind turbines need steady wind.", "source": "ben", "role": "engineer"},
    {"content": "Solar and wind together cover most demand; solar peaks at noon.", "source": "ana",
     "timestamp": "2025-01-01T10:02:00+00:00"},
    {"content": "Batteries store SOLAR power for the evening.", "source": "turn-4"},
    {"content": "Nuclear plants run day and night.", "source": "ben", "timestamp": "2025-01-01T10:04:00Z"},
]


def contribution(agent_id, role, kind, content):
    return SimpleNamespace(agent_id=agent_id, agent_role=role, type=kind, content=content)


def debate(*rounds):
    """A stand-in for a debate's state: anything with ``rounds`` of numbered contributions."""
    return SimpleNamespace(rounds=[SimpleNamespace(number=n, contributions=list(c)) for n, c in enumerate(rounds, 1)])


DEBATE = debate(
    [contribution("agent-architect", "architect", "proposal", "Use a write-through cache in front of Postgres."),
     contribution("agent-security", "security", "proposal", "Encrypt the cache at rest."),
     contribution("agent-security", "security", "critique", "A write-through CACHE doubles write latency."),
     contribution("agent-architect", "architect", "refinement", "Write-behind cache, with a queue.")],
    [contribution("agent-architect", "architect", "proposal", "Shard by tenant; keep the cache per shard.")],
)


def run(tool: ContextSearch | None = None, **arguments) -> dict:
    result = (tool or ContextSearch()).validate_and_execute(**arguments)
    assert json.loads(json.dumps(result)) == result
    jsonschema.validate(result, SUCCESS if result["status"] == "success" else ERROR)
    return result


def matches(result: dict) -> list[dict]:
    return result["result"]["matches"]


# ------------------------------------------------------------------------------------------ the set
def test_tool_set_loads_and_every_schema_is_bounded(monkeypatch):
    check_tool_set(TOOL_SET, monkeypatch)
    assert TOOL_SET.names() == ["context_search"]


def test_term_is_the_one_required_argument():
    schema = ContextSearch.input_schema()
    assert schema["required"] == ["term"]
    assert set(schema["properties"]) == {"term", "max_results", "recency_weight", "source"}


def test_default_history_is_the_shipped_debate():
    history = default_history()
    assert len(history) == 30 and {e.source for e in history} == {"Moderator", "Priya", "Daniel"}
    times = [datetime.datetime.fromisoformat(e.timestamp) for e in history]
    assert times == sorted(times) and len(set(times)) == 30
    assert ContextSearch().history == history


# ------------------------------------------------------------------------------------------ a live debate
def test_the_output_schema_is_exact_over_a_debate():
    result = run(ContextSearch(conversation=DEBATE), term="cache", recency_weight=0.0)
    assert list(result) == ["status", "result"]
    first = matches(result)[0]
    assert list(first)[:5] == MATCH_KEYS and set(first) == {*MATCH_KEYS, "relevanceScore"}
    assert result["result"]["totalFound"] == 5 and result["result"]["searchTerm"] == "cache"


def test_every_round_and_contribution_type_is_searched_case_insensitively():
    found = matches(run(ContextSearch(conversation=DEBATE), term="CaChE"))
    assert {(m["roundNumber"], m["type"]) for m in found} == {(1, "proposal"), (1, "critique"), (1, "refinement"),
                                                             (2, "proposal")}
    assert {m["agentId"] for m in found} == {"agent-architect", "agent-security"}
    assert all(m["agentRole"] in ("architect", "security") for m in found)


def test_the_live_conversation_is_read_at_each_call():
    state = debate([])
    tool = ContextSearch(conversation=state)
    assert matches(run(tool, term="queue")) == []
    state.rounds[0].contributions.append(contribution("a", "critic", "critique", "Add a queue."))
    assert [m["contentSnippet"] for m in matches(run(tool, term="queue"))] == ["Add a queue."]


def test_a_conversation_without_contributions_finds_nothing_and_does_not_fall_back():
    assert matches(run(ContextSearch(conversation=debate()), term="fares")) == []


def test_contributions_in_their_json_form_are_read_too():
    state = SimpleNamespace(rounds=[{"roundNumber": 3, "contributions": [
        {"agentId": "a1", "agentRole": "judge", "type": "critique", "content": "Too slow."}]}])
    assert matches(run(ContextSearch(conversation=state), term="slow"))[0]["roundNumber"] == 3


def test_a_conversation_must_have_rounds():
    with pytest.raises(pydantic.ValidationError, match="must have 'rounds'"):
        ContextSearch(conversation=["not", "a", "debate"])


# ------------------------------------------------------------------------------------------ snippets
def test_snippets_are_at_most_200_characters_and_show_the_term():
    long = ("lorem ipsum " * 40) + "the congestion charge funds it " + ("dolor sit amet " * 40)
    state = debate([contribution("a", "r", "proposal", long), contribution("b", "r", "proposal", "short charge")])
    found = matches(run(ContextSearch(conversation=state), term="congestion charge"))
    assert len(found) == 1
    text = found[0]["contentSnippet"]
    assert len(text) <= SNIPPET_CHARS and "congestion charge" in text
    assert text.startswith("…") and text.endswith("…")
    for result in (run(term="the"), run(term="free", max_results=50)):
        assert all(len(m["contentSnippet"]) <= SNIPPET_CHARS for m in matches(result))


@pytest.mark.parametrize("text, term", [
    ("x" * 500, "x"), ("a" * 150 + "needle" + "b" * 300, "needle"), ("a" * 400 + "needle", "needle"),
    ("needle" + "b" * 400, "needle"), ("short text", "text"), ("y" * 200, "y"), ("z" * 201, "z" * 201),
])
def test_snippet_bounds(text, term):
    cut = snippet(text, re.compile(re.escape(term)))
    assert len(cut) <= SNIPPET_CHARS
    assert cut == text if len(text) <= SNIPPET_CHARS else (term in cut or len(term) > SNIPPET_CHARS - 2)


def test_whitespace_runs_match_as_one_space():
    state = debate([contribution("a", "r", "proposal", "a congestion\n  charge")])
    found = matches(run(ContextSearch(conversation=state), term=" congestion   charge "))
    assert found[0]["contentSnippet"] == "a congestion charge"


# ------------------------------------------------------------------------------------------ history fallback
def test_history_entries_become_matches_numbered_by_position():
    found = matches(run(ContextSearch(history=HISTORY), term="solar", max_results=50, recency_weight=0.0))
    assert {(m["roundNumber"], m["agentId"]) for m in found} == {(1, "ana"), (3, "ana"), (4, "turn-4")}
    assert all(m["type"] == "message" and m["agentRole"] == m["agentId"] for m in found)
    by_round = {m["roundNumber"]: m for m in found}
    assert by_round[1]["timestamp"] == "2025-01-01T10:00:00Z" and "timestamp" not in by_round[4]
    assert matches(run(ContextSearch(history=HISTORY), term="turbines"))[0]["agentRole"] == "engineer"


def test_the_shipped_debate_is_searched_by_default():
    found = matches(run(term="Tallinn"))
    assert len(found) == 2 and {m["agentId"] for m in found} == {"Priya", "Daniel"}
    assert {m["agentRole"] for m in found} == {"for the motion", "against the motion"}


# ------------------------------------------------------------------------------------------ ranking
def expected_order(contents: list[str], term: str, weight: float) -> list[tuple[float, int]]:
    """The docstring's ranking written out: (score, position) of each matching contribution, best first."""
    hits = [c.lower().count(term.lower()) for c in contents]
    most = max(hits)
    scored = [(round((1 - weight) * h / most + weight * i / (len(contents) - 1), 4), i)
              for i, h in enumerate(hits) if h]
    return sorted(scored, key=lambda p: (-p[0], -p[1]))


@pytest.mark.parametrize("term", ["solar", "wind", "night", "o"])
@pytest.mark.parametrize("weight", [0.0, 0.2, 0.5, 1.0])
def test_ranking_follows_the_documented_formula(term, weight):
    found = matches(run(ContextSearch(history=HISTORY), term=term, max_results=50, recency_weight=weight))
    expected = expected_order([e["content"] for e in HISTORY], term, weight)
    assert [(m["relevanceScore"], m["roundNumber"]) for m in found] == [(s, i + 1) for s, i in expected]


def test_max_results_limits_matches_but_not_total_found():
    result = run(term="free", max_results=3)
    assert len(matches(result)) == 3 and result["result"]["totalFound"] > 3


def test_source_filter_takes_an_agent_id_or_a_role_case_insensitively():
    tool = ContextSearch(conversation=DEBATE)
    assert {m["agentId"] for m in matches(run(tool, term="cache", source="SECURITY"))} == {"agent-security"}
    assert {m["agentId"] for m in matches(run(tool, term="cache", source="agent-architect"))} == {"agent-architect"}
    assert {m["agentId"] for m in matches(run(term="congestion charge", source="daniel"))} == {"Daniel"}


# ------------------------------------------------------------------------------------------ errors
def test_an_unknown_source_is_an_error_with_close_matches():
    result = run(term="fares", source="Danial")
    assert result["status"] == "error" and "No contributions from 'Danial'" in result["result"]
    assert_failure(result, "unknown_source")
    assert result["suggestions"] == ["Daniel"]


def test_a_blank_term_is_an_error():
    result = run(term="   ")
    assert result["status"] == "error" and "blank" in result["result"] and is_failure(result)


INVALID = [
    ({}, "term"),
    ({"query": "fares"}, "term"),
    ({"term": ""}, "term"),
    ({"term": "x" * 301}, "term"),
    ({"term": "fares", "max_results": 0}, "max_results"),
    ({"term": "fares", "max_results": 51}, "max_results"),
    ({"term": "fares", "recency_weight": 1.5}, "recency_weight"),
    ({"term": "fares", "source": "x" * 65}, "source"),
    ({"term": "fares", "history": []}, "history"),
]


@pytest.mark.parametrize("arguments, field", INVALID, ids=[f"{f}-{i}" for i, (_, f) in enumerate(INVALID)])
def test_invalid_arguments_are_answered_in_the_error_shape_naming_the_field(arguments, field):
    result = TOOL_SET.registry().execute("context_search", arguments)
    jsonschema.validate(result, ERROR)
    assert_failure(result, "invalid_arguments")
    assert field in result["problems"] and field in result["result"]


@pytest.mark.parametrize("entry", [
    {"content": "No source"},
    {"content": "", "source": "a"},
    {"content": "Bad time", "source": "a", "timestamp": "yesterday"},
    {"content": "Extra", "source": "a", "speaker": "a"},
])
def test_a_malformed_history_is_refused_when_the_tool_is_built(entry):
    with pytest.raises(pydantic.ValidationError):
        ContextSearch(history=[entry])
