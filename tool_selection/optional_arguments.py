"""Optional arguments the request gives no value for, left to the tool's default.

A small model fills a tool's optional parameters with values of its own: ``mod=1`` for "3 to the power of 5",
``year=2023`` for "the population of pandas in China", ``compounding_frequency="Monthly"`` where the request names
none. Called without them, the tool uses its own default, which is what such a request asks for (BFCL's answers
leave these parameters out or give their defaults). ``unwritten_optional`` drops every optional argument (one its
tool does not require) that holds a number, or a string of up to ``MOST_WORDS`` words, that the request does not
write (``strict_calls.request_writes``: as words, as a value, as a number in words, as a glued unit, abbreviation or
initials). Required arguments, longer text (what the model writes itself: a message, a note), booleans, lists and
objects are left as they are. In a tool-calling loop the request is the conversation so far, tool results
included, so a value a tool returned counts as written.
"""

from __future__ import annotations

from typing import Any, Literal

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.lm.strict_calls import request_writes
from tool_selection.registry import ToolRegistry

__all__ = ["OPTIONAL_ARGUMENTS", "OptionalArguments", "unwritten_optional"]

OptionalArguments = Literal["written", "any"]
OPTIONAL_ARGUMENTS: tuple[str, ...] = OptionalArguments.__args__
MOST_WORDS = 4
"""The longest string, in words, read as a value the request would write: longer text (a message's body, a note)
is the model's own writing, kept as it is."""


def _unwritten(name: str, value: Any, parameters: dict[str, Any], request: str) -> bool:
    optional = name in (parameters.get("properties") or {}) and name not in (parameters.get("required") or ())
    number = isinstance(value, int | float) and not isinstance(value, bool)
    short_text = isinstance(value, str) and len(value.split()) <= MOST_WORDS
    return optional and (number or short_text) and not request_writes(value, request)


def unwritten_optional(decision: MultiToolDecision, registry: ToolRegistry,
                       request: str) -> tuple[MultiToolDecision, int]:
    """``decision`` with each optional argument that holds a string or number ``request`` does not write removed
    and its calls checked again, and how many arguments were removed."""
    calls, dropped = [], 0
    for call in decision.tool_calls:
        if call.tool_name in registry and isinstance(call.arguments, dict):
            parameters = registry.get(call.tool_name).input_schema()
            kept = {name: value for name, value in call.arguments.items()
                    if not _unwritten(name, value, parameters, request)}
            if len(kept) < len(call.arguments):
                dropped += len(call.arguments) - len(kept)
                call = ToolCall(tool_name=call.tool_name, arguments=kept)
        calls.append(call)
    if not dropped:
        return decision, 0
    from tool_selection.strategies.base import check_decision  # DSPy: not while a command's parser is built

    return check_decision(decision.reasoning, calls, registry), dropped
