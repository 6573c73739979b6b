"""Hybrid retrieval: several retrievers' rankings fused into one, by reciprocal rank (Cormack et al., 2009) or by a
convex combination of their min-max normalised scores (Bruch et al., 2023, "An Analysis of Fusion Functions for
Hybrid Retrieval", who find it ahead of reciprocal rank once its one weight is tuned); ``convex-catalog`` adds to
each tool's fused score a share of its catalog's best two, so that a catalog several of whose tools match lifts its
tools above a lone look-alike from another."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal, Self

import numpy as np

from tool_selection.registry import ToolRegistry
from tool_selection.retrieval._base import IndexedRetriever, RetrievedTool, ToolRetriever, check_k, top_k

__all__ = ["CATALOG_WEIGHT", "CONVEX_WEIGHTS", "FUSIONS", "SCORE_FUSIONS", "HybridRetriever", "catalog_evidence",
           "convex_fusion", "reciprocal_rank_fusion"]

FUSIONS = ("rrf", "convex", "convex-catalog")
SCORE_FUSIONS = ("convex", "convex-catalog")
"""The fusions whose scores lie on one scale for every request (min-max normalised), so that a margin between two
scores means the same whatever the request."""
CONVEX_WEIGHTS = (0.3, 0.7)
"""Convex fusion's weights of the lexical and the dense ranking by default: the best of 0.2-0.5 for BM25 on the
scale benchmark's dev cases (300, at 1,000 and 10,000 tools, with and without train examples; the retrieval results
page)."""
CATALOG_WEIGHT = 0.2
"""``convex-catalog``'s share of the catalog's two best fused scores added to each tool's: the best mean of Recall@5
over 0.1-0.5 on the scale benchmark's dev cases (the retrieval results page)."""
CATALOG_BEST = 2
"""How many of a catalog's best fused scores make its evidence."""


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str | RetrievedTool]], *, k: int = 60) -> list[RetrievedTool]:
    """Fuse rankings (best first) into one: a tool scores the sum of ``1 / (k + rank)`` over the rankings that
    hold it (ranks from 1). Equal scores are ordered by name."""
    if k < 0:
        raise ValueError(f"the fusion constant k must be >= 0, got {k!r}")
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            name = item.name if isinstance(item, RetrievedTool) else item
            scores[name] = scores.get(name, 0.0) + 1.0 / (k + rank)
    return [RetrievedTool(name, score) for name, score in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def convex_fusion(scores: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """The weighted sum of score vectors (one score per tool each, in the same order), each first min-max
    normalised over all the tools to [0, 1]; a score that is not finite counts as that vector's lowest."""
    if len(scores) != len(weights):
        raise ValueError(f"{len(weights)} weights for {len(scores)} score vectors: give one weight per retriever")
    fused = np.zeros(len(scores[0]) if scores else 0, dtype=np.float64)
    for vector, weight in zip(scores, weights, strict=True):
        vector = np.asarray(vector, dtype=np.float64)
        finite = np.isfinite(vector)
        if not finite.any():
            continue
        low, high = vector[finite].min(), vector[finite].max()
        normalised = np.where(finite, vector - low, 0.0) / (high - low if high > low else 1.0)
        fused += weight * normalised
    return fused


def catalog_evidence(scores: np.ndarray, catalogs: np.ndarray, best: int = CATALOG_BEST) -> np.ndarray:
    """For each tool, the sum of the ``best`` highest ``scores`` among the tools of its catalog (``catalogs``: each
    tool's catalog as a small integer, in the order of ``scores``)."""
    scores, catalogs = np.asarray(scores, dtype=np.float64), np.asarray(catalogs)
    if not len(scores):
        return scores
    order = np.lexsort((-scores, catalogs))
    grouped = catalogs[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    place = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    kept = order[place < best]
    totals = np.bincount(catalogs[kept], weights=scores[kept], minlength=int(catalogs.max()) + 1)
    return totals[catalogs]


class HybridRetriever(ToolRetriever):
    """Fuses several retrievers (by default BM25 and dense). ``fusion="rrf"``: reciprocal rank fusion of each one's
    top ``depth``; ``fusion="convex"``: every tool's scores, min-max normalised per retriever and summed with
    ``weights`` (by default ``CONVEX_WEIGHTS`` for the default pair, else equal), which needs retrievers that score
    every tool (``IndexedRetriever``s; not ``hybrid-hnsw``'s graph search); ``fusion="convex-catalog"``: convex,
    then each tool's score raised by ``catalog_weight`` (default ``CATALOG_WEIGHT``) times its catalog's
    ``catalog_evidence`` (each tool's ``category`` in the fitted registry)."""

    name = "hybrid"
    scores_every_tool: ClassVar[bool] = True
    """Whether the default retrievers score every tool, as convex fusion needs (not where one searches an
    approximate index)."""

    def __init__(self, retrievers: Sequence[ToolRetriever] | None = None, *,
                 fusion: Literal["rrf", "convex", "convex-catalog"] = "rrf", rrf_k: int = 60, depth: int = 100,
                 weights: Sequence[float] | None = None, catalog_weight: float | None = None):
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}: choose one of {', '.join(FUSIONS)}")
        given = retrievers is not None
        retrievers = tuple(retrievers) if given else self._default_retrievers()
        if not retrievers:
            raise ValueError("HybridRetriever needs at least one retriever to fuse")
        check_k(depth, "depth")
        if weights is not None and fusion == "rrf":
            raise ValueError("weights weigh the scores of convex fusion: give fusion='convex' with them")
        if catalog_weight is not None and fusion != "convex-catalog":
            raise ValueError("catalog_weight weighs each catalog's evidence: give fusion='convex-catalog' with it")
        if catalog_weight is not None and not catalog_weight > 0:
            raise ValueError(f"catalog_weight must be > 0, got {catalog_weight!r}")
        if weights is None:
            weights = [1.0] * len(retrievers) if given else CONVEX_WEIGHTS
        if len(weights) != len(retrievers) or min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(f"weights {list(weights)} for {len(retrievers)} retrievers: give one weight (>= 0) per "
                             "retriever, not all zero")
        if fusion != "rrf":
            self._check_scores_every_tool(retrievers)
        self.retrievers, self.fusion, self.weights = retrievers, fusion, tuple(weights)
        self.catalog_weight = None if fusion != "convex-catalog" else (
            CATALOG_WEIGHT if catalog_weight is None else catalog_weight)
        self._catalogs: tuple[tuple[str, ...], object, np.ndarray] | None = None  # names, registry revision, ids
        self.rrf_k = rrf_k
        self.depth = depth

    @staticmethod
    def _default_retrievers() -> tuple[ToolRetriever, ...]:
        from tool_selection.retrieval._bm25 import BM25Retriever
        from tool_selection.retrieval._dense import DenseRetriever

        return BM25Retriever(), DenseRetriever()

    def _check_scores_every_tool(self, retrievers: Sequence[ToolRetriever]) -> None:
        ranked_only = [type(r).__name__ for r in retrievers if not isinstance(r, IndexedRetriever)
                       or type(r)._top is not IndexedRetriever._top]
        if ranked_only:
            raise ValueError(f"convex fusion reads every tool's score, and {', '.join(ranked_only)} ranks only its "
                             "nearest tools: use fusion='rrf', or retrievers that score every tool (bm25, dense, "
                             "dense-multi)")

    def fit(self, registry: ToolRegistry, examples: Mapping[str, Sequence[str]] | None = None) -> Self:
        for retriever in self.retrievers:
            retriever.fit(registry, examples)
        if self.catalog_weight is not None:
            self._fit_catalogs(registry)
        return self

    def _fit_catalogs(self, registry: ToolRegistry) -> None:
        """Each fitted tool's catalog (its ``category``) as a small integer, kept while the tools and the registry's
        revision stay the same."""
        names = self.retrievers[0].names
        if self._catalogs is not None and self._catalogs[0] is names and self._catalogs[1] is registry.revision:
            return
        categories = [registry.get(name).category for name in names]
        index = {category: i for i, category in enumerate(dict.fromkeys(categories))}
        self._catalogs = names, registry.revision, np.array([index[category] for category in categories], dtype=np.int64)

    def retrieve(self, request: str, k: int = 5) -> list[RetrievedTool]:
        check_k(k)
        if self.fusion != "rrf":
            return self._convex(request, k)
        rankings = [retriever.retrieve(request, max(k, self.depth)) for retriever in self.retrievers]
        return reciprocal_rank_fusion(rankings, k=self.rrf_k)[:k]

    def _convex(self, request: str, k: int) -> list[RetrievedTool]:
        names = self.retrievers[0].names
        if any(retriever.names != names for retriever in self.retrievers):
            raise ValueError("convex fusion needs its retrievers fitted to the same tools: fit the hybrid retriever, "
                             "not its parts one by one")
        if not names:
            return []
        fused = convex_fusion([retriever.scores(request) for retriever in self.retrievers], self.weights)
        if self.catalog_weight is not None:
            if self._catalogs is None or self._catalogs[0] is not names:
                raise ValueError("convex-catalog fusion reads the catalogs of the tools it was fitted to: fit the "
                                 "hybrid retriever, not its parts one by one")
            fused = fused + self.catalog_weight * catalog_evidence(fused, self._catalogs[2])
        return top_k(names, fused, k)
