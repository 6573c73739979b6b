"""Multi-vector dense retrieval: each example request is a vector of its own, and a tool scores the best cosine
among its document and its example requests.

Written into the document (``dense`` with examples, at most eight), a tool's requests share one 256-token embedding
with its description and arguments: those past the 256th token are cut off, and the rest blur into one point. Kept
apart (every one of them), a request like one a tool answered finds that tool directly (Tool2Vec embeds tools by
the requests that used them; here each request keeps its own vector and the tool takes the closest, as ColBERT
scores a document by its closest token). Without examples it ranks as ``dense`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Self

import numpy as np

from tool_selection.registry import ToolRegistry
from tool_selection.retrieval._base import _INDEXES, ToolRetriever
from tool_selection.retrieval._dense import DenseRetriever
from tool_selection.retrieval._documents import content_hash, tool_documents
from tool_selection.retrieval._hybrid import HybridRetriever

__all__ = ["MultiVectorDenseRetriever", "MultiVectorHybridRetriever"]


class _Vectors(NamedTuple):
    """Unit vectors of the documents and example requests, and the tool (its position) each belongs to."""

    matrix: np.ndarray
    owners: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.matrix.nbytes + self.owners.nbytes


class MultiVectorDenseRetriever(DenseRetriever):
    """``dense`` with each example request embedded on its own: a tool's score is the highest cosine between the
    request and its document (without the examples) or any of its example requests."""

    name = "dense-multi"

    def fit(self, registry: ToolRegistry, examples: Mapping[str, Sequence[str]] | None = None) -> Self:
        documents = tool_documents(registry)
        names = list(documents)
        texts, owners = list(documents.values()), list(range(len(names)))
        for position, name in enumerate(names):
            requests = list(dict.fromkeys(" ".join(text.split()) for text in (examples or {}).get(name, ())))
            texts += requests
            owners += [position] * len(requests)
        indexed = {f"{names[owner]}\0{i}": text for i, (owner, text) in enumerate(zip(owners, texts, strict=True))}
        key = (*self.cache_key(), content_hash(indexed))
        if key == self._fitted_key:
            return self
        index = _INDEXES.get(key) if names else None
        if names and index is None:
            index = _Vectors(self._embedded(texts), np.asarray(owners))
            _INDEXES.put(key, index)
        self._names, self._index, self._fitted_key = names, index, key
        return self

    def _embedded(self, texts: list[str]) -> np.ndarray:
        if not self.disk_cache:
            return np.ascontiguousarray(self.encoder.encode(texts), dtype=np.float32)
        return self._embed_unseen(texts, self.embeddings_path("-").with_name("documents.sqlite"))

    def _scores(self, request: str) -> np.ndarray:
        similarities = self._index.matrix @ self._query_vector(request)[0]
        scores = np.full(len(self._names), -np.inf, dtype=np.float32)
        np.maximum.at(scores, self._index.owners, similarities)
        return scores


class MultiVectorHybridRetriever(HybridRetriever):
    """``hybrid`` with its dense half multi-vector (``dense-multi``): BM25 over the documents with the examples
    written in, fused by reciprocal rank with each tool's closest vector."""

    name = "hybrid-multi"

    def __init__(self, retrievers: Sequence[ToolRetriever] | None = None, *, rrf_k: int = 60, depth: int = 100):
        if retrievers is None:
            from tool_selection.retrieval._bm25 import BM25Retriever

            retrievers = (BM25Retriever(), MultiVectorDenseRetriever())
        super().__init__(retrievers, rrf_k=rrf_k, depth=depth)
