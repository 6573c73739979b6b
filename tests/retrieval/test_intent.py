"""Retrieval through the request's intents (``tool_selection.retrieval.intent``): what is kept of the model's
answer, the fused rankings, the selector's ``query`` setting and the scale benchmark's intent rows."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.benchmarks.scale import retrieval_table, write_intents
from evals.suite import Suite, load_suite
from tests.retrieval.conftest import FUNCTIONS, needs_bm25s
from tool_selection.interop import from_openai
from tool_selection.retrieval import RetrievedTool, ToolRetriever
from tool_selection.retrieval.intent import (
    INTENT_VERSION,
    MAX_INTENTS,
    IntentRetriever,
    IntentRewriter,
    parse_intents,
)
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import RetrievalSpec


def test_an_answer_becomes_its_distinct_phrases():
    assert parse_intents("convert currency; look up a stock price.\n- Look up a stock price\n2) book a flight") == (
        "convert currency", "look up a stock price", "book a flight")
    assert parse_intents("") == () and parse_intents(" ; \n") == ()
    assert parse_intents("reserve a hotel room; get the weather forecast; Book a table for four at Luigi's") == (
        "reserve a hotel room",)  # a demonstration's phrase or request, copied in part, is dropped
    assert len(parse_intents(";".join(f"action {n}" for n in range(9)))) == MAX_INTENTS


def test_the_rewriter_asks_once_per_request_and_a_malformed_answer_reads_the_request_alone():
    lm = DummyLM([{"actions": "exchange money into another currency; look up a stock price"}])
    rewriter = IntentRewriter(lm)
    request = "Swap 100 EUR into USD and tell me what ACME trades at"
    assert rewriter(request) == ("exchange money into another currency", "look up a stock price")
    assert rewriter(request) == rewriter.seen[request] and rewriter.seconds >= 0  # answered from memory
    junk = {"nothing": "useful"}  # twice: the chat format's answer, then the JSON format's it falls back to
    assert IntentRewriter(DummyLM([junk, junk]))("Anything?") == ()
    assert IntentRewriter(known={"Hi?": ["greet the user"]})("Hi?") == ("greet the user",)  # no model asked


class Listed(ToolRetriever):
    """Answers each query with the ranking it was given for it (unknown queries: nothing)."""

    name = "listed"

    def __init__(self, rankings):
        self.rankings, self.asked = rankings, []

    def fit(self, registry, examples=None):
        return self

    def retrieve(self, request, k=5):
        self.asked.append(request)
        return [RetrievedTool(name, 1.0) for name in self.rankings.get(request, [])[:k]]


def test_each_intent_is_ranked_and_the_rankings_fused():
    rankings = {"request": ["a", "b", "c"], "first action": ["c", "d"], "second action": ["e", "c"]}
    intents = {"request": ("first action", "second action")}.get
    both = IntentRetriever(Listed(rankings), lambda r: intents(r, ()), "request+intent")
    assert [hit.name for hit in both.retrieve("request", k=3)] == ["c", "a", "e"]  # c in all three; a, e first once
    alone = IntentRetriever(base := Listed(rankings), lambda r: intents(r, ()), "intent")
    assert [hit.name for hit in alone.retrieve("request", k=2)] == ["c", "e"] and base.asked == [
        "first action", "second action"]
    unread = IntentRetriever(Listed(rankings), lambda r: (), "intent")  # no intents: the request itself
    assert [hit.name for hit in unread.retrieve("request", k=2)] == ["a", "b"]
    with pytest.raises(ValueError, match="query must be one of intent, request\\+intent"):
        IntentRetriever(Listed(rankings), intents, "intents")


def test_a_query_without_retrieval_is_refused():
    with pytest.raises(ValueError, match=r"the query \(--retrieve-query\) feeds the retriever's candidates"):
        RetrievalSpec(query="intent")
    assert RetrievalSpec(k=3, query="request+intent").query == "request+intent"


@needs_bm25s
def test_the_selector_retrieves_by_the_intents_its_model_reads():
    registry = from_openai(FUNCTIONS, name="five")
    selector = MultiToolSelector(registry, retrieval=RetrievalSpec(k=1, retriever="bm25", query="intent"),
                                 strategy="json-cot", relevance="none")
    intent = {"actions": "translate text into another language"}  # twice: the chat format's parse of a JSON answer
    lm = DummyLM([intent, intent, {"reasoning": "r", "tool_calls": "[]"}], adapter=dspy.JSONAdapter())  # fails
    with dspy.context(lm=lm):
        prediction = selector(request="What does 'hyvää huomenta' mean?")  # no word of the request is in a document
    assert prediction.row_extras["retrieved"] == ["translate_text"]
    assert prediction.row_extras["retrieval_intents"] == ["translate text into another language"]
    assert prediction.row_extras["intent_seconds"] >= 0


@needs_bm25s
def test_the_retrieval_table_adds_intent_rows_read_from_a_kept_file(tmp_path, monkeypatch):
    import tool_selection.lm

    needing = Suite("few", [case for case in load_suite("finance").split("test").cases if case.expected_calls][:3])
    lm = DummyLM([{"actions": "exchange money into another currency"}] * 3)
    monkeypatch.setattr(tool_selection.lm, "get_lm", lambda model, **settings: lm)
    path = tmp_path / "intents.json"
    intents = write_intents(path, "local:m", needing)
    kept = json.loads(path.read_text())
    assert kept["writer"] == {"version": INTENT_VERSION, "model": "local:m"} and len(kept["intents"]) == 3
    assert intents == {case.prompt: ("exchange money into another currency",) for case in needing}
    assert write_intents(path, "local:m", needing) == intents  # resumed: nothing asked again
    with pytest.raises(SystemExit, match="holds intents read by"):
        write_intents(path, "local:other", needing)
    table = retrieval_table(needing, sizes=[200], ks=[1, 5], retrievers=["bm25"], intents=intents)
    assert list(table["retriever"]) == ["bm25", "bm25, intent", "bm25, request+intent"]


def test_a_rewriter_remembers_the_most_recent_requests_up_to_its_bound():
    rewriter = IntentRewriter(known={"a": ["x"], "b": ["y"]}, remember=2)
    rewriter._rewrite = lambda request: (request.upper(),)
    assert rewriter("a") == ("x",)  # from memory: now the most recent
    assert rewriter("c") == ("C",)  # asked: "b", the least recent, is forgotten
    assert list(rewriter.seen) == ["a", "c"]
    assert IntentRewriter(remember=None).remember is None
    with pytest.raises(ValueError, match="remember must be a positive number"):
        IntentRewriter(remember=0)
