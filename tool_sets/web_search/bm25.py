"""Okapi BM25 ranking over short texts, in plain Python (used by the offline web index).

Text is tokenised into lowercase letters-and-digits words, English stop words are dropped and plurals folded
(``cities`` -> ``city``, ``eggs`` -> ``egg``), the same way for documents and queries. A document's score for a
query is the sum over the query's distinct terms ``t`` that it contains of

    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average_length))
    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))

with ``tf`` the term's count in the document, ``df`` the number of documents holding it and ``N`` the number
of documents (the Lucene form of idf, which is never negative).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["STOP_WORDS", "BM25Index", "tokenize"]

STOP_WORDS = frozenset("""
a about after all also am an and any are as at be been before being between both but by can could did do does
doing down during each few for from further had has have having he her here hers him his how i if in into is it
its itself just me more most my no nor not of off on once only or other our ours out over own same she should so
some such than that the their theirs them then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours
""".split())

_WORD = re.compile(r"[a-z0-9]+")


def _fold_plural(word: str) -> str:
    if len(word) <= 3 or word.isdigit() or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s"):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """The index terms of ``text``: lowercase words without stop words, plurals folded."""
    return [_fold_plural(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class BM25Index:
    """A BM25 index over documents given as term lists (see ``tokenize``)."""

    def __init__(self, documents: Iterable[Sequence[str]], *, k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self._counts = [Counter(terms) for terms in documents]
        self._lengths = [sum(c.values()) for c in self._counts]
        self._average_length = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        frequencies: Counter[str] = Counter()
        for counts in self._counts:
            frequencies.update(counts.keys())
        total = len(self._counts)
        self._idf = {term: math.log(1 + (total - df + 0.5) / (df + 0.5)) for term, df in frequencies.items()}

    def __len__(self) -> int:
        return len(self._counts)

    def idf(self, term: str) -> float:
        return self._idf.get(term, 0.0)

    def scores(self, query_terms: Iterable[str]) -> list[float]:
        """Every document's score, in document order (0 for documents sharing no term with the query)."""
        terms = [t for t in dict.fromkeys(query_terms) if t in self._idf]
        scores = []
        for counts, length in zip(self._counts, self._lengths):
            norm = self.k1 * (1 - self.b + self.b * length / self._average_length) if self._average_length else 0
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (self.k1 + 1) / (tf + norm)
            scores.append(score)
        return scores

    def top(self, query_terms: Iterable[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best ``(document index, score)`` pairs with a positive score, best first (ties: lower index)."""
        ranked = sorted(((i, s) for i, s in enumerate(self.scores(query_terms)) if s > 0), key=lambda p: (-p[1], p[0]))
        return ranked[:k]
