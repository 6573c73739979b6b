"""The ``context_search`` tool: find what was said earlier in a debate or conversation.

Interface and output (fixed by the debate protocol this tool serves)::

    context_search(term)  ->  {"status": "success", "result": {"matches": [
                                   {"roundNumber", "agentId", "agentRole", "type", "contentSnippet"}, ...]}}
                          or  {"status": "error", "result": "message"}

``term`` is matched as a case-insensitive substring (runs of whitespace count as one space) in every contribution
of every round and type. What is searched: the live ``conversation`` the tool is configured with (any object whose
``rounds`` hold contributions: a debate's state, a discussion's transcript) when there is one, else the
``history`` entries (by default the shipped 30-turn debate transcript, ``debate.json``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pydantic import Field, field_validator

from tool_selection import BaseTool, register_tool
from tool_selection.errors import ToolArgumentError, close_matches
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets.context_search.history import HistoryEntry, default_history

__all__ = ["SNIPPET_CHARS", "TOOLS", "ContextSearch", "snippet"]

SNIPPET_CHARS = 200
ELLIPSIS = "…"


@register_tool
class ContextSearch(BaseTool):
    """Search the debate or conversation so far for a term.

    Every contribution that contains ``term`` (case-insensitive) matches. The optional ranking arguments order the
    matches: ``relevance = (1 - recency_weight) * hits / most_hits + recency_weight * position / (n - 1)``, where
    ``hits`` counts the term's occurrences in the contribution, ``most_hits`` is the largest count among the matches
    and ``position`` runs from 0 (the oldest of the n contributions searched) to n - 1 (the newest); ties go to the
    newer one. Beyond the fixed fields, each match carries ``relevanceScore`` (and ``timestamp`` where the history
    has one) and the result ``totalFound`` (before ``max_results`` applies) and ``searchTerm``. A refusal carries
    the toolkit's failure fields (``ok``, ``error``, ``message``, ``suggestions``) beside ``status`` and ``result``.
    """

    NAME = "context_search"
    description = ("Search the debate or conversation so far for a word or phrase, e.g. to recall an agent's "
                   "proposal, a critique or a figure quoted before. Returns the matching contributions with their "
                   "round, agent, role, type and a short snippet. Not for searching the web.")
    category = "context_search"

    history: tuple[HistoryEntry, ...] = Field(default_factory=default_history, exclude=True, repr=False,
                                              description="The conversation searched when there is no live one, "
                                                          "oldest entry first.")
    conversation: Any = Field(default=None, exclude=True, repr=False,
                              description="A live conversation whose ``rounds`` are searched (a debate's state, a "
                                          "discussion's transcript), read at each call; when set, ``history`` is "
                                          "not used.")

    class Arguments(StrictArguments):
        term: str = Field(min_length=1, max_length=300,
                          description="The word or phrase to find (case-insensitive), e.g. 'budget' or 'caching'.")
        max_results: int = Field(default=10, ge=1, le=50, description="How many matches to return (1-50).")
        recency_weight: float = Field(default=0.2, ge=0, le=1,
                                      description="How much newer contributions are preferred: 0 ranks by how often "
                                                  "the term occurs, 1 by recency only.")
        source: str | None = Field(default=None, min_length=1, max_length=64,
                                   description="Only contributions of this agent (its id or role) or speaker; omit "
                                               "for all.")

    @field_validator("conversation")
    @classmethod
    def _has_rounds(cls, value: Any) -> Any:
        if value is not None and not hasattr(value, "rounds"):
            raise ValueError(f"conversation must have 'rounds' (a debate's state or a discussion's transcript), got "
                             f"{type(value).__name__}")
        return value

    def validate_and_execute(self, **kwargs: Any) -> dict[str, Any]:
        """As every tool, but bad arguments are answered in this tool's error shape rather than raised."""
        try:
            arguments = self.parse_arguments(kwargs)
        except ToolArgumentError as error:
            return _error("invalid_arguments", str(error), problems=[p.field for p in error.problems])
        return self.execute(**arguments)

    def execute(self, term: str, max_results: int, recency_weight: float, source: str | None) -> dict[str, Any]:
        wanted = " ".join(term.split())
        if not wanted:
            return _error("empty_term", "The term is blank; give a word or phrase to search for, e.g. 'budget'.")
        items = list(self._contributions())
        positions = list(range(len(items)))
        if source is not None:
            wanted_source = source.casefold()
            positions = [i for i in positions
                         if wanted_source in (items[i]["agentId"].casefold(), items[i]["agentRole"].casefold())]
            if not positions and items:
                sources = list(dict.fromkeys(s for item in items for s in (item["agentId"], item["agentRole"])))
                return _error("unknown_source", f"No contributions from {source!r}. Sources: {', '.join(sources)}.",
                              suggestions=close_matches(source, sources), source=source)
        pattern = re.compile(re.escape(wanted), re.IGNORECASE)
        hits = {i: len(pattern.findall(items[i]["content"])) for i in positions}
        matched = [i for i in positions if hits[i]]
        most = max((hits[i] for i in matched), default=1)
        newest = max(len(items) - 1, 1)
        scored = sorted(((round((1 - recency_weight) * hits[i] / most +
                                recency_weight * (i / newest if len(items) > 1 else 1.0), 4), i) for i in matched),
                        key=lambda pair: (-pair[0], -pair[1]))
        matches = [self._match(items[i], pattern, score) for score, i in scored[:max_results]]
        return {"status": "success", "result": {"matches": matches, "totalFound": len(scored), "searchTerm": wanted}}

    def _contributions(self) -> Iterator[dict[str, Any]]:
        """What is searched, oldest first, as flat records (content whitespace-normalised)."""
        if self.conversation is not None:
            for round_ in self.conversation.rounds:
                for item in _get(round_, "contributions"):
                    yield {"roundNumber": _get(round_, "number", "roundNumber"),
                           "agentId": str(_get(item, "agent_id", "agentId")),
                           "agentRole": str(_get(item, "agent_role", "agentRole")),
                           "type": str(_get(item, "type")), "content": " ".join(str(_get(item, "content")).split())}
            return
        for position, entry in enumerate(self.history, start=1):
            record = {"roundNumber": position, "agentId": entry.source, "agentRole": entry.role or entry.source,
                      "type": entry.type, "content": " ".join(entry.content.split())}
            if entry.timestamp is not None:
                record["timestamp"] = entry.timestamp
            yield record

    @staticmethod
    def _match(item: dict[str, Any], pattern: re.Pattern[str], score: float) -> dict[str, Any]:
        match = {key: item[key] for key in ("roundNumber", "agentId", "agentRole", "type")}
        match["contentSnippet"] = snippet(item["content"], pattern)
        match["relevanceScore"] = score
        if "timestamp" in item:
            match["timestamp"] = item["timestamp"]
        return match


def snippet(text: str, pattern: re.Pattern[str] | str, limit: int = SNIPPET_CHARS) -> str:
    """At most ``limit`` characters of ``text`` around the first match of ``pattern`` (the whole text when it fits),
    with an ellipsis where text was cut."""
    if len(text) <= limit:
        return text
    found = re.search(pattern, text) if isinstance(pattern, str) else pattern.search(text)
    start, end = found.span() if found else (0, 0)
    start = max(0, min(start - (limit - (end - start)) // 2, len(text) - limit))
    end = start + limit
    head = ELLIPSIS if start > 0 else ""
    tail = ELLIPSIS if end < len(text) else ""
    return head + text[start + len(head): end - len(tail)] + tail


def _get(obj: Any, *names: str) -> Any:
    """A field of a model object or of its JSON form (snake_case attribute or camelCase key)."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if not isinstance(obj, dict) and hasattr(obj, name):
            return getattr(obj, name)
    raise ValueError(f"context_search: a round or contribution lacks {' / '.join(names)}: {type(obj).__name__}")


def _error(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"status": "error", "result": message, **tool_failure(code, message, **details)}


TOOLS = (ContextSearch,)
