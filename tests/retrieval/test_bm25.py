import numpy as np
import pytest

from tests.retrieval.conftest import FUNCTIONS, function, needs_bm25s
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import from_openai
from tool_selection.retrieval import BM25Retriever, RetrievedTool

pytestmark = needs_bm25s


@pytest.mark.parametrize(("request_text", "tool"), [
    ("What's the weather like in Oslo?", "get_weather"),
    ("Latest price of the ACME stock", "get_stock_price"),
    ("Translate 'good morning' into French", "translate_text"),
    ("Send an email to Ana with the subject 'Lunch'", "sendEmailMessage"),
    ("I need a flight from Lisbon to Rome on May 3", "book_flight"),
])
def test_the_obvious_tool_ranks_first(small_registry, request_text, tool):
    assert BM25Retriever().fit(small_registry).retrieve(request_text, k=3)[0].name == tool


def test_asking_for_more_tools_than_exist_returns_them_all_best_first(small_registry):
    results = BM25Retriever().fit(small_registry).retrieve("weather in Oslo", k=50)
    assert sorted(r.name for r in results) == small_registry.names()
    assert all(isinstance(r, RetrievedTool) for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_a_request_of_stop_words_only_scores_every_tool_zero(small_registry):
    results = BM25Retriever().fit(small_registry).retrieve("what is it?", k=5)
    assert [r.score for r in results] == [0.0] * 5
    assert [r.name for r in results] == small_registry.names()  # ties ordered by name


def test_retrieve_before_fit_and_bad_k_are_refused(small_registry):
    with pytest.raises(ToolSelectionError, match=r"^BM25Retriever is not fitted: call fit\(registry\) before retrieve\(\)\.$"):
        BM25Retriever().retrieve("weather")
    with pytest.raises(ValueError, match="^k must be a positive integer, got 0$"):
        BM25Retriever().fit(small_registry).retrieve("weather", k=0)


def test_an_empty_registry_retrieves_nothing():
    assert BM25Retriever().fit(from_openai([])).retrieve("weather") == []


def count_builds(monkeypatch, cls):
    builds = []
    original = cls._build

    def counting(self, names, documents, registry_hash):
        builds.append(registry_hash)
        return original(self, names, documents, registry_hash)

    monkeypatch.setattr(cls, "_build", counting)
    return builds


def test_fitting_the_same_tools_again_builds_nothing(monkeypatch, small_registry):
    builds = count_builds(monkeypatch, BM25Retriever)
    retriever = BM25Retriever().fit(small_registry)
    retriever.fit(small_registry)
    BM25Retriever().fit(from_openai(FUNCTIONS, name="an equal copy"))  # shared in-memory index
    assert len(builds) == 1


def test_a_changed_registry_is_fitted_anew(monkeypatch, small_registry):
    builds = count_builds(monkeypatch, BM25Retriever)
    retriever = BM25Retriever().fit(small_registry)
    larger = from_openai([*FUNCTIONS, function("get_time", "Current local time in a city.", city="City name.")])
    assert retriever.fit(larger).retrieve("What time is it in Lima?", k=1)[0].name == "get_time"
    assert len(builds) == 2
    assert retriever.fitted_hash == builds[-1]


def test_a_different_configuration_builds_its_own_index(monkeypatch, small_registry):
    builds = count_builds(monkeypatch, BM25Retriever)
    BM25Retriever().fit(small_registry)
    BM25Retriever(stemmer=None).fit(small_registry)
    assert len(builds) == 2


def test_stemming_matches_word_forms(small_registry):
    scores = BM25Retriever().fit(small_registry).retrieve("translating", k=1)
    assert scores[0].name == "translate_text" and scores[0].score > 0
    unstemmed = BM25Retriever(stemmer=None).fit(small_registry).retrieve("translating", k=1)
    assert np.isclose(unstemmed[0].score, 0.0)


def test_example_requests_let_a_tool_match_their_words(small_registry):
    request = "Is it going to be sunny at the beach?"
    assert BM25Retriever().fit(small_registry).retrieve(request, k=1)[0].score == 0.0
    examples = {"get_weather": ["Will it be sunny tomorrow?"]}
    assert BM25Retriever().fit(small_registry, examples).retrieve(request, k=1)[0].name == "get_weather"
