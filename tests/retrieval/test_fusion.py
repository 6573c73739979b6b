"""Convex fusion: a hybrid retriever's parts' scores, min-max normalised and weighted, in place of their ranks."""

import dspy
import numpy as np
import pytest

from tests.retrieval.test_hybrid import FixedRanking
from tool_selection.retrieval import (
    CATALOG_WEIGHT,
    CONVEX_WEIGHTS,
    HybridRetriever,
    IndexedRetriever,
    MultiVectorHybridRetriever,
    catalog_evidence,
    convex_fusion,
    get_retriever,
    register_retriever,
)
from tool_selection.retrieval._factory import RETRIEVERS


class FixedScores(IndexedRetriever):
    """Scores each fitted tool by a fixed table (0 for a tool it does not name)."""

    def __init__(self, scores):
        super().__init__()
        self.table = scores

    def cache_key(self):
        return ("fixed-scores", id(self))

    def _build(self, names, documents, registry_hash):
        return names

    def _scores(self, request):
        return np.array([self.table.get(name, 0.0) for name in self._names], dtype=float)


LEXICAL = {"get_weather": 10.0, "book_flight": 1.0}  # the others 0
DENSE = {"get_weather": 0.0, "book_flight": 0.5, "translate_text": 1.0, "get_stock_price": 0.2, "sendEmailMessage": 0.1}


def test_scores_are_normalised_to_their_range_before_they_are_weighted():
    fused = convex_fusion([np.array([0.0, 5.0, 10.0]), np.array([1.0, 0.0, 0.5])], [0.5, 0.5])
    assert fused == pytest.approx([0.5, 0.25, 0.75])
    assert convex_fusion([np.array([2.0, 2.0]), np.array([0.0, 4.0])], [1, 1]) == pytest.approx([0.0, 1.0])


def test_a_score_that_is_not_finite_counts_as_the_lowest():
    assert convex_fusion([np.array([-np.inf, 1.0, 3.0])], [1.0]) == pytest.approx([0.0, 0.0, 1.0])


def test_convex_fusion_wants_one_weight_per_score_vector():
    with pytest.raises(ValueError, match="^1 weights for 2 score vectors: give one weight per retriever$"):
        convex_fusion([np.zeros(2), np.zeros(2)], [1.0])


def test_weighted_scores_and_reciprocal_ranks_order_tools_differently(small_registry):
    parts = lambda: [FixedScores(LEXICAL), FixedScores(DENSE)]  # noqa: E731
    convex = HybridRetriever(parts(), fusion="convex", weights=CONVEX_WEIGHTS).fit(small_registry)
    rrf = HybridRetriever(parts()).fit(small_registry)
    # normalised, get_weather 1 and 0, book_flight 0.1 and 0.5, translate_text 0 and 1: 0.3, 0.38, 0.7; ranked,
    # 1 and 5, 2 and 2, 5 and 1 (a tie with get_weather, broken by name)
    assert [t.name for t in convex.retrieve("anything", k=3)] == ["translate_text", "book_flight", "get_weather"]
    assert [t.name for t in convex.retrieve("anything", k=1)][0] == "translate_text"
    assert convex.retrieve("anything", k=1)[0].score == pytest.approx(0.7)
    assert [t.name for t in rrf.retrieve("anything", k=3)] == ["book_flight", "get_weather", "translate_text"]


def test_given_retrievers_are_weighted_equally_and_the_default_pair_by_the_dev_chosen_weights():
    assert HybridRetriever([FixedScores({}), FixedScores({})], fusion="convex").weights == (1.0, 1.0)
    assert HybridRetriever(fusion="convex").weights == CONVEX_WEIGHTS
    assert get_retriever("hybrid-multi", fusion="convex").weights == CONVEX_WEIGHTS


def test_convex_fusion_refuses_a_retriever_that_ranks_only_its_nearest_tools():
    with pytest.raises(ValueError, match="FixedRanking ranks only its nearest tools: use fusion='rrf'"):
        HybridRetriever([FixedScores({}), FixedRanking([])], fusion="convex")
    pytest.importorskip("faiss")
    with pytest.raises(ValueError, match="HNSWDenseRetriever ranks only its nearest tools"):
        get_retriever("hybrid-hnsw", fusion="convex")


@pytest.mark.parametrize(("options", "message"), [
    ({"fusion": "mean"}, "^unknown fusion 'mean': choose one of rrf, convex, convex-catalog$"),
    ({"weights": [1.0]}, r"^weights \[1.0\] for 2 retrievers: give one weight \(>= 0\) per retriever, not all zero$"),
    ({"weights": [0.0, 0.0]}, r"^weights \[0.0, 0.0\] for 2 retrievers"),
    ({"weights": [-1.0, 2.0]}, r"^weights \[-1.0, 2.0\] for 2 retrievers"),
    ({"fusion": "rrf", "weights": [1.0, 2.0]}, "^weights weigh the scores of convex fusion: give fusion='convex'")])
def test_a_hybrid_refuses_an_unknown_fusion_and_weights_that_do_not_fit(options, message):
    with pytest.raises(ValueError, match=message):
        HybridRetriever([FixedScores({}), FixedScores({})], **{"fusion": "convex", **options})


def test_convex_fusion_needs_its_parts_fitted_to_the_same_tools(small_registry):
    from tests.retrieval.conftest import FUNCTIONS
    from tool_selection.interop import from_openai

    lexical, dense = FixedScores(LEXICAL), FixedScores(DENSE)
    hybrid = HybridRetriever([lexical, dense], fusion="convex").fit(small_registry)
    dense.fit(from_openai(FUNCTIONS[:2], name="two"))
    with pytest.raises(ValueError, match="fitted to the same tools: fit the hybrid retriever"):
        hybrid.retrieve("anything")


def test_the_spec_names_the_retrievers_a_fusion_applies_to():
    from tool_selection.spec import RetrievalSpec

    assert RetrievalSpec(k=5, retriever="hybrid-multi", fusion="convex").fusion == "convex"
    assert "fusion" not in RetrievalSpec(k=5).model_dump(exclude_none=True)  # unset: runs record nothing new
    with pytest.raises(ValueError, match=r"merges a hybrid retriever's rankings, and bm25 is not one: use hybrid"):
        RetrievalSpec(k=5, retriever="bm25", fusion="rrf")
    with pytest.raises(ValueError, match=r"reads every tool's score, and hybrid-hnsw searches an approximate index"):
        RetrievalSpec(k=5, retriever="hybrid-hnsw", fusion="convex")
    assert RetrievalSpec(k=5, retriever="hybrid-hnsw", fusion="rrf").fusion == "rrf"
    with pytest.raises(ValueError, match=r"the fusion \(--retrieve-fusion\) merges .* give retrieve \(--retrieve\)"):
        RetrievalSpec.model_validate({"fusion": "convex"})


class ScriptedHybrid(HybridRetriever):
    name = "scripted-hybrid"

    @staticmethod
    def _default_retrievers():
        return FixedScores(LEXICAL), FixedScores(DENSE)


@pytest.fixture
def scripted_hybrid():
    register_retriever(ScriptedHybrid)
    yield
    RETRIEVERS.unregister("scripted-hybrid")


def test_the_selector_builds_its_hybrid_retriever_with_the_fusion_asked_for(make_lm, small_registry, scripted_hybrid):
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import RetrievalSpec

    shown = {}
    for fusion in ("rrf", "convex", "convex-catalog"):
        lm, llama = make_lm(['{"reasoning": "r", "tool_calls": []}'], cache=False)
        selector = MultiToolSelector(small_registry, strategy="json-cot", relevance=None,
                                     retrieval=RetrievalSpec(k=1, retriever="scripted-hybrid", fusion=fusion))
        with dspy.context(lm=lm):
            selector(request="anything")
        assert selector._retriever.fusion == fusion
        shown[fusion] = llama.calls[-1]["messages"][-1]["content"]
    assert "book_flight" in shown["rrf"] and "translate_text" not in shown["rrf"]
    assert "translate_text" in shown["convex"] and "book_flight" not in shown["convex"]
    assert shown["convex-catalog"] == shown["convex"]  # one catalog: every tool lifted alike


def test_the_multi_vector_hybrid_fuses_its_closest_vectors_convexly_when_asked():
    assert get_retriever("hybrid-multi", fusion="convex").fusion == "convex"
    assert isinstance(get_retriever("hybrid-multi"), MultiVectorHybridRetriever)
    assert get_retriever("hybrid-multi").fusion == "rrf"


def test_a_catalogs_evidence_is_the_sum_of_its_two_best_scores():
    scores = np.array([0.9, 0.5, 0.1, 0.8, 0.7, 0.3])
    catalogs = np.array([0, 0, 0, 1, 1, 2])
    assert catalog_evidence(scores, catalogs) == pytest.approx([1.4, 1.4, 1.4, 1.5, 1.5, 0.3])  # a lone tool: its own
    assert catalog_evidence(scores, catalogs, best=1) == pytest.approx([0.9, 0.9, 0.9, 0.8, 0.8, 0.3])
    assert catalog_evidence(np.zeros(0), np.zeros(0, dtype=int)).shape == (0,)


def test_convex_catalog_lifts_a_tool_whose_catalog_matches_above_a_lone_look_alike():
    from tests.retrieval.test_catalogs import MARKET, SHOP
    from tool_selection.interop import from_openai
    from tool_selection.registry import ToolRegistry

    registry = ToolRegistry("two catalogs", [*from_openai(SHOP, category="shop").tools(),
                                             *from_openai(MARKET, category="market").tools()])
    # the market's look-alike scores best alone; the shop's order tools all score well
    lexical = {"order_status_check": 1.0, "get_order_status": 0.9, "cancel_order": 0.8, "list_orders": 0.7}
    dense = {"order_status_check": 1.0, "get_order_status": 0.9, "cancel_order": 0.7, "list_orders": 0.6}
    parts = lambda: [FixedScores(lexical), FixedScores(dense)]  # noqa: E731
    convex = HybridRetriever(parts(), fusion="convex", weights=(0.5, 0.5)).fit(registry)
    assert [t.name for t in convex.retrieve("where is my order", k=2)] == ["order_status_check", "get_order_status"]
    lifted = HybridRetriever(parts(), fusion="convex-catalog", weights=(0.5, 0.5)).fit(registry)
    assert lifted.catalog_weight == CATALOG_WEIGHT
    top = lifted.retrieve("where is my order", k=2)
    assert [t.name for t in top] == ["get_order_status", "order_status_check"]
    # get_order_status 0.9 + 0.2 * (0.9 + 0.75); order_status_check 1.0 + 0.2 * (1.0 + 0.0)
    assert [t.score for t in top] == pytest.approx([0.9 + 0.2 * 1.65, 1.0 + 0.2 * 1.0])
    lighter = HybridRetriever(parts(), fusion="convex-catalog", weights=(0.5, 0.5), catalog_weight=0.05).fit(registry)
    assert lighter.retrieve("where is my order", k=1)[0].name == "order_status_check"
    one_catalog = ToolRegistry("one catalog", [*from_openai(SHOP + MARKET, category="shop").tools()])
    assert lifted.fit(one_catalog).retrieve("where is my order", k=1)[0].name == "order_status_check"  # all alike
    assert lifted.fit(registry).retrieve("where is my order", k=1)[0].name == "get_order_status"
    for tool in from_openai(SHOP, category="market").tools():  # the same documents, now under the market, in place
        registry.register(tool, replace=True)
    assert lifted.fit(registry).retrieve("where is my order", k=1)[0].name == "order_status_check"  # all alike


@pytest.mark.parametrize(("options", "message"), [
    ({"fusion": "convex", "catalog_weight": 0.2}, "^catalog_weight weighs each catalog's evidence: give "
                                                  "fusion='convex-catalog'"),
    ({"fusion": "convex-catalog", "catalog_weight": 0.0}, "^catalog_weight must be > 0, got 0.0$")])
def test_a_catalog_weight_needs_the_catalog_fusion_and_a_positive_value(options, message):
    with pytest.raises(ValueError, match=message):
        HybridRetriever([FixedScores({}), FixedScores({})], **options)


def test_convex_catalog_reads_the_catalogs_of_the_tools_it_was_fitted_to(small_registry):
    from tests.retrieval.conftest import FUNCTIONS
    from tool_selection.interop import from_openai

    lexical, dense = FixedScores(LEXICAL), FixedScores(DENSE)
    hybrid = HybridRetriever([lexical, dense], fusion="convex-catalog").fit(small_registry)
    two = from_openai(FUNCTIONS[:2], name="two")
    lexical.fit(two), dense.fit(two)
    with pytest.raises(ValueError, match="reads the catalogs of the tools it was fitted to: fit the hybrid retriever"):
        hybrid.retrieve("anything")
    assert {t.name for t in hybrid.fit(two).retrieve("anything", k=5)} == set(two.names())


def test_the_spec_and_get_retriever_take_the_catalog_fusion():
    from tool_selection.spec import RetrievalSpec

    assert RetrievalSpec(k=5, retriever="hybrid-multi", fusion="convex-catalog").fusion == "convex-catalog"
    with pytest.raises(ValueError, match=r"fusion=convex-catalog \(--retrieve-fusion\) reads every tool's score, and "
                                         "hybrid-hnsw"):
        RetrievalSpec(k=5, retriever="hybrid-hnsw", fusion="convex-catalog")
    assert get_retriever("hybrid-multi", fusion="convex-catalog").catalog_weight == CATALOG_WEIGHT
