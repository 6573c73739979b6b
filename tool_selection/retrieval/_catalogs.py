"""Catalog first: of the retrieved tools, only those of the catalogs the request most likely means.

A registry joined from several catalogs (tool sets, MCP servers, each tool's ``category``) holds look-alikes: tools
of another catalog that do nearly the same job under another name (``order_status_check`` beside
``get_order_status``). A small model shown both picks either. Routing in two steps, the catalog and then the tool
(as hierarchical MCP routers do), keeps them apart: the catalogs are ranked by their best tool in the retriever's
ranking, and only the tools of the first ``catalogs`` of them are shown. ``with_catalogs`` instead tells the model
each shown tool's catalog, leading its description (``[shop] Where an order of this shop is ...``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tool_selection.registry import ToolRegistry
from tool_selection.retrieval._base import RetrievedTool, ToolRetriever, check_k
from tool_selection.tool import BaseTool
from tool_selection.toolset.described import described_tool

__all__ = ["CATALOG_DEPTH", "catalog_first", "catalog_lead", "retrieve_by_catalog", "route_by_catalog",
           "with_catalogs"]

CATALOG_DEPTH = 50
"""How many of the retriever's best tools the catalogs are ranked from (ten times the tools shown where that is
more)."""


def catalog_first(hits: Sequence[RetrievedTool], registry: ToolRegistry, catalogs: int, k: int,
                  others: int = 0) -> list[RetrievedTool]:
    """The first ``k`` of ``hits`` (best first) whose catalog is one of the ``catalogs`` catalogs whose best tool
    ranks highest; fewer where those catalogs hold fewer among ``hits``. ``others``: that many of the ``k`` are the
    best of the other catalogs' tools instead (a hedge against routing to the wrong catalog), in rank order."""
    check_k(catalogs, "catalogs")
    check_k(k)
    if not 0 <= others < k:
        raise ValueError(f"others={others} must be at least 0 and below k={k}: the rest of the {k} shown come from "
                         "the chosen catalogs")
    chosen: list[str] = []
    kept, outside = [], []
    for hit in hits:
        catalog = registry.get(hit.name).category
        if catalog not in chosen and len(chosen) < catalogs:
            chosen.append(catalog)
        (kept if catalog in chosen else outside).append(hit)
    shown = {hit.name for hit in [*kept[:k - others], *outside[:others]]}
    return [hit for hit in hits if hit.name in shown]


def catalog_lead(hits: Sequence[RetrievedTool], registry: ToolRegistry, catalogs: int) -> float:
    """How far the ``catalogs``-th catalog's best tool scores above the next catalog's among ``hits`` (best first);
    infinite where no other catalog is among them."""
    check_k(catalogs, "catalogs")
    best: dict[str, float] = {}
    for hit in hits:
        best.setdefault(registry.get(hit.name).category, hit.score)
    scores = list(best.values())
    return scores[catalogs - 1] - scores[catalogs] if len(scores) > catalogs else float("inf")


def retrieve_by_catalog(retriever: ToolRetriever, registry: ToolRegistry, request: str, catalogs: int,
                        k: int, margin: float | None = None, others: int = 0) -> list[RetrievedTool]:
    """``catalog_first`` over ``retriever``'s best ``CATALOG_DEPTH`` tools for ``request`` (or ten times ``k``); with
    ``margin``, the top ``k`` of every catalog where the chosen catalogs lead by less (``route_by_catalog``)."""
    return route_by_catalog(retriever, registry, request, catalogs, k, margin, others)[0]


def route_by_catalog(retriever: ToolRetriever, registry: ToolRegistry, request: str, catalogs: int, k: int,
                     margin: float | None = None, others: int = 0) -> tuple[list[RetrievedTool], float, bool]:
    """``retrieve_by_catalog``'s tools, the chosen catalogs' lead (``catalog_lead``) and whether it routed: with
    ``margin``, only where the lead is at least ``margin`` (below it, routing would as likely drop the right catalog
    as keep look-alikes out); ``others``: as for ``catalog_first``."""
    hits = retriever.retrieve(request, max(CATALOG_DEPTH, 10 * k))
    lead = catalog_lead(hits, registry, catalogs)
    if margin is not None and lead < margin:
        return list(hits[:k]), lead, False
    return catalog_first(hits, registry, catalogs, k, others), lead, True


def with_catalogs(registry: ToolRegistry) -> ToolRegistry:
    """``registry`` with each tool's catalog leading its description (``[shop] Cancel an order ...``), the names,
    arguments and execution unchanged; a tool of the base category (``general``) is shown as it is."""
    return ToolRegistry(registry.name, [_with_catalog(tool) for tool in registry])


def _with_catalog(tool: type[BaseTool]) -> type[BaseTool]:
    if tool.category == BaseTool.category:
        return tool
    return described_tool(tool, f"[{tool.category}] {tool.description.strip()}")
