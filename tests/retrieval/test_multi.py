"""Multi-vector dense retrieval: each example request is a vector of its own and a tool scores its closest."""

import numpy as np
import pytest

from tests.retrieval.conftest import needs_bm25s
from tool_selection.retrieval import DenseRetriever, MultiVectorDenseRetriever, get_retriever

EXAMPLES = {"book_flight": ["I need to get to Lisbon on Friday", "plane tickets to Oslo please"],
            "get_weather": ["will it rain in Paris tomorrow"]}


def test_a_request_like_an_example_finds_its_tool_by_that_example(small_registry, hashing_encoder, tmp_path):
    retriever = MultiVectorDenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry, EXAMPLES)
    best = retriever.retrieve("plane tickets to Oslo please", 1)[0]
    assert best.name == "book_flight" and best.score == pytest.approx(1.0, abs=1e-5)  # the example itself
    document_only = MultiVectorDenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    assert document_only.retrieve("plane tickets to Oslo please", 1)[0].score < 0.5


def test_a_tool_scores_its_closest_vector_and_every_example_is_embedded_apart(small_registry, hashing_encoder,
                                                                             tmp_path):
    retriever = MultiVectorDenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry, EXAMPLES)
    assert set(EXAMPLES["book_flight"]) <= set(hashing_encoder.encoded)  # each request its own text
    request = "will it rain in Paris tomorrow or snow"
    query = hashing_encoder.encode([request])[0]
    vectors = hashing_encoder.encode(["will it rain in Paris tomorrow"])
    scores = dict(retriever.retrieve(request, 5))
    documents = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    by_document = dict(documents.retrieve(request, 5))
    assert scores["get_weather"] == pytest.approx(max(by_document["get_weather"], float(vectors[0] @ query)))
    assert scores["translate_text"] == pytest.approx(by_document["translate_text"])  # no examples: its document


def test_without_examples_it_ranks_as_dense(small_registry, hashing_encoder, tmp_path):
    multi = MultiVectorDenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    dense = DenseRetriever(hashing_encoder, cache_dir=tmp_path).fit(small_registry)
    for request in ("translate this into French", "price of ACME shares", "email my boss"):
        assert multi.retrieve(request, 5) == dense.retrieve(request, 5)


def test_other_examples_build_another_index(small_registry, hashing_encoder, tmp_path):
    retriever = MultiVectorDenseRetriever(hashing_encoder, cache_dir=tmp_path)
    first = retriever.fit(small_registry, EXAMPLES).fitted_hash
    assert retriever.fit(small_registry, EXAMPLES).fitted_hash == first
    moved = {"get_stock_price": EXAMPLES["book_flight"]}  # the same requests under another tool
    assert retriever.fit(small_registry, moved).fitted_hash != first
    assert retriever.retrieve("plane tickets to Oslo please", 1)[0].name == "get_stock_price"
    assert np.isfinite([hit.score for hit in retriever.retrieve("anything", 5)]).all()


@needs_bm25s
def test_hybrid_multi_fuses_bm25_with_the_multi_vector_half(small_registry, minilm, tmp_path):
    hybrid = get_retriever("hybrid-multi")
    assert [type(part).__name__ for part in hybrid.retrievers] == ["BM25Retriever", "MultiVectorDenseRetriever"]
    hybrid.fit(small_registry, EXAMPLES)
    assert hybrid.retrieve("I need to get to Lisbon on Friday", 1)[0].name == "book_flight"
