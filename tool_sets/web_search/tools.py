"""The ``web_search`` tool: search through a pluggable backend (offline BM25 index by default)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from pydantic import Field, InstanceOf

from tool_selection import BaseTool, register_tool
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets.web_search.backends import MissingAPIKeyError, SearchBackend, SearchBackendError, clip, shipped_index

__all__ = ["TOOLS", "WebSearch"]

_SEARCHABLE = re.compile(r"\w")


@register_tool
class WebSearch(BaseTool):
    NAME = "web_search"
    description = ("Search the web for pages about a topic and return the best matches with title, URL, a snippet "
                   "and a relevance score. Use for general knowledge questions (programming, science, geography, "
                   "cooking, money, travel, health); not for the current conversation.")
    category = "web_search"

    backend: InstanceOf[SearchBackend] = Field(default_factory=shipped_index, exclude=True, repr=False,
                                               description="What to search with: the shipped offline index, a "
                                                           "hosted API, or any object with name and search().")

    class Arguments(StrictArguments):
        query: str = Field(min_length=1, max_length=300, description="What to search for, in a few keywords.")
        max_results: int = Field(default=5, ge=1, le=10, description="How many results to return (1-10).")

    def execute(self, query: str, max_results: int) -> dict[str, Any]:
        if not _SEARCHABLE.search(query):
            return tool_failure("no_search_terms", "The query has no words to search for; use a few keywords.",
                                query=query)
        try:
            found = self.backend.search(query, max_results)
        except MissingAPIKeyError as error:
            return tool_failure("missing_api_key", str(error), variable=error.variable, backend=self.backend.name)
        except SearchBackendError as error:
            return tool_failure("search_unavailable", str(error), backend=self.backend.name)
        results = [{**dataclasses.asdict(r), "snippet": clip(r.snippet)} for r in found[:max_results]]
        return {"ok": True, "query": query, "backend": self.backend.name, "results": results}


TOOLS = (WebSearch,)
