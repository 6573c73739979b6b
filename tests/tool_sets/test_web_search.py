"""The web_search tool set: BM25 against the formula computed independently, the shipped corpus, ranking on
known queries, pluggable backends, and the hosted Tavily backend over a local HTTP server (no internet)."""

import http.server
import json
import math
import threading
from collections import Counter
from urllib.parse import urlparse

import pydantic
import pytest

from tests.tool_sets.test_calculator import assert_failure, check_tool_set
from tool_selection import ToolArgumentError
from tool_sets.web_search import (
    TOOL_SET,
    BM25Index,
    Document,
    LocalIndexBackend,
    MissingAPIKeyError,
    SearchBackend,
    SearchResult,
    TavilyBackend,
    WebSearch,
    load_corpus,
    tokenize,
)

RESULT_KEYS = {"title", "url", "snippet", "score"}


def search(query: str, max_results: int = 5, tool: WebSearch | None = None) -> dict:
    result = (tool or WebSearch()).validate_and_execute(query=query, max_results=max_results)
    assert json.loads(json.dumps(result)) == result
    return result


def reference_bm25(documents: list[list[str]], query: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 written out from the textbook formula (Lucene idf), to check ``BM25Index`` against."""
    n = len(documents)
    average = sum(len(d) for d in documents) / n
    scores = []
    for document in documents:
        score = 0.0
        for term in set(query):
            df = sum(term in d for d in documents)
            tf = document.count(term)
            if df and tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(document) / average))
        scores.append(score)
    return scores


# ------------------------------------------------------------------------------------------ the set
def test_tool_set_loads_and_every_schema_is_bounded(monkeypatch):
    check_tool_set(TOOL_SET, monkeypatch)
    assert TOOL_SET.names() == ["web_search"]


# ------------------------------------------------------------------------------------------ BM25
DOCS = [["cat", "sat", "mat"], ["dog", "sat", "sat"], ["cat", "cat", "dog", "bird", "tree"], ["fish"]]


@pytest.mark.parametrize("query", [["cat"], ["sat"], ["cat", "dog"], ["bird", "fish", "cat"], ["cat", "cat"],
                                   ["unknown"], []])
def test_bm25_matches_the_formula(query):
    assert BM25Index(DOCS).scores(query) == pytest.approx(reference_bm25(DOCS, query))
    assert BM25Index(DOCS, k1=0.9, b=0.4).scores(query) == pytest.approx(reference_bm25(DOCS, query, k1=0.9, b=0.4))


def test_bm25_top_ranks_positive_scores_with_ties_by_position():
    index = BM25Index([["a", "c"], ["b", "c"], ["a", "c"], ["a", "a"]])
    top = index.top(["a"], 10)
    assert [i for i, _ in top] == [3, 0, 2] and top[1][1] == top[2][1]
    assert index.top(["a"], 1) == top[:1]
    assert index.top(["zzz"], 5) == []
    assert BM25Index([]).top(["a"], 3) == [] and len(BM25Index([])) == 0


def test_bm25_idf_is_positive_even_for_a_term_in_every_document():
    assert BM25Index([["x"], ["x", "y"]]).idf("x") > 0


def test_tokenize_lowercases_drops_stop_words_and_folds_plurals():
    assert tokenize("The Cities of the WORLD, and their 2 buses!") == ["city", "world", "2", "buse"]
    assert tokenize("eggs egg glass virus analysis") == ["egg", "egg", "glass", "virus", "analysis"]
    assert tokenize("?!... the of") == []


# ------------------------------------------------------------------------------------------ corpus
def test_corpus_is_well_formed_and_varied():
    corpus = load_corpus()
    assert 60 <= len(corpus) <= 100
    assert len({d.url for d in corpus}) == len(corpus) and len({d.title for d in corpus}) == len(corpus)
    hosts = Counter()
    for document in corpus:
        url = urlparse(document.url)
        assert url.scheme == "https" and url.hostname.endswith((".example.org", ".example.com", ".example.net"))
        assert document.title.strip() and 100 <= len(document.text) <= 700, document.url
        hosts[url.hostname] += 1
    assert len(hosts) == 7 and min(hosts.values()) >= 8


@pytest.mark.parametrize("query, url", [
    ("speed of light", "https://science.example.org/physics/speed-of-light"),
    ("how long to boil eggs", "https://kitchen.example.com/guides/boiling-eggs"),
    ("capital of Australia", "https://geo.example.org/atlas/capital-cities"),
    ("python virtual environment", "https://docs.example.org/python/virtual-environments"),
    ("git merge conflict", "https://docs.example.org/git/branching-and-merging"),
    ("404 not found status code", "https://docs.example.org/web/http-status-codes"),
    ("how tall is Mount Everest", "https://geo.example.org/atlas/mount-everest"),
    ("rule of 72 doubling money", "https://money.example.net/basics/rule-of-72"),
    ("Schengen 90 days", "https://travel.example.com/tips/schengen-90-180-rule"),
    ("CPR chest compressions per minute", "https://health.example.org/basics/cpr"),
    ("safe internal temperature chicken poultry", "https://kitchen.example.com/guides/food-safety-temperatures"),
])
def test_known_queries_find_their_page_first(query, url):
    result = search(query)
    assert result["ok"] and result["backend"] == "local" and result["query"] == query
    assert result["results"][0]["url"] == url


def test_results_are_ranked_bounded_and_shaped():
    result = search("temperature water boiling", max_results=4)
    results = result["results"]
    assert len(results) == 4
    assert all(set(r) == RESULT_KEYS for r in results)
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    for r in results:
        assert len(r["snippet"]) <= 240 and set(tokenize(r["snippet"])) & {"temperature", "water", "boiling"}
    assert search("temperature water boiling", max_results=4) == result


def test_snippet_is_the_sentence_with_most_query_terms():
    corpus = load_corpus()
    everest = next(d for d in corpus if d.url.endswith("/mount-everest"))
    snippet = search("first ascent Hillary", max_results=1)["results"][0]["snippet"]
    assert snippet in everest.text and "Hillary" in snippet and snippet.startswith("Edmund")


def test_nothing_found_is_an_empty_result_and_a_wordless_query_is_a_failure():
    assert search("quantum chromodynamics")["results"] == []
    assert_failure(search("?!?"), "no_search_terms")


# ------------------------------------------------------------------------------------------ backends
class FixedBackend:
    """A duck-typed backend: any object with ``name`` and ``search``."""

    name = "fixed"

    def __init__(self):
        self.calls = []

    def search(self, query: str, k: int) -> list[SearchResult]:
        self.calls.append((query, k))
        return [SearchResult(f"Result {i}", f"https://r.example.org/{i}", "word " * 100, 1.0 / (i + 1))
                for i in range(20)]


def test_any_object_with_name_and_search_plugs_in():
    backend = FixedBackend()
    assert isinstance(backend, SearchBackend)
    result = search("anything", max_results=3, tool=WebSearch(backend=backend))
    assert backend.calls == [("anything", 3)] and result["backend"] == "fixed"
    assert [r["url"] for r in result["results"]] == [f"https://r.example.org/{i}" for i in range(3)]
    assert all(len(r["snippet"]) <= 240 and r["snippet"].endswith("…") for r in result["results"])


def test_a_local_index_over_my_own_documents():
    backend = LocalIndexBackend([Document("Tea", "https://t.example.org/tea", "Green tea is steamed. Black tea is "
                                                                             "oxidised."),
                                 Document("Coffee", "https://t.example.org/coffee", "Coffee beans are roasted.")])
    result = search("black tea", tool=WebSearch(backend=backend))
    assert [r["url"] for r in result["results"]] == ["https://t.example.org/tea"]
    assert result["results"][0]["snippet"] == "Black tea is oxidised."


def test_a_backend_without_search_is_refused_when_the_tool_is_built():
    with pytest.raises(pydantic.ValidationError):
        WebSearch(backend=object())


def test_tavily_without_a_key_says_which_variable_to_set(monkeypatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="TAVILY_API_KEY") as caught:
        TavilyBackend().search("anything", 3)
    assert caught.value.variable == "TAVILY_API_KEY"
    result = search("anything", tool=WebSearch(backend=TavilyBackend()))
    assert_failure(result, "missing_api_key")
    assert "TAVILY_API_KEY" in result["message"] and result["variable"] == "TAVILY_API_KEY"
    assert result["backend"] == "tavily"


class _FakeTavily(http.server.BaseHTTPRequestHandler):
    """Answers like Tavily's POST /search; records each request on the server."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "authorization": self.headers["Authorization"], "body": body})
        status, payload = self.server.reply
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args):
        pass


@pytest.fixture
def fake_tavily():
    server = http.server.HTTPServer(("127.0.0.1", 0), _FakeTavily)
    server.requests, server.reply = [], (200, {})
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_tavily_request_and_response_mapping(fake_tavily, monkeypatch):
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    fake_tavily.reply = (200, {"query": "q", "results": [
        {"title": "Leo Messi", "url": "https://a.example.org/messi", "content": "Lionel Messi is a footballer.",
         "score": 0.81025416},
        {"title": "No url"},
        {"title": "", "url": "https://b.example.org/x", "content": "Second.", "score": "high"},
    ]})
    backend = TavilyBackend(endpoint=f"http://127.0.0.1:{fake_tavily.server_port}/search")
    result = search("who is Leo Messi?", max_results=3, tool=WebSearch(backend=backend))
    assert fake_tavily.requests == [{"path": "/search", "authorization": "Bearer tvly-test",
                                     "body": {"query": "who is Leo Messi?", "max_results": 3,
                                              "search_depth": "basic"}}]
    assert result["backend"] == "tavily" and result["results"] == [
        {"title": "Leo Messi", "url": "https://a.example.org/messi", "snippet": "Lionel Messi is a footballer.",
         "score": 0.8103},
        {"title": "https://b.example.org/x", "url": "https://b.example.org/x", "snippet": "Second.", "score": 0.0},
    ]


@pytest.mark.parametrize("reply, words", [
    ((401, {"detail": "Unauthorized"}), "rejected"),
    ((500, {"detail": "boom"}), "HTTP 500"),
    ((200, b"<html>not json</html>"), "not JSON"),
    ((200, {"answer": "no results list"}), "no 'results'"),
])
def test_tavily_errors_become_search_unavailable(fake_tavily, reply, words):
    fake_tavily.reply = reply
    backend = TavilyBackend(api_key="tvly-test", endpoint=f"http://127.0.0.1:{fake_tavily.server_port}/search")
    result = search("anything", tool=WebSearch(backend=backend))
    assert_failure(result, "search_unavailable")
    assert words in result["message"]


def test_tavily_unreachable_is_search_unavailable(fake_tavily):
    port = fake_tavily.server_port
    fake_tavily.shutdown()
    fake_tavily.server_close()
    backend = TavilyBackend(api_key="tvly-test", endpoint=f"http://127.0.0.1:{port}/search", timeout_s=2)
    result = search("anything", tool=WebSearch(backend=backend))
    assert_failure(result, "search_unavailable")
    assert "could not be reached" in result["message"]


# ------------------------------------------------------------------------------------------ validation
INVALID = [
    ({"query": ""}, "query"),
    ({"query": "x" * 301}, "query"),
    ({"query": "tea", "max_results": 0}, "max_results"),
    ({"query": "tea", "max_results": 11}, "max_results"),
    ({"query": "tea", "engine": "google"}, "engine"),
]


@pytest.mark.parametrize("arguments, field", INVALID, ids=[f for _, f in INVALID])
def test_invalid_arguments_raise_naming_the_field(arguments, field):
    with pytest.raises(ToolArgumentError) as caught:
        TOOL_SET.registry().execute("web_search", arguments)
    assert field in [p.field for p in caught.value.problems]
