"""The ``context_search`` tool set: search the current conversation or debate history by keyword relevance and
recency.

The history is tool configuration, not an argument: ``ContextSearch(history=[{"content": ..., "source": ...,
"timestamp": ...}, ...])``. By default it is the shipped 30-turn debate transcript (``debate.json``). Ranking
uses the same BM25 as the ``web_search`` tool set's offline index.
"""

from tool_selection import ToolSet
from tool_sets.context_search.history import HistoryEntry, default_history
from tool_sets.context_search.tools import TOOLS, ContextSearch

__all__ = ["TOOLS", "TOOL_SET", "ContextSearch", "HistoryEntry", "default_history"]

TOOL_SET = ToolSet(
    name="context_search",
    description="Conversation memory: search what was said earlier in the current conversation or debate.",
    tools=TOOLS,
)
