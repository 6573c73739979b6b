"""Lexical retrieval: BM25 over the tools' documents, with ``bm25s`` and a Snowball stemmer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tool_selection.retrieval._base import IndexedRetriever
from tool_selection.retrieval._extra import missing_extra_error

__all__ = ["BM25Retriever", "bm25_tokenize"]


def bm25_tokenize(texts: Sequence[str], stemmer: Any = None) -> list[list[str]]:
    """Words as BM25 reads them here: lower-cased, English stop words dropped, stemmed by ``stemmer`` (a PyStemmer
    ``Stemmer``, or None). Needs ``bm25s``."""
    import bm25s

    return bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)


@dataclass(frozen=True)
class _BM25Index:
    model: Any  # bm25s.BM25
    stemmer: Any  # Stemmer.Stemmer or None


class BM25Retriever(IndexedRetriever):
    """Okapi BM25 (``bm25s``, Lucene variant) over stemmed words with English stop words removed."""

    name = "bm25"

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, stemmer: str | None = "english"):
        super().__init__()
        try:
            import bm25s
        except ImportError:
            raise missing_extra_error("BM25 tool retrieval", "bm25s") from None
        if stemmer is not None:
            try:
                import Stemmer
            except ImportError:
                raise missing_extra_error("BM25 tool retrieval with a stemmer", "PyStemmer") from None
            Stemmer.Stemmer(stemmer)  # an unknown language fails here, not at fit
        self._bm25s = bm25s
        self.k1, self.b, self.stemmer = k1, b, stemmer

    def cache_key(self) -> tuple:
        return (self.name, self.k1, self.b, self.stemmer)

    def _build(self, names: list[str], documents: list[str], registry_hash: str) -> _BM25Index:
        stemmer = None
        if self.stemmer is not None:
            import Stemmer

            stemmer = Stemmer.Stemmer(self.stemmer)
        model = self._bm25s.BM25(k1=self.k1, b=self.b)
        model.index(bm25_tokenize(documents, stemmer), show_progress=False)
        return _BM25Index(model, stemmer)

    def _scores(self, request: str) -> np.ndarray:
        (tokens,) = bm25_tokenize([request], self._index.stemmer)
        if not tokens:  # only stop words or punctuation: every tool scores zero
            return np.zeros(len(self._names), dtype=np.float32)
        return self._index.model.get_scores(tokens)
