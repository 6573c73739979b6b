import sys

import numpy as np
import pytest

from tool_selection.errors import ToolSelectionError
from tool_selection.interop import from_openai
from tool_selection.retrieval import (
    DenseRetriever,
    HNSWDenseRetriever,
    HNSWHybridRetriever,
    get_retriever,
)

faiss = pytest.importorskip("faiss", reason="the approximate index needs faiss-cpu (the retrieval extra)")

TOPICS = ["weather", "stock", "flight", "hotel", "email", "invoice", "recipe", "movie", "song", "translate",
          "calendar", "payment", "shipment", "ticket", "review", "podcast", "vaccine", "mortgage", "parking", "tax"]
ACTIONS = ["get", "list", "create", "cancel", "update", "search", "delete", "share", "rate", "export"]


@pytest.fixture
def large_registry():
    functions = [{"name": f"{action}_{topic}_{i}",
                  "description": f"{action.title()} the {topic} records of region {i} {topic} {action}."}
                 for topic in TOPICS for action in ACTIONS for i in range(3)]
    return from_openai(functions, name="large")


def test_the_graph_finds_what_exact_search_finds(large_registry, hashing_encoder, tmp_path):
    exact = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(large_registry)
    approximate = HNSWDenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(large_registry)
    requests = [f"{action} my {topic}" for topic in TOPICS for action in ACTIONS[:3]]
    found = [np.allclose([t.score for t in exact.retrieve(r, 10)], [t.score for t in approximate.retrieve(r, 10)],
                         atol=1e-5) for r in requests]  # scores, not names: equally scored tools may swap
    assert np.mean(found) >= 0.95
    top = approximate.retrieve("cancel my flight", 5)
    assert [t.score for t in top] == sorted((t.score for t in top), reverse=True)
    assert top[0].score == pytest.approx(exact.retrieve("cancel my flight", 1)[0].score, abs=1e-5)


def test_the_graph_is_built_the_same_way_every_time(large_registry, hashing_encoder, tmp_path):
    first = HNSWDenseRetriever(hashing_encoder, cache_dir=tmp_path, disk_cache=False, ef_search=8)
    second = HNSWDenseRetriever(hashing_encoder, cache_dir=tmp_path, disk_cache=False, ef_search=8)
    first.fit(large_registry)
    from tool_selection.retrieval import clear_index_cache

    clear_index_cache()
    second.fit(large_registry)
    assert first._index is not second._index
    for request in ("rate a song", "export tax invoices", "share the podcast"):
        assert first.retrieve(request, 8) == second.retrieve(request, 8)


def test_it_shares_the_exact_retrievers_embeddings_on_disk(large_registry, hashing_encoder, tmp_path):
    DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(large_registry)
    embedded = len(hashing_encoder.encoded)
    HNSWDenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(large_registry)
    assert len(hashing_encoder.encoded) == embedded


def test_asking_for_more_than_the_registry_holds_returns_every_tool(small_registry, hashing_encoder, tmp_path):
    retriever = HNSWDenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    assert sorted(t.name for t in retriever.retrieve("weather", 50)) == small_registry.names()
    assert len(retriever._scores("weather")) == len(small_registry)


def test_it_refuses_to_retrieve_before_fit_and_bad_settings(hashing_encoder):
    with pytest.raises(ToolSelectionError, match="HNSWDenseRetriever is not fitted: call fit"):
        HNSWDenseRetriever(hashing_encoder).retrieve("weather")
    with pytest.raises(ValueError, match="^ef_search must be a positive integer, got 0$"):
        HNSWDenseRetriever(hashing_encoder, ef_search=0)


def test_both_are_registered_and_hybrid_fuses_bm25_with_the_graph():
    pytest.importorskip("bm25s")
    assert isinstance(get_retriever("dense-hnsw"), HNSWDenseRetriever)
    hybrid = get_retriever("hybrid-hnsw")
    assert isinstance(hybrid, HNSWHybridRetriever)
    assert [type(r).__name__ for r in hybrid.retrievers] == ["BM25Retriever", "HNSWDenseRetriever"]


def test_without_faiss_the_error_names_the_extra(monkeypatch, hashing_encoder):
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(ToolSelectionError, match="^Approximate nearest-neighbour tool retrieval needs the 'faiss-cpu' "
                                                 "package, which is not installed. Install the retrieval extra"):
        HNSWDenseRetriever(hashing_encoder)
