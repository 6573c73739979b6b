"""The retriever interface, its result type, and the fit-once index cache that lexical and dense retrievers share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np

from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.retrieval._documents import content_hash, tool_documents

__all__ = ["IndexedRetriever", "RetrievedTool", "ToolRetriever", "check_k", "clear_index_cache", "top_k"]


class RetrievedTool(NamedTuple):
    """One retrieved tool: its name and the retriever's score (higher is better; scales differ by retriever)."""

    name: str
    score: float


class ToolRetriever(ABC):
    """Narrows a large registry to the tools most likely to serve a request: ``fit(registry)``, then
    ``retrieve(request, k)``. Asking for more tools than the registry holds returns them all."""

    name: ClassVar[str]

    @abstractmethod
    def fit(self, registry: ToolRegistry, examples: Mapping[str, Sequence[str]] | None = None) -> Self:
        """Index ``registry``'s tools, each with the example requests ``examples`` gives for it (tool name ->
        requests); fitting the same tools and examples again is free."""

    @abstractmethod
    def retrieve(self, request: str, k: int = 5) -> list[RetrievedTool]:
        """The ``k`` best tools for ``request``, best first."""


def check_k(k: int, what: str = "k") -> None:
    """Refuse a count of tools that is not a positive integer."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"{what} must be a positive integer, got {k!r}")


def top_k(names: Sequence[str], scores: np.ndarray, k: int) -> list[RetrievedTool]:
    """The ``k`` highest scores, best first; equal scores keep the order of ``names`` (sorted, so ties are
    broken by name and results are deterministic)."""
    order = np.argsort(-scores, kind="stable")[:k]
    return [RetrievedTool(names[i], float(scores[i])) for i in order]


class _IndexCache:
    """A small least-recently-used map from (retriever configuration, registry content hash) to a built index."""

    def __init__(self, size: int):
        self.size = size
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        if key in self._entries:
            self._entries.move_to_end(key)
        return self._entries.get(key)

    def put(self, key: Hashable, index: Any) -> None:
        self._entries[key] = index
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


_INDEXES = _IndexCache(size=32)


def clear_index_cache() -> None:
    """Forget every in-memory index (on-disk embedding caches are kept)."""
    _INDEXES.clear()


class IndexedRetriever(ToolRetriever):
    """A retriever over one index built from the tools' documents, cached in memory by content hash: fitting
    a registry whose tools were indexed before (by this or an equally configured retriever) builds nothing."""

    def __init__(self) -> None:
        self._names: tuple[str, ...] = ()
        self._index: Any = None
        self._fitted_key: tuple | None = None

    @property
    def fitted_hash(self) -> str | None:
        """The content hash of the fitted registry, or None before ``fit``."""
        return None if self._fitted_key is None else self._fitted_key[-1]

    @abstractmethod
    def cache_key(self) -> tuple:
        """Everything in this retriever's configuration that changes the index it builds."""

    @abstractmethod
    def _build(self, names: list[str], documents: list[str], registry_hash: str) -> Any:
        """The index over ``documents`` (one per name, never empty)."""

    @abstractmethod
    def _scores(self, request: str) -> np.ndarray:
        """One score per fitted tool, in ``self._names`` order."""

    def fit(self, registry: ToolRegistry, examples: Mapping[str, Sequence[str]] | None = None) -> Self:
        documents = tool_documents(registry, examples)
        return self._fitted(list(documents), content_hash(documents),
                            lambda key: self._build(list(documents), list(documents.values()), key))

    def _fitted(self, names: list[str], content: str, build: Callable[[str], Any]) -> Self:
        """Fitted to the tools ``names`` over an index whose inputs hash to ``content``: the index in use or cached
        under that key, else ``build(content)``'s (kept in the cache)."""
        key = (*self.cache_key(), content)
        if key == self._fitted_key:
            return self
        index = _INDEXES.get(key) if names else None
        if names and index is None:
            index = build(content)
            _INDEXES.put(key, index)
        self._names, self._index, self._fitted_key = tuple(names), index, key
        return self

    @property
    def names(self) -> tuple[str, ...]:
        """The fitted tools' names, in the order of ``scores``."""
        return self._names

    def retrieve(self, request: str, k: int = 5) -> list[RetrievedTool]:
        check_k(k)
        self._check_fitted()
        if not self._names:
            return []
        return self._top(request, k)

    def scores(self, request: str) -> np.ndarray:
        """Every fitted tool's score for ``request``, in ``names`` order (what ``retrieve`` ranks)."""
        self._check_fitted()
        return self._scores(request) if self._names else np.zeros(0)

    def _check_fitted(self) -> None:
        if self._fitted_key is None:
            raise ToolSelectionError(f"{type(self).__name__} is not fitted: call fit(registry) before retrieve().")

    def _top(self, request: str, k: int) -> list[RetrievedTool]:
        """The ``k`` best of the fitted tools (at least one) for ``request``: every tool scored, then sorted."""
        return top_k(self._names, self._scores(request), k)
