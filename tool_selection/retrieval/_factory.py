"""Retrievers by name: the one name -> class map that ``get_retriever`` and the scale benchmark use."""

from __future__ import annotations

from typing import Any

from tool_selection.errors import ToolSelectionError
from tool_selection.retrieval._base import ToolRetriever
from tool_selection.retrieval._bm25 import BM25Retriever
from tool_selection.retrieval._dense import DenseRetriever
from tool_selection.retrieval._hybrid import HybridRetriever

__all__ = ["RETRIEVERS", "get_retriever"]

RETRIEVERS: dict[str, type[ToolRetriever]] = {cls.name: cls for cls in (BM25Retriever, DenseRetriever, HybridRetriever)}


def get_retriever(name: str, **options: Any) -> ToolRetriever:
    """A new retriever of the named kind (``bm25``, ``dense`` or ``hybrid``), built with ``options``."""
    cls = RETRIEVERS.get(name)
    if cls is None:
        raise ToolSelectionError(f"Unknown retriever {name!r}. Known retrievers: {', '.join(RETRIEVERS)}.")
    return cls(**options)
