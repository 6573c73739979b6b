"""The ``context_search`` tool: find what was said earlier in a conversation or debate."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tool_selection import BaseTool, register_tool
from tool_selection.errors import close_matches
from tool_selection.failures import tool_failure
from tool_selection.tool import StrictArguments
from tool_sets.context_search.history import HistoryEntry, default_history
from tool_sets.web_search.bm25 import BM25Index, tokenize

__all__ = ["TOOLS", "ContextSearch"]


@register_tool
class ContextSearch(BaseTool):
    """Search the conversation history by keyword relevance and recency.

    Scoring, for each entry that shares at least one search term with the query (terms as in
    ``tool_sets.web_search.bm25.tokenize``: lowercase words, stop words dropped, plurals folded)::

        relevance_score = (1 - recency_weight) * keyword + recency_weight * recency
        keyword = BM25(entry, query) / max BM25 over the entries searched   (in (0, 1]; 1 for the best match)
        recency = position / (n - 1)   (0 for the oldest of the n history entries, 1 for the newest or only one)

    BM25's idf comes from the whole history. Results are sorted by ``relevance_score`` (newer first on ties) and
    rounded to 4 decimals; ``total_found`` counts every matching entry, before ``max_results`` is applied.
    """

    NAME = "context_search"
    description = ("Search the earlier conversation or debate for what was said about a topic, e.g. to recall a "
                   "speaker's argument or a figure quoted before. Returns the matching turns with who said them, "
                   "ranked by keyword relevance and recency. Not for searching the web.")
    category = "context_search"

    history: tuple[HistoryEntry, ...] = Field(default_factory=default_history, exclude=True, repr=False,
                                              description="The conversation, oldest entry first.")

    class Arguments(StrictArguments):
        query: str = Field(min_length=1, max_length=300, description="Keywords to look for in the conversation.")
        max_results: int = Field(default=5, ge=1, le=20, description="How many entries to return (1-20).")
        recency_weight: float = Field(default=0.2, ge=0, le=1,
                                      description="How much newer entries are preferred: 0 ranks by keywords only, "
                                                  "1 by recency only among matching entries.")
        source: str | None = Field(default=None, min_length=1, max_length=64,
                                   description="Only entries from this speaker or source; omit for all.")

    def execute(self, query: str, max_results: int, recency_weight: float, source: str | None) -> dict[str, Any]:
        terms = tokenize(query)
        if not terms:
            return tool_failure("no_search_terms", "The query has no words to search for (only stop words or "
                                                   "punctuation); use a few distinctive keywords.", query=query)
        positions = range(len(self.history))
        if source is not None:
            sources = list(dict.fromkeys(e.source for e in self.history))
            if source.casefold() not in {s.casefold() for s in sources}:
                return tool_failure("unknown_source", f"No entries from {source!r}. Sources: {', '.join(sources)}.",
                                    suggestions=close_matches(source, sources), source=source)
            positions = [i for i in positions if self.history[i].source.casefold() == source.casefold()]
        bm25 = BM25Index(tokenize(e.content) for e in self.history).scores(terms)
        matches = [i for i in positions if bm25[i] > 0]
        best = max((bm25[i] for i in matches), default=0.0)
        newest = max(len(self.history) - 1, 1)
        scored = []
        for i in matches:
            recency = i / newest if len(self.history) > 1 else 1.0
            score = (1 - recency_weight) * bm25[i] / best + recency_weight * recency
            scored.append((round(score, 4), i))
        scored.sort(key=lambda pair: (-pair[0], -pair[1]))
        return {"results": [self._result(self.history[i], score) for score, i in scored[:max_results]],
                "total_found": len(scored), "search_query": query}

    @staticmethod
    def _result(entry: HistoryEntry, score: float) -> dict[str, Any]:
        result: dict[str, Any] = {"content": entry.content, "relevance_score": score, "source": entry.source}
        if entry.timestamp is not None:
            result["timestamp"] = entry.timestamp
        return result


TOOLS = (ContextSearch,)
