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
from tool_selection.retrieval._base import ToolRetriever
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

        def build(_: str) -> _Vectors:
            return _Vectors(self._embedded(texts), np.asarray(owners))

        return self._fitted(names, content_hash(indexed), build)

    def _scores(self, request: str) -> np.ndarray:
        similarities = self._index.matrix @ self._query_vector(request)[0]
        scores = np.full(len(self._names), -np.inf, dtype=np.float32)
        np.maximum.at(scores, self._index.owners, similarities)
        return scores


class MultiVectorHybridRetriever(HybridRetriever):
    """``hybrid`` with its dense half multi-vector (``dense-multi``): BM25 over the documents with the examples
    written in, fused by reciprocal rank with each tool's closest vector."""

    name = "hybrid-multi"

    @staticmethod
    def _default_retrievers() -> tuple[ToolRetriever, ...]:
        from tool_selection.retrieval._bm25 import BM25Retriever

        return BM25Retriever(), MultiVectorDenseRetriever()
