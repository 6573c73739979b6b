"""Values a request pairs "respectively": one to each call, where the model gave every call all of them.

"Play songs from Taylor Swift and Maroon 5 for 20 and 15 minutes respectively" asks for two calls, one artist each.
A small model writes the two calls with the durations apart and ``artist="Taylor Swift, Maroon 5"`` in both (or a
list of both). Where the request says "respectively" and the N calls of one tool all hold the same value in an
argument, made of N parts that the request writes each on its own but not together (a list's items, or a string's
parts between commas, semicolons, "and" or "&"), ``respective_values`` gives the i-th call the i-th part: a string
where the value was one, a list of one item where it was a list. Without "respectively" nothing changes: "vegan and
gluten-free restaurants in New York and Los Angeles" asks for both preferences in each call.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Literal

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.lm.strict_calls import RESPECTIVELY as SAID_RESPECTIVELY
from tool_selection.parsing import words
from tool_selection.registry import ToolRegistry

__all__ = ["RESPECTIVELY", "Respectively", "packed_parts", "respective_values"]

Respectively = Literal["paired", "as-written"]
RESPECTIVELY: tuple[str, ...] = Respectively.__args__
_PART_BREAK = re.compile(r"\s*(?:[,;&]|\band\b)\s*")


def _written(text: str, request_words: str) -> bool:
    return bool(words(text)) and f" {words(text)} " in request_words


def packed_parts(value: Any, request_words: str) -> list[str] | None:
    """The parts ``value`` packs, each written in the request on its own and not all together; else None."""
    if isinstance(value, list):
        parts = value
    elif isinstance(value, str) and not _written(value, request_words):
        parts = [part for part in _PART_BREAK.split(value) if part]
    else:
        return None
    if len(parts) < 2 or not all(isinstance(part, str) and _written(part, request_words) for part in parts):
        return None
    return parts


def respective_values(decision: MultiToolDecision, registry: ToolRegistry,
                      request: str) -> tuple[MultiToolDecision, int]:
    """``decision`` with each value the request pairs "respectively" given out one part per call (see the module),
    its calls checked again, and how many calls were given a part."""
    if not SAID_RESPECTIVELY.search(request):
        return decision, 0
    request_words = f" {words(request)} "
    calls = list(decision.tool_calls)
    by_tool: dict[str, list[int]] = defaultdict(list)
    for index, call in enumerate(calls):
        if call.tool_name in registry and isinstance(call.arguments, dict):
            by_tool[call.tool_name].append(index)
    rewritten = 0
    for indexes in by_tool.values():
        first = calls[indexes[0]].arguments
        for name, value in first.items():
            parts = packed_parts(value, request_words)
            if (parts is None or len(parts) != len(indexes)
                    or any(calls[i].arguments.get(name) != value for i in indexes)):
                continue
            for index, part in zip(indexes, parts, strict=True):
                calls[index] = ToolCall(tool_name=calls[index].tool_name, arguments={
                    **calls[index].arguments, name: [part] if isinstance(value, list) else part})
            rewritten += len(indexes)
    if not rewritten:
        return decision, 0
    from tool_selection.strategies.base import check_decision  # DSPy: not while a command's parser is built

    return check_decision(decision.reasoning, calls, registry), rewritten
