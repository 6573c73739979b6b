"""The calculator tools: evaluate an arithmetic expression, convert a quantity between units.

Results are ``{"ok": True, ...}``; anything refused is a ``tool_failure`` (``{"ok": False, "error", "message",
"suggestions", ...}``). Floats are reported to 12 significant digits (unit conversions to 10), which hides
binary rounding noise such as ``0.1 + 0.2 = 0.30000000000000004``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tool_selection import BaseTool, register_tool
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets.calculator.expression import FUNCTIONS, MAX_LENGTH, ExpressionError, Number, evaluate
from tool_sets.calculator.units import UNITS, lookup_unit, similar_units, units_of

__all__ = ["TOOLS", "Calculate", "ConvertUnits"]

MAX_UNIT_VALUE = 1e12


def _significant(value: Number, digits: int) -> Number:
    return value if isinstance(value, int) else float(f"{value:.{digits}g}")


@register_tool
class Calculate(BaseTool):
    NAME = "calculate"
    description = ("Evaluate an arithmetic expression exactly as written and return the number, e.g. "
                   "'(17.5 * 3) / 4' or 'sqrt(2) * 10**3'. Supports + - * / // % **, parentheses, pi, e and "
                   f"the functions {', '.join(FUNCTIONS)}. For unit conversions use convert_units.")
    category = "calculator"

    class Arguments(StrictArguments):
        expression: str = Field(min_length=1, max_length=MAX_LENGTH,
                                description="The arithmetic expression, e.g. '2 * (3 + 4) ** 2'. Use ** for powers.")

    def execute(self, expression: str) -> dict[str, Any]:
        try:
            value = evaluate(expression)
        except ExpressionError as error:
            return tool_failure(error.code, error.message, suggestions=error.suggestions, expression=expression)
        return {"ok": True, "expression": expression, "result": _significant(value, 12)}


@register_tool
class ConvertUnits(BaseTool):
    NAME = "convert_units"
    description = ("Convert a quantity between units of length (m, km, cm, mm, mi, yd, ft, in, nmi), mass (kg, g, "
                   "mg, t, lb, oz, st), volume (l, ml, m3, gal, imp_gal, qt, pt, cup, fl_oz, tbsp, tsp; US "
                   "customary) or temperature (C, F, K). Unit names such as 'miles' or 'celsius' work too.")
    category = "calculator"

    class Arguments(StrictArguments):
        value: float = Field(ge=-MAX_UNIT_VALUE, le=MAX_UNIT_VALUE, description="The quantity to convert.")
        from_unit: str = Field(min_length=1, max_length=32, description="The unit of value, e.g. 'km' or 'F'.")
        to_unit: str = Field(min_length=1, max_length=32, description="The unit to convert to, e.g. 'mi' or 'C'.")

    def execute(self, value: float, from_unit: str, to_unit: str) -> dict[str, Any]:
        source, target = lookup_unit(from_unit), lookup_unit(to_unit)
        for given, unit in ((from_unit, source), (to_unit, target)):
            if unit is None:
                return tool_failure("unknown_unit", f"Unknown unit {given!r}. Known units: "
                                                    f"{', '.join(u.symbol for u in UNITS)}.",
                                    suggestions=similar_units(given), unit=given)
        if source.dimension != target.dimension:
            return tool_failure(
                "incompatible_units",
                f"Cannot convert {source.dimension} ({source.symbol}) to {target.dimension} ({target.symbol}).",
                suggestions=units_of(source.dimension), from_dimension=source.dimension,
                to_dimension=target.dimension)
        base = source.to_base(value)
        if source.dimension == "temperature" and base < 0:
            return tool_failure("below_absolute_zero", f"{value:g} {source.symbol} is below absolute zero "
                                                       f"({source.from_base(0):.2f} {source.symbol}).")
        return {"ok": True, "value": value, "from_unit": source.symbol, "to_unit": target.symbol,
                "dimension": source.dimension, "result": _significant(target.from_base(base), 10)}


TOOLS = (Calculate, ConvertUnits)
