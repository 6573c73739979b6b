"""Selection strategies: how a selector asks a model for tool calls and reads the answer.

``strategy_names()`` lists them; ``MultiToolSelector(tools, strategy="native")`` uses one (default ``auto``), and
``gate+NAME`` puts the relevance gate in front of it. See ``base.SelectionStrategy`` for what a strategy is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_selection._lazy import lazy_getattr
from tool_selection.defaults import DEFAULT_STRATEGY
from tool_selection.strategies.registry import UNDECLARED_ARGUMENTS

if TYPE_CHECKING:
    from tool_selection.strategies.base import (
        GATE_PREFIX,
        STRATEGIES,
        SelectionStrategy,
        UnknownStrategyError,
        check_decision,
        drop_undeclared,
        get_strategy,
        parse_strategy,
        register_strategy,
        strategy_names,
    )

# loaded on first use (PEP 562), so that the constants below come without DSPy ('toolsel eval --help')
_LAZY = dict.fromkeys(["GATE_PREFIX", "STRATEGIES", "SelectionStrategy", "UnknownStrategyError", "check_decision",
                       "drop_undeclared", "get_strategy", "parse_strategy", "register_strategy", "strategy_names"],
                      "tool_selection.strategies.base")

__all__ = [
    "DEFAULT_STRATEGY",
    "GATE_PREFIX",
    "STRATEGIES",
    "STRUCTURED_STRATEGY",
    "UNDECLARED_ARGUMENTS",
    "SelectionStrategy",
    "UnknownStrategyError",
    "check_decision",
    "drop_undeclared",
    "get_strategy",
    "parse_strategy",
    "register_strategy",
    "strategy_names",
]


STRUCTURED_STRATEGY = "json-cot"
"""Reasoning plus a constrained JSON answer: what a compiled selector whose manifest names no strategy was built
with (the only strategy before strategies were named)."""


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
