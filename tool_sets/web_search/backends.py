"""Search backends for the ``web_search`` tool: anything with a ``name`` and ``search(query, k)``.

``LocalIndexBackend`` (the default) ranks the documents shipped in ``corpus.jsonl`` with BM25, offline and
deterministically. ``TavilyBackend`` calls the hosted Tavily API with the key in ``TAVILY_API_KEY``; without a
key it raises ``MissingAPIKeyError`` naming the variable rather than searching anything else.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Protocol, runtime_checkable

from tool_sets.web_search.bm25 import BM25Index, tokenize

__all__ = ["Document", "LocalIndexBackend", "MissingAPIKeyError", "SearchBackend", "SearchBackendError",
           "SearchResult", "TavilyBackend", "load_corpus", "shipped_index"]

SNIPPET_CHARS = 240


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str
    score: float


@dataclass(frozen=True)
class Document:
    title: str
    url: str
    text: str


class SearchBackendError(RuntimeError):
    """A backend could not search (no key, network or HTTP failure, a malformed response)."""


class MissingAPIKeyError(SearchBackendError):
    """A hosted backend has no API key; the message names the environment variable to set."""

    def __init__(self, service: str, variable: str):
        self.variable = variable
        super().__init__(f"{service} search needs an API key: set the {variable} environment variable (or pass "
                         "api_key=...), or use the offline LocalIndexBackend.")


@runtime_checkable
class SearchBackend(Protocol):
    """What the ``web_search`` tool searches with."""

    name: str

    def search(self, query: str, k: int) -> list[SearchResult]:
        """At most ``k`` results for ``query``, best first."""
        ...


def clip(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` with whitespace collapsed, cut at a word boundary to at most ``limit`` characters."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"


# ------------------------------------------------------------------------------------------ offline index
@cache
def load_corpus() -> tuple[Document, ...]:
    """The documents shipped with the package (``corpus.jsonl``: one {title, url, text} per line)."""
    text = resources.files(__package__).joinpath("corpus.jsonl").read_text(encoding="utf-8")
    return tuple(Document(**json.loads(line)) for line in text.splitlines() if line.strip())


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _snippet(text: str, query_terms: set[str]) -> str:
    """The sentence of ``text`` holding the most distinct query terms (the earliest on ties)."""
    sentences = _SENTENCE_END.split(text)
    best = max(sentences, key=lambda s: len(query_terms & set(tokenize(s))))
    return clip(best)


class LocalIndexBackend:
    """BM25 over a fixed list of documents; a title counts twice, so words in it weigh more."""

    name = "local"

    def __init__(self, documents: Sequence[Document]):
        self.documents = tuple(documents)
        self._index = BM25Index(tokenize(f"{d.title} {d.title} {d.text}") for d in self.documents)

    def search(self, query: str, k: int) -> list[SearchResult]:
        terms = tokenize(query)
        results = []
        for i, score in self._index.top(terms, k):
            document = self.documents[i]
            results.append(SearchResult(document.title, document.url, _snippet(document.text, set(terms)),
                                        round(score, 4)))
        return results


@cache
def shipped_index() -> LocalIndexBackend:
    """The offline backend over the shipped corpus, built once."""
    return LocalIndexBackend(load_corpus())


# ------------------------------------------------------------------------------------------ hosted
class TavilyBackend:
    """The hosted Tavily search API (https://docs.tavily.com): ``POST /search`` with a bearer key."""

    name = "tavily"
    API_KEY_VARIABLE = "TAVILY_API_KEY"
    ENDPOINT = "https://api.tavily.com/search"

    def __init__(self, api_key: str | None = None, *, endpoint: str = ENDPOINT, timeout_s: float = 15.0):
        self._api_key = api_key
        self.endpoint = endpoint
        self.timeout_s = timeout_s

    def _key(self) -> str:
        key = self._api_key or os.environ.get(self.API_KEY_VARIABLE, "").strip()
        if not key:
            raise MissingAPIKeyError("Tavily", self.API_KEY_VARIABLE)
        return key

    def search(self, query: str, k: int) -> list[SearchResult]:
        payload = {"query": query, "max_results": k, "search_depth": "basic"}
        request = urllib.request.Request(
            self.endpoint, data=json.dumps(payload).encode(), method="POST",
            headers={"Authorization": f"Bearer {self._key()}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body: Any = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            hint = " (the API key was rejected)" if error.code in (401, 403) else ""
            raise SearchBackendError(f"Tavily search failed: HTTP {error.code}{hint}.") from None
        except (urllib.error.URLError, TimeoutError) as error:
            reason = getattr(error, "reason", error)
            raise SearchBackendError(f"Tavily search could not be reached: {reason}.") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise SearchBackendError("Tavily search returned a response that is not JSON.") from None
        items = body.get("results") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise SearchBackendError("Tavily search returned no 'results' list.")
        results = []
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("url"), str):
                score = item.get("score")
                results.append(SearchResult(
                    title=clip(str(item.get("title") or item["url"])), url=item["url"],
                    snippet=clip(str(item.get("content") or "")),
                    score=round(float(score), 4) if isinstance(score, int | float) else 0.0))
        return results[:k]
