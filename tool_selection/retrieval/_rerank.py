"""Re-ranking retrieved tools with the language model: "does this function do exactly what the request asks?"

A retriever ranks by words and embeddings, so look-alikes from other catalogs (``queue_1`` for ``join_waitlist``)
crowd the top of a large registry. ``LLMReranker`` asks the model the question once per candidate, with the
request before the function so that a local model's KV cache holds the shared part, and orders the candidates
by log P(Yes) - log P(No), the retriever's order breaking ties. No cross-encoder package ships weights here; the
selector's own small model is the re-ranker.
"""

from __future__ import annotations

from collections.abc import Sequence

import dspy

from tool_selection.registry import ToolRegistry
from tool_selection.retrieval._base import RetrievedTool, check_k
from tool_selection.strategies.gate import ask_yes_no
from tool_selection.tool import BaseTool

__all__ = ["RERANK_QUESTION", "LLMReranker"]

RERANK_SYSTEM = "You decide whether a function can do what a user's request asks."
RERANK_QUESTION = "Does this function do exactly what the request asks? Answer Yes or No."


def _function_text(tool: type[BaseTool]) -> str:
    arguments = ", ".join(argument.name for argument in tool.arguments())
    return f"Function: {tool.NAME}({arguments})\n{tool.description.strip()}"


class LLMReranker:
    """Scores each candidate tool with the LM (``lm``, default the configured one) and keeps the ``keep`` best."""

    def __init__(self, lm: dspy.BaseLM | None = None, *, keep: int | None = None):
        if keep is not None:
            check_k(keep, "keep")
        self.lm, self.keep = lm, keep

    def messages(self, request: str, tool: type[BaseTool]) -> list[dict[str, str]]:
        return [{"role": "system", "content": RERANK_SYSTEM},
                {"role": "user", "content": f"Request: {request}\n\n{_function_text(tool)}\n\n{RERANK_QUESTION}"}]

    def score(self, request: str, tool: type[BaseTool]) -> float:
        """log P(Yes) - log P(No) for one candidate (higher: more likely to do what is asked)."""
        return ask_yes_no(self.lm or dspy.settings.lm, self.messages(request, tool))

    def rerank(self, request: str, registry: ToolRegistry, hits: Sequence[RetrievedTool]) -> list[RetrievedTool]:
        """``hits`` (best first) ordered by the model's score; equal scores keep the retriever's order."""
        scored = [(self.score(request, registry.get(hit.name)), position, hit.name)
                  for position, hit in enumerate(hits)]
        ranked = [RetrievedTool(name, score) for score, _, name in sorted(scored, key=lambda s: (-s[0], s[1]))]
        return ranked[: self.keep] if self.keep is not None else ranked
