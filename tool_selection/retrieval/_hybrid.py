"""Hybrid retrieval: reciprocal rank fusion (Cormack et al., 2009) of several retrievers' rankings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Self

from tool_selection.registry import ToolRegistry
from tool_selection.retrieval._base import RetrievedTool, ToolRetriever, check_k

__all__ = ["HybridRetriever", "reciprocal_rank_fusion"]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str | RetrievedTool]], *, k: int = 60) -> list[RetrievedTool]:
    """Fuse rankings (best first) into one: a tool scores the sum of ``1 / (k + rank)`` over the rankings that
    hold it (ranks from 1). Equal scores are ordered by name."""
    if k < 0:
        raise ValueError(f"the fusion constant k must be >= 0, got {k!r}")
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            name = item.name if isinstance(item, RetrievedTool) else item
            scores[name] = scores.get(name, 0.0) + 1.0 / (k + rank)
    return [RetrievedTool(name, score) for name, score in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


class HybridRetriever(ToolRetriever):
    """Fuses the top ``depth`` tools of each retriever (by default BM25 and dense) with reciprocal rank fusion."""

    name = "hybrid"

    def __init__(self, retrievers: Sequence[ToolRetriever] | None = None, *, rrf_k: int = 60, depth: int = 100):
        if retrievers is None:
            from tool_selection.retrieval._bm25 import BM25Retriever
            from tool_selection.retrieval._dense import DenseRetriever

            retrievers = (BM25Retriever(), DenseRetriever())
        if not retrievers:
            raise ValueError("HybridRetriever needs at least one retriever to fuse")
        check_k(depth, "depth")
        self.retrievers = tuple(retrievers)
        self.rrf_k = rrf_k
        self.depth = depth

    def fit(self, registry: ToolRegistry, examples: Mapping[str, Sequence[str]] | None = None) -> Self:
        for retriever in self.retrievers:
            retriever.fit(registry, examples)
        return self

    def retrieve(self, request: str, k: int = 5) -> list[RetrievedTool]:
        check_k(k)
        rankings = [retriever.retrieve(request, max(k, self.depth)) for retriever in self.retrievers]
        return reciprocal_rank_fusion(rankings, k=self.rrf_k)[:k]
