"""Retrievers by name: the one registry that ``get_retriever``, the selector and the scale benchmark use."""

from __future__ import annotations

from typing import Any

from tool_selection.named_registry import Registry
from tool_selection.retrieval._ann import HNSWDenseRetriever, HNSWHybridRetriever
from tool_selection.retrieval._base import ToolRetriever
from tool_selection.retrieval._bm25 import BM25Retriever
from tool_selection.retrieval._dense import DenseRetriever
from tool_selection.retrieval._hybrid import HybridRetriever
from tool_selection.retrieval._multi import MultiVectorDenseRetriever, MultiVectorHybridRetriever

__all__ = ["RETRIEVERS", "get_retriever", "register_retriever"]


def _check_retriever(cls: Any) -> None:
    if not (isinstance(cls, type) and issubclass(cls, ToolRetriever)):
        raise TypeError(f"a retriever is a ToolRetriever subclass, got {cls!r}")


RETRIEVERS: Registry[type[ToolRetriever]] = Registry("retriever", group="tool_selection.retrievers",
                                                     check=_check_retriever)
"""The retrievers by name: ``bm25``, ``dense``, ``hybrid``, ``dense-hnsw``, ``hybrid-hnsw``, ``dense-multi``,
``hybrid-multi``, those registered with ``register_retriever``, and those of the ``tool_selection.retrievers``
entry-point group."""

register_retriever = RETRIEVERS.register

for _builtin in (BM25Retriever, DenseRetriever, HybridRetriever, HNSWDenseRetriever, HNSWHybridRetriever,
                 MultiVectorDenseRetriever, MultiVectorHybridRetriever):
    register_retriever(_builtin)


def get_retriever(name: str, **options: Any) -> ToolRetriever:
    """A new retriever of the named kind (``bm25``, ``dense``, ``hybrid``; ``dense-hnsw`` / ``hybrid-hnsw`` with
    an approximate index; ``dense-multi`` / ``hybrid-multi`` with each example request a vector of its own), built
    with ``options``."""
    return RETRIEVERS.get(name)(**options)
