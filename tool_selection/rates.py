"""Rates the request writes as percentages, passed as decimals where the tool's parameter asks for a rate.

"An interest rate of 5%" reaches a tool as ``interest_rate=0.05`` in most APIs (and in BFCL's answers), while a
small model copies the 5. A number argument is a *rate parameter* when its name or description says rate, return,
yield, growth, interest, discount or inflation and neither says percent (``annual_rate_percent`` takes the 5 as
written, and so does "The interest rate as a percentage"). Where such an argument holds a number the request
writes with a percent sign, ``decimal_rates`` writes it divided by 100; every other argument is left as it is.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.lm.request_values import REQUEST_NUMBER, number_of
from tool_selection.parsing import name_words
from tool_selection.registry import ToolRegistry

__all__ = ["RATES", "Rates", "decimal_rates", "percentages", "rate_parameters"]

Rates = Literal["as-written", "decimal"]
RATES: tuple[str, ...] = Rates.__args__
_RATE = re.compile(r"\b(?:rates?|returns?|yields?|growth|interest|discount|inflation|apr|apy)\b", re.IGNORECASE)
_PERCENT = re.compile(r"percent|\bpct\b|%", re.IGNORECASE)


def rate_parameters(schema: dict[str, Any]) -> set[str]:
    """The ``number`` parameters of a tool's JSON schema that take a rate as a decimal (see the module)."""
    found = set()
    for name, spec in (schema.get("properties") or {}).items():
        if not isinstance(spec, dict) or spec.get("type") != "number":
            continue
        said = f"{name_words(name)} {spec.get('description') or ''}"
        if _RATE.search(said) and not _PERCENT.search(said):
            found.add(name)
    return found


def percentages(request: str) -> set[float]:
    """The numbers ``request`` writes with a percent sign (5% gives 5.0)."""
    return {meanings[0] for match in REQUEST_NUMBER.finditer(request)
            if match.group().endswith("%") and (meanings := number_of(match.group()))}


def decimal_rates(decision: MultiToolDecision, registry: ToolRegistry,
                  request: str) -> tuple[MultiToolDecision, int]:
    """``decision`` with each rate argument that holds a percentage ``request`` writes divided by 100, and how many
    arguments were rewritten."""
    written = percentages(request)
    if not written:
        return decision, 0
    calls, rewritten = [], 0
    for call in decision.tool_calls:
        if call.tool_name in registry and isinstance(call.arguments, dict):
            parameters = rate_parameters(registry.get(call.tool_name).input_schema())
            arguments = dict(call.arguments)
            for name in parameters & arguments.keys():
                value = arguments[name]
                if isinstance(value, int | float) and not isinstance(value, bool) and float(value) in written:
                    arguments[name], rewritten = value / 100, rewritten + 1
            call = ToolCall(tool_name=call.tool_name, arguments=arguments) if arguments != call.arguments else call
        calls.append(call)
    if not rewritten:
        return decision, 0
    return decision.model_copy(update={"tool_calls": calls}), rewritten
