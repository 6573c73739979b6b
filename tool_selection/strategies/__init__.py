"""Selection strategies: how a selector asks a model for tool calls and reads the answer.

``strategy_names()`` lists them; ``MultiToolSelector(tools, strategy="native")`` uses one, and ``gate+NAME`` puts
the relevance gate in front of it. See ``base.SelectionStrategy`` for what a strategy is.
"""

from tool_selection.strategies.base import (
    GATE_PREFIX,
    SelectionStrategy,
    UnknownStrategyError,
    check_decision,
    get_strategy,
    parse_strategy,
    register_strategy,
    strategy_names,
)

__all__ = [
    "DEFAULT_STRATEGY",
    "GATE_PREFIX",
    "SelectionStrategy",
    "UnknownStrategyError",
    "check_decision",
    "get_strategy",
    "parse_strategy",
    "register_strategy",
    "strategy_names",
]

DEFAULT_STRATEGY = "json-cot"
