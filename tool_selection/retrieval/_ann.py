"""Dense retrieval through an approximate nearest-neighbour index: faiss's HNSW graph over the same embeddings
that exact dense retrieval scores one by one. Hybrid retrieval over it fuses BM25 with the graph's ranking."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tool_selection.retrieval._base import RetrievedTool, ToolRetriever, check_k
from tool_selection.retrieval._dense import DenseRetriever, TextEncoder
from tool_selection.retrieval._extra import missing_extra_error
from tool_selection.retrieval._hybrid import HybridRetriever

__all__ = ["HNSWDenseRetriever", "HNSWHybridRetriever"]


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise missing_extra_error("Approximate nearest-neighbour tool retrieval", "faiss-cpu") from None
    return faiss


class HNSWDenseRetriever(DenseRetriever):
    """Dense retrieval that searches an HNSW graph (``faiss.IndexHNSWFlat``, inner product of unit vectors, so
    cosine similarity) instead of scoring every tool: ``m`` links per node, ``ef_construction`` candidates while
    building, ``ef_search`` (at least k) while searching. The graph is built on one thread, so the same tools give
    the same graph and the same answers."""

    name = "dense-hnsw"

    def __init__(self, encoder: TextEncoder | None = None, *, m: int = 32, ef_construction: int = 200,
                 ef_search: int = 128, cache_dir: str | os.PathLike | None = None, disk_cache: bool = True):
        self._faiss = _faiss()
        for value, what in ((m, "m"), (ef_construction, "ef_construction"), (ef_search, "ef_search")):
            check_k(value, what)
        super().__init__(encoder, cache_dir=cache_dir, disk_cache=disk_cache)
        self.m, self.ef_construction, self.ef_search = m, ef_construction, ef_search

    def cache_key(self) -> tuple:
        return (*super().cache_key(), self.m, self.ef_construction)

    def _build(self, names: list[str], documents: list[str], registry_hash: str) -> Any:
        vectors = super()._build(names, documents, registry_hash)
        index = self._faiss.IndexHNSWFlat(vectors.shape[1], self.m, self._faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        threads = self._faiss.omp_get_max_threads()
        self._faiss.omp_set_num_threads(1)
        try:
            index.add(vectors)
        finally:
            self._faiss.omp_set_num_threads(threads)
        return index

    def _scores(self, request: str) -> np.ndarray:
        """Exact scores from the vectors the graph stores (what ``retrieve`` approximates)."""
        return self._index.reconstruct_n(0, self._index.ntotal) @ self._query_vector(request)[0]

    def _top(self, request: str, k: int) -> list[RetrievedTool]:
        params = self._faiss.SearchParametersHNSW(efSearch=max(self.ef_search, k))
        scores, ids = self._index.search(self._query_vector(request), min(k, len(self._names)), params=params)
        return [RetrievedTool(self._names[i], float(s)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]


class HNSWHybridRetriever(HybridRetriever):
    """``hybrid`` with its dense half searched through an HNSW graph (``HNSWDenseRetriever``)."""

    name = "hybrid-hnsw"
    scores_every_tool = False

    @staticmethod
    def _default_retrievers() -> tuple[ToolRetriever, ...]:
        from tool_selection.retrieval._bm25 import BM25Retriever

        return BM25Retriever(), HNSWDenseRetriever()
