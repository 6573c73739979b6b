"""Several listed values packed into one string argument: one call per value.

"The temperature in New York, Los Angeles, London and Tokyo" answered with one call,
``location="New York, Los Angeles, London, Tokyo"``: a parameter that takes one string is given four. Where a
call's string parameter (``"type": "string"`` in its tool's schema; an array parameter takes several items by
design) holds a value made of two or more parts that the request writes each on its own but not together (parts
between commas, semicolons, "and" or "&", as ``tool_selection.respective_values`` reads them), ``values_apart``
makes that call once per part, its other arguments unchanged; two such parameters in one call give every pairing
of their parts. A value the request writes whole is never taken apart ("New York City, NY", "rock and jazz",
"Johnson & Johnson"), nor one written as a literal with brackets ("[10, 15], [20, 25]": code that passes a list or
a point as a string), and a call another call already makes is not made twice. A request that pairs values
"respectively" is left to ``tool_selection.respective_values``: it asks for one pairing, not every pairing.
"""

from __future__ import annotations

import re
from itertools import product
from typing import Literal

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.lm.strict_calls import RESPECTIVELY
from tool_selection.parsing import words
from tool_selection.registry import ToolRegistry
from tool_selection.respective_values import packed_parts

__all__ = ["PACKED_VALUES", "PackedValues", "values_apart"]

PackedValues = Literal["apart", "as-written"]
PACKED_VALUES: tuple[str, ...] = PackedValues.__args__
_LITERAL = re.compile(r"[\[\]{}()]")


def _string_parameters(registry: ToolRegistry, tool_name: str) -> set[str]:
    properties = registry.get(tool_name).input_schema().get("properties") or {}
    return {name for name, spec in properties.items() if isinstance(spec, dict) and spec.get("type") == "string"}


def _apart(call: ToolCall, registry: ToolRegistry, request_words: str) -> list[ToolCall] | None:
    """``call`` made once per pairing of the parts its string arguments pack; None if none packs any."""
    if call.tool_name not in registry or not isinstance(call.arguments, dict):
        return None
    strings = _string_parameters(registry, call.tool_name)
    packed = {name: parts for name, value in call.arguments.items()
              if name in strings and isinstance(value, str) and not _LITERAL.search(value)
              and (parts := packed_parts(value, request_words))}
    if not packed:
        return None
    names = list(packed)
    return [ToolCall(tool_name=call.tool_name, arguments={**call.arguments, **dict(zip(names, pairing, strict=True))})
            for pairing in product(*(packed[name] for name in names))]


def values_apart(decision: MultiToolDecision, registry: ToolRegistry,
                 request: str) -> tuple[MultiToolDecision, int]:
    """``decision`` with each call whose string arguments pack listed values made once per value (see the module),
    its calls checked again, and how many calls packed them."""
    if RESPECTIVELY.search(request):
        return decision, 0
    request_words = f" {words(request)} "
    calls: list[ToolCall] = []
    made: list[ToolCall] = []
    packed = 0
    for call in decision.tool_calls:
        apart = _apart(call, registry, request_words)
        if apart is None:
            if call not in made:
                calls.append(call)
            continue
        packed += 1
        made += apart
        calls += [one for one in apart if one not in calls]
    if not packed:
        return decision, 0
    from tool_selection.strategies.base import check_decision  # DSPy: not while a command's parser is built

    return check_decision(decision.reasoning, calls, registry), packed
