"""Demonstrations chosen per request by similarity (DSPy's KNN few-shot, with TF-IDF in place of an embedder): a pool
of solved requests, and for each new request the K whose words are most like its own, each shown with its expected
calls, so a request that needs several calls sees solved requests that made several.

    pool = DemoPool([Demo("EUR to USD?", (ToolCall(tool_name="get_rate", arguments={"pair": "EURUSD"}),))])
    pool.nearest("What is the GBP to USD rate?", k=1)   # [Demo("EUR to USD?", ...)]

A request is never its own demonstration: an entry with the same text (spacing and case aside) is left out, and so
is the entry of the case ``leaving_out(case_id)`` names (the evaluation runner names each case it runs). Equal
scores keep the pool's order, so the choice is deterministic.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

import dspy

from tool_selection.decision import ToolCall
from tool_selection.errors import ToolSelectionError

__all__ = ["Demo", "DemoPool", "leaving_out", "refuse_unusable"]

_LEFT_OUT: ContextVar[str | None] = ContextVar("demo_pool_left_out", default=None)


@dataclass(frozen=True)
class Demo:
    """One solved request: its text, the calls that answer it (none: no listed tool fits) and its case's id."""

    request: str
    tool_calls: tuple[ToolCall, ...] = ()
    case_id: str | None = None

    def example(self) -> dspy.Example:
        """The demonstration as strategies render it (``request`` and ``tool_calls``)."""
        return dspy.Example(request=self.request, tool_calls=list(self.tool_calls))


@contextlib.contextmanager
def leaving_out(case_id: str | None) -> Iterator[None]:
    """Within the block (and this thread or task), the pool entry of case ``case_id`` is never chosen."""
    token = _LEFT_OUT.set(case_id)
    try:
        yield
    finally:
        _LEFT_OUT.reset(token)


def _same_text(text: str) -> str:
    return " ".join(text.casefold().split())


def _similarity_index(texts: list[str]):
    """TF-IDF over lower-case words (scikit-learn's), the vectors L2-normalised: a request's dot products with them
    are its cosine similarities to each entry."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(lowercase=True, token_pattern=r"(?u)\b\w+\b", sublinear_tf=True)
    return vectorizer, vectorizer.fit_transform(texts)


class DemoPool:
    """Solved requests to show as demonstrations, the K most like each request (``nearest``). Two pools of the same
    entries are equal (an evaluation's job is compared and hashed by value)."""

    def __init__(self, demos: Iterable[Demo]):
        self.demos = tuple(demos)
        if not self.demos:
            raise ToolSelectionError("A demonstration pool needs at least one solved request.")
        self._vectorizer, self._vectors = _similarity_index([demo.request for demo in self.demos])
        self._texts = [_same_text(demo.request) for demo in self.demos]
        entries = [[d.request, [c.model_dump(mode="json") for c in d.tool_calls], d.case_id] for d in self.demos]
        self.fingerprint = hashlib.sha256(json.dumps(entries, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def nearest(self, request: str, k: int) -> list[Demo]:
        """The ``k`` entries most like ``request`` (TF-IDF cosine), best first, neither ``request`` itself nor the case
        ``leaving_out`` names; equal scores in pool order."""
        own, left_out = _same_text(request), _LEFT_OUT.get()
        scores = (self._vectors @ self._vectorizer.transform([request]).T).toarray().ravel()
        allowed = [i for i, demo in enumerate(self.demos)
                   if self._texts[i] != own and (left_out is None or demo.case_id != left_out)]
        return [self.demos[i] for i in sorted(allowed, key=lambda i: (-scores[i], i))[:k]]

    def __len__(self) -> int:
        return len(self.demos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DemoPool) and other.fingerprint == self.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        return f"DemoPool({len(self)} demos, {self.fingerprint})"


def refuse_unusable(demos: int | None, pool: DemoPool | None, *, compiled_demos: int) -> None:
    """Refuse ``demos`` (a spec's K) without a pool to draw from, or beside a compiled program's own demos, which the
    chosen ones would hide."""
    if demos is None:
        return
    if pool is None:
        raise ToolSelectionError(
            f"demos={demos} (--demos) shows each request the {demos} most similar solved requests of a pool, and "
            "this selector has none: 'toolsel eval' and evaluate() draw one from the suite's train split; in Python "
            "pass demo_pool=DemoPool(...) to MultiToolSelector.from_spec. Other commands (optimize, the loop) take "
            "no pool: leave --demos out.")
    if compiled_demos:
        raise ToolSelectionError(
            f"demos={demos} (--demos) chooses the demonstrations per request, and the compiled program has "
            f"{compiled_demos} of its own, which they would hide: evaluate one or the other (leave --demos out, or "
            "leave --program out).")
