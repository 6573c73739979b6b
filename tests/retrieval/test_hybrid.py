import pytest

from tests.retrieval.conftest import needs_bm25s
from tool_selection.retrieval import (
    BM25Retriever,
    DenseRetriever,
    HybridRetriever,
    RetrievedTool,
    ToolRetriever,
    reciprocal_rank_fusion,
)


def test_fusion_rewards_tools_ranked_well_by_several_retrievers():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "d"]], k=60)
    assert [t.name for t in fused] == ["b", "c", "a", "d"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[-1].score == pytest.approx(1 / 63)


def test_fusion_orders_equal_scores_by_name():
    assert [t.name for t in reciprocal_rank_fusion([["y", "x"], ["x", "y"]])] == ["x", "y"]


def test_fusion_accepts_retrieved_tools():
    ranking = [RetrievedTool("a", 9.0), RetrievedTool("b", 1.0)]
    assert [t.name for t in reciprocal_rank_fusion([ranking])] == ["a", "b"]


class FixedRanking(ToolRetriever):
    """A retriever that always returns the same ranking, and records what it was asked."""

    name = "fixed"

    def __init__(self, ranking):
        self.ranking = ranking
        self.fitted = None
        self.examples = None
        self.asked_k = []

    def fit(self, registry, examples=None):
        self.fitted, self.examples = registry, examples
        return self

    def retrieve(self, request, k=5):
        self.asked_k.append(k)
        return [RetrievedTool(name, 1.0) for name in self.ranking[:k]]


def test_the_hybrid_fits_every_retriever_and_fuses_their_rankings(small_registry):
    lexical = FixedRanking(["get_weather", "book_flight", "translate_text"])
    dense = FixedRanking(["book_flight", "get_stock_price", "get_weather"])
    examples = {"get_weather": ["Is it sunny?"]}
    hybrid = HybridRetriever([lexical, dense], depth=3).fit(small_registry, examples)
    assert lexical.fitted is small_registry and dense.fitted is small_registry
    assert lexical.examples is examples and dense.examples is examples
    assert [t.name for t in hybrid.retrieve("anything", k=2)] == ["book_flight", "get_weather"]
    assert lexical.asked_k == [3]


def test_the_hybrid_asks_for_at_least_k_tools():
    lexical = FixedRanking(["a"])
    HybridRetriever([lexical], depth=2).retrieve("anything", k=7)
    assert lexical.asked_k == [7]


def test_the_hybrid_needs_a_retriever_and_a_positive_depth():
    with pytest.raises(ValueError, match="^HybridRetriever needs at least one retriever to fuse$"):
        HybridRetriever([])
    with pytest.raises(ValueError, match="^depth must be a positive integer, got 0$"):
        HybridRetriever([FixedRanking([])], depth=0)


@needs_bm25s
def test_the_default_hybrid_fuses_bm25_and_the_packaged_model(minilm, tmp_path, small_registry):
    hybrid = HybridRetriever()
    assert [type(r) for r in hybrid.retrievers] == [BM25Retriever, DenseRetriever]
    hybrid = HybridRetriever([BM25Retriever(), DenseRetriever(minilm, cache_dir=tmp_path)]).fit(small_registry)
    assert hybrid.retrieve("Will it rain in Oslo? What's the weather?", k=1)[0].name == "get_weather"
    assert len(hybrid.retrieve("weather", k=20)) == len(small_registry)
