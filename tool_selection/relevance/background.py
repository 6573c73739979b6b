"""BM25 with word weights from a fixed background catalog: a score that reads the request and one tool, not how many
tools are listed beside it.

BM25 fitted on the listed tools alone weighs a word by how rare it is among them. With one tool listed every word of
that tool is in every document (IDF ``log(1 + 0.5 / 1.5)`` = 0.29); with four tools listed a word of one of them
weighs ``log(1 + 3.5 / 1.5)`` = 1.20. So the ``bm25_best`` signal is about four times lower for the same request and
the same right tool when that tool is listed alone. Here the document frequencies and the mean document length come
from a catalog that no suite uses (APIs.guru's OpenAPI directory, one document per operation, written the way the
retrievers write a tool's document), kept as data beside this module and rebuilt by
``python -m evals.background_corpus``. Each listed tool is scored on its own, so adding unrelated tools to a
catalog never changes the best tool's score.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tool_selection.errors import ToolSelectionError

__all__ = ["ANCHOR_DOCUMENTS", "BACKGROUND_FILE", "BACKGROUND_FORMAT", "BackgroundBM25", "BackgroundError",
           "background_bm25", "tokenize"]

BACKGROUND_FORMAT = 1
ANCHOR_DOCUMENTS = 2
"""Background documents the listed tools are seen beside in ``anchored_best``: the fewest of 1, 2, 4, 8 and 32 with
which a relevance model refitted on it keeps its probabilities when four unrelated tools are listed beside
(``evals.benchmarks.relevance_invariance``). With the right tool alone and beside four others the score rises
about 1.6x (``bm25_best``: 5x)."""
BACKGROUND_FILE = Path(__file__).parent / "data" / "bm25-background.json"
_REBUILD = "Rebuild it with: python -m evals.background_corpus"


class BackgroundError(ToolSelectionError, ValueError):
    """A background word-weight table that cannot be read or built."""


def tokenize(texts: Sequence[str], stemmer: str | None = "english") -> list[list[str]]:
    """Words as the BM25 retriever reads them: lower-cased, English stop words dropped, Snowball-stemmed."""
    from tool_selection.retrieval._bm25 import bm25_tokenize
    from tool_selection.retrieval._extra import missing_extra_error

    if importlib.util.find_spec("bm25s") is None:
        raise missing_extra_error("the bm25_background relevance signal", "bm25s")
    return bm25_tokenize(texts, _stemmer(stemmer))


@lru_cache(maxsize=4)
def _stemmer(language: str | None) -> Any:
    if language is None:
        return None
    import Stemmer

    return Stemmer.Stemmer(language)


@dataclass(frozen=True)
class BackgroundBM25:
    """Document frequencies and mean length of a background catalog's tool documents, and the Lucene BM25 score of
    a request against one document with them."""

    documents: int
    average_length: float
    document_frequency: Mapping[str, int]
    source: Mapping[str, Any] = field(default_factory=dict)
    k1: float = 1.5
    b: float = 0.75
    stemmer: str | None = "english"

    @classmethod
    def from_documents(cls, texts: Iterable[str], source: Mapping[str, Any], **settings: Any) -> BackgroundBM25:
        tokenized = tokenize(list(texts), settings.get("stemmer", "english"))
        if not tokenized:
            raise BackgroundError("A background table needs at least one document.")
        frequency = Counter(token for tokens in tokenized for token in set(tokens))
        return cls(documents=len(tokenized), average_length=sum(map(len, tokenized)) / len(tokenized),
                   document_frequency=dict(sorted(frequency.items())), source=dict(source), **settings)

    def idf(self, token: str) -> float:
        """Lucene's IDF; a word the background never holds weighs as a word in none of its documents."""
        df = self.document_frequency.get(token, 0)
        return math.log1p((self.documents - df + 0.5) / (df + 0.5))

    def score(self, request: Sequence[str], document: Sequence[str]) -> float:
        """BM25 of a tokenized request against one tokenized document (each distinct request word once)."""
        return self._bm25(set(request), document, self.idf, self.average_length)

    def _bm25(self, words: set[str], document: Sequence[str], idf: Callable[[str], float],
              average_length: float) -> float:
        counts = Counter(document)
        norm = self.k1 * (1 - self.b + self.b * len(document) / average_length)
        return sum(idf(word) * counts[word] * (self.k1 + 1) / (counts[word] + norm) for word in words if counts[word])

    def best(self, request: str, documents: Sequence[str]) -> float:
        """The highest score of ``request`` over ``documents`` (NaN when there are none)."""
        if not documents:
            return math.nan
        words = tokenize([request], self.stemmer)[0]
        return max(self.score(words, self._tokens(text)) for text in documents)

    def anchored_best(self, request: str, documents: Sequence[str], anchor: float = ANCHOR_DOCUMENTS) -> float:
        """The highest BM25 score of ``request`` over ``documents``, word weights from the listed documents seen
        beside ``anchor`` background documents (each word as frequent among them as in the background catalog):
        a word every listed tool holds still weighs little, as in BM25 over the listing alone (``anchor`` 0), and a
        few more tools listed move the weights far less (``best``: a large ``anchor``, not at all)."""
        if not documents:
            return math.nan
        words = set(tokenize([request], self.stemmer)[0])
        tokenized = [self._tokens(text) for text in documents]
        count = len(tokenized) + anchor
        average_length = (sum(map(len, tokenized)) + anchor * self.average_length) / count
        idf = {}
        for word in words:
            background = anchor * self.document_frequency.get(word, 0) / self.documents
            df = sum(word in tokens for tokens in tokenized) + background
            idf[word] = math.log1p((count - df + 0.5) / (df + 0.5))
        return max(self._bm25(words, tokens, idf.__getitem__, average_length) for tokens in tokenized)

    def _tokens(self, text: str) -> tuple[str, ...]:
        return _document_tokens(text, self.stemmer)

    def fingerprint(self) -> str:
        """A short hash of the table: what a relevance model fitted on this signal was fitted with."""
        return hashlib.sha256(json.dumps(self.as_json(), sort_keys=True).encode()).hexdigest()[:16]

    def as_json(self) -> dict[str, Any]:
        return {"format": BACKGROUND_FORMAT, "source": dict(self.source), "k1": self.k1, "b": self.b,
                "stemmer": self.stemmer, "documents": self.documents, "average_length": round(self.average_length, 6),
                "document_frequency": dict(self.document_frequency)}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_json(), ensure_ascii=False, separators=(",", ":")) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path = BACKGROUND_FILE) -> BackgroundBM25:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise BackgroundError(f"Cannot read the background word weights {path}: {exc}. {_REBUILD}") from None
        return cls._checked(data, path)

    @classmethod
    def _checked(cls, data: Any, path: Path) -> BackgroundBM25:
        if not isinstance(data, dict) or data.get("format") != BACKGROUND_FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise BackgroundError(f"{path} is not a background table of format {BACKGROUND_FORMAT} (found {found!r}). "
                                  f"{_REBUILD}")
        documents, frequency = data.get("documents"), data.get("document_frequency")
        if not isinstance(documents, int) or documents < 1 or not isinstance(frequency, dict):
            raise BackgroundError(f"{path} lacks a positive 'documents' count or a 'document_frequency' table. "
                                  f"{_REBUILD}")
        wrong = [word for word, df in frequency.items() if not isinstance(df, int) or not 1 <= df <= documents]
        if wrong or not data.get("average_length", 0) > 0:
            raise BackgroundError(f"{path} holds document frequencies outside 1..{documents} ({', '.join(wrong[:5])}) "
                                  f"or no positive 'average_length'. {_REBUILD}")
        return cls(documents=documents, average_length=float(data["average_length"]), document_frequency=frequency,
                   source=data.get("source") or {}, k1=float(data.get("k1", 1.5)), b=float(data.get("b", 0.75)),
                   stemmer=data.get("stemmer"))


@lru_cache(maxsize=8192)
def _document_tokens(text: str, stemmer: str | None) -> tuple[str, ...]:
    return tuple(tokenize([text], stemmer)[0])


@lru_cache(maxsize=1)
def background_bm25() -> BackgroundBM25:
    """The shipped background table (read once per process)."""
    return BackgroundBM25.load(BACKGROUND_FILE)
