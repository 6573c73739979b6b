"""The ``web_search`` tool set: a web search tool over a pluggable backend.

The default backend is offline: BM25 (``bm25.py``) over short factual documents shipped in ``corpus.jsonl``
(programming, science, geography, cooking, personal finance, travel, health), so runs are reproducible. Plug in
``TavilyBackend`` (key in ``TAVILY_API_KEY``) or any object with ``name`` and ``search(query, k)``:
``WebSearch(backend=TavilyBackend())``.
"""

from tool_selection import ToolSet
from tool_sets.web_search.backends import (
    Document,
    LocalIndexBackend,
    MissingAPIKeyError,
    SearchBackend,
    SearchBackendError,
    SearchResult,
    TavilyBackend,
    load_corpus,
    shipped_index,
)
from tool_sets.web_search.bm25 import BM25Index, tokenize
from tool_sets.web_search.tools import TOOLS, WebSearch

__all__ = [
    "TOOLS", "TOOL_SET", "BM25Index", "Document", "LocalIndexBackend", "MissingAPIKeyError", "SearchBackend",
    "SearchBackendError", "SearchResult", "TavilyBackend", "WebSearch", "load_corpus", "shipped_index", "tokenize",
]

TOOL_SET = ToolSet(
    name="web_search",
    description="Web search: find pages about a topic and return titles, URLs, snippets and relevance scores.",
    tools=TOOLS,
)
