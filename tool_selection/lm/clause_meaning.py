"""Functions a clause of the request asks for by meaning, for the coverage rules of ``strict_calls.more_calls``.

"Cancel B1004 and then show me what I still have booked" asks for ``list_my_bookings`` without a word of its name;
a small model cancels and stops. Each clause of the request (``strict_calls.request_clauses``; two clauses or more,
of two words or more, in a conversation's last user turn) is embedded with the dense retriever the relevance stage
uses (MiniLM), and the listed function closest to it, where no call uses it yet and its cosine similarity is at
least ``MEANT_SIMILARITY``, counts as one the request asks for: another call is opened for it under a grammar of
those functions alone, and kept only where its required arguments are written in the request.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tool_selection.decision import ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.lm.strict_calls import request_clauses

__all__ = ["MEANT_SIMILARITY", "clause_matcher", "clauses"]

MEANT_SIMILARITY = 0.5
"""The cosine similarity (MiniLM) from which a clause's closest function counts as asked for. Read on the kept
BFCL and domain answers of the 0.5B default: at 0.5, 12 of the 12 functions it finds in `parallel_multiple` answers
and 3 of 4 in the domain cases' are ones the expected answer calls (development figures)."""


def clauses(request: str) -> list[str]:
    """The clauses of ``request``'s last user turn that hold two words or more; none for a request of one clause."""
    found = [clause.strip(" ,") for clause in request_clauses(request) if len(clause.split()) >= 2]
    return found if len(found) >= 2 else []


def _dense() -> Any:
    """A dense retriever of its own (the encoder is loaded once per process): fitting one shared between requests
    answered at once would let one request's tools stand in for another's."""
    from tool_selection.retrieval import get_retriever

    return get_retriever("dense")


def clause_matcher(functions: Sequence[Mapping[str, Any]]) -> Callable[[str, list[ToolCall]], list[str]]:
    """``meant(request, calls)``: the listed ``functions`` (OpenAI function objects) a clause of ``request`` asks
    for by meaning that no call in ``calls`` uses (see the module); none where fewer than two are listed, or where
    the dense retriever cannot load (the ``retrieval`` extra not installed)."""
    fitted: list[Any] = []

    @functools.cache
    def closest(clause: str) -> tuple[str, float] | None:
        if not fitted:
            from tool_selection.interop import from_openai

            fitted.append(_dense().fit(from_openai(functions, name="listed")))
        best = fitted[0].retrieve(clause, 1)
        return (best[0].name, best[0].score) if best else None

    def meant(request: str, calls: list[ToolCall]) -> list[str]:
        if len(functions) < 2:
            return []
        called, found = {call.tool_name for call in calls}, []
        try:
            matches = [closest(clause) for clause in clauses(request)]
        except (ImportError, ToolSelectionError):  # no retrieval extra or embedding model: the lexical rules alone
            return []
        for match in matches:
            if match and match[1] >= MEANT_SIMILARITY and match[0] not in called and match[0] not in found:
                found.append(match[0])
        return found

    return meant
