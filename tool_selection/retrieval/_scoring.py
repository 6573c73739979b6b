"""Scores of a retrieval against the tools a case expects: Recall@k and reciprocal rank (for MRR).

An abstention case (one that expects no tool) has nothing to retrieve, so neither score is defined for it:
both return ``None``, and ``mean_score`` averages over the cases that have a score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tool_selection.retrieval._base import RetrievedTool, check_k

__all__ = ["mean_score", "recall_at_k", "reciprocal_rank"]


def _names(retrieved: Sequence[str | RetrievedTool]) -> list[str]:
    return [item.name if isinstance(item, RetrievedTool) else item for item in retrieved]


def recall_at_k(expected: Iterable[str], retrieved: Sequence[str | RetrievedTool], k: int) -> float | None:
    """The share of the distinct expected tool names among the first ``k`` retrieved; None when none is expected."""
    check_k(k)
    wanted = set(expected)
    if not wanted:
        return None
    return len(wanted & set(_names(retrieved)[:k])) / len(wanted)


def reciprocal_rank(expected: Iterable[str], retrieved: Sequence[str | RetrievedTool]) -> float | None:
    """``1 / rank`` of the first expected tool retrieved (0.0 when none is); None when none is expected."""
    wanted = set(expected)
    if not wanted:
        return None
    for rank, name in enumerate(_names(retrieved), start=1):
        if name in wanted:
            return 1.0 / rank
    return 0.0


def mean_score(scores: Iterable[float | None]) -> float | None:
    """The mean of the defined scores (abstention cases' None left out); None when no score is defined."""
    defined = [score for score in scores if score is not None]
    return sum(defined) / len(defined) if defined else None
