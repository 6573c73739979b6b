"""The LLM re-ranker: each candidate asked "does this function do exactly what the request asks?", ordered by the
Yes/No score, the retriever's order breaking ties."""

import pytest

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
