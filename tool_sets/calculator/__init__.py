"""The ``calculator`` tool set: safe arithmetic over a whitelist of operators and functions, and unit conversion.

Expressions are parsed with ``ast`` and evaluated node by node (never ``eval``), bounded in length, size,
nesting and magnitude (``expression.py``); units of length, mass, volume and temperature are in ``units.py``.
"""

from tool_selection import ToolSet
from tool_sets.calculator.expression import ExpressionError, evaluate
from tool_sets.calculator.tools import TOOLS, Calculate, ConvertUnits

__all__ = ["TOOLS", "TOOL_SET", "Calculate", "ConvertUnits", "ExpressionError", "evaluate"]

TOOL_SET = ToolSet(
    name="calculator",
    description="Arithmetic: evaluate expressions with the usual operators and math functions, and convert "
                "lengths, masses, volumes and temperatures between units.",
    tools=TOOLS,
)
