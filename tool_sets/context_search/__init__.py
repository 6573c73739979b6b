"""The ``context_search`` tool set: search the debate or conversation so far for a term.

``context_search(term)`` matches contributions case-insensitively and answers ``{"status": "success", "result":
{"matches": [{"roundNumber", "agentId", "agentRole", "type", "contentSnippet"}, ...]}}`` (snippets of at most
200 characters) or ``{"status": "error", "result": "message"}``. What it searches is tool configuration, not an
argument: a live ``conversation`` (a debate's state, a discussion's transcript: anything with ``rounds``), else
``history=[{"content": ..., "source": ..., "timestamp": ...}, ...]``, by default the shipped 30-turn debate
transcript (``debate.json``).
"""

from tool_selection import ToolSet
from tool_sets.context_search.history import HistoryEntry, default_history
from tool_sets.context_search.tools import SNIPPET_CHARS, TOOLS, ContextSearch, snippet

__all__ = ["SNIPPET_CHARS", "TOOLS", "TOOL_SET", "ContextSearch", "HistoryEntry", "default_history", "snippet"]

TOOL_SET = ToolSet(
    name="context_search",
    description="Conversation memory: search what was said earlier in the current debate or conversation.",
    tools=TOOLS,
)
