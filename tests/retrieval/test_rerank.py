"""The LLM re-ranker: each candidate asked "does this function do exactly what the request asks?", ordered by the
Yes/No score, the retriever's order breaking ties."""

import dspy
import pytest

from tests.retrieval.conftest import needs_bm25s
from tool_selection.retrieval import LLMReranker, RetrievedTool
from tool_selection.retrieval._rerank import RERANK_QUESTION


def test_candidates_are_ordered_by_the_models_answer(make_lm, small_registry):
    names = small_registry.names()[:3]
    lm, llama = make_lm(["No", "Yes", "No"], cache=False)
    hits = [RetrievedTool(name, 1.0 - i / 10) for i, name in enumerate(names)]
    ranked = LLMReranker(lm, keep=2).rerank("What is the weather in Oslo?", small_registry, hits)
    assert [hit.name for hit in ranked] == [names[1], names[0]]  # the Yes first; the two No keep their order
    assert ranked[0].score > 0 > ranked[1].score
    asked = [call["messages"][-1]["content"] for call in llama.calls]
    assert len(asked) == 3 and all(text.startswith("Request: What is the weather in Oslo?") for text in asked)
    assert all(RERANK_QUESTION in text for text in asked)
    assert all(f"Function: {name}(" in text for name, text in zip(names, asked))


def test_keep_must_be_a_positive_count():
    with pytest.raises(ValueError, match="keep must be a positive integer"):
        LLMReranker(keep=0)


@needs_bm25s
def test_the_selector_keeps_the_best_of_the_re_ranked_candidates(make_lm, small_registry):
    from tool_selection.retrieval import get_retriever
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import RetrievalSpec

    request = "Book a flight to Oslo and tell me the weather there"
    candidates = [hit.name for hit in get_retriever("bm25").fit(small_registry).retrieve(request, 3)]
    lm, llama = make_lm(["No", "No", "Yes", '{"reasoning": "r", "tool_calls": []}'], cache=False)
    selector = MultiToolSelector(small_registry, strategy="json-cot",
                                 retrieval=RetrievalSpec(k=1, rerank=3, retriever="bm25"), relevance=None)
    with dspy.context(lm=lm):
        prediction = selector(request=request)
    assert prediction.row_extras["retrieved"] == [candidates[2]]  # the model's Yes beat the retriever's first two
    assert prediction.row_extras["rerank_seconds"] >= 0
    assert len(llama.calls) == 4
    listing = llama.calls[-1]["messages"][-1]["content"]
    assert candidates[2] in listing and not any(name in listing for name in candidates[:2])


def test_rerank_needs_a_deeper_retrieval():
    from tool_selection.spec import RetrievalSpec

    with pytest.raises(ValueError, match="rerank=5 must exceed retrieve=5"):
        RetrievalSpec(k=5, rerank=5)
