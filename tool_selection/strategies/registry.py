"""The selection strategies' registry, without DSPy: a strategy's name is checked before anything heavy loads.

Each strategy class registers itself when its module is imported (``base.register_strategy``); the built-in names
are declared here as well, so that ``STRATEGIES.check_name`` answers a misspelt ``--strategy`` without importing
DSPy (a test holds the two lists equal)."""

from __future__ import annotations

from typing import Any

from tool_selection.errors import ToolSelectionError
from tool_selection.named_registry import Registry

__all__ = ["BUILT_IN_STRATEGIES", "GATE_PREFIX", "STRATEGIES", "UNDECLARED_ARGUMENTS", "UnknownStrategyError"]

GATE_PREFIX = "gate+"

UNDECLARED_ARGUMENTS = ("refuse", "drop")
"""What a selector does with an argument its tool does not declare: ``refuse`` (the call is invalid, as the tool
would refuse it) or ``drop`` (the key is removed and the call checked again; the row records how many were)."""

BUILT_IN_STRATEGIES = ("json-cot", "json", "chat-cot", "native", "native-cot", "native-strict", "native-cot-strict",
                       "native-strict-more", "native-strict-cover", "auto", "text:fenced", "text:call", "text:tags",
                       "native-strict-split", "native-split")


class UnknownStrategyError(ToolSelectionError, ValueError):
    """A strategy name that no strategy is registered under."""


STRATEGIES: Registry[Any] = Registry(
    "selection strategy", group="tool_selection.strategies", check="tool_selection.strategies.base:check_strategy_class", error=UnknownStrategyError,
    builtins=["tool_selection.strategies.json_strategies", "tool_selection.strategies.native",
              "tool_selection.strategies.text", "tool_selection.strategies.split"],
    declared=BUILT_IN_STRATEGIES, hint=f"Any of them can be put behind the relevance gate as {GATE_PREFIX}NAME.")
"""The selection strategies by name: the built-in ones, those registered with ``register_strategy``, and those of
the ``tool_selection.strategies`` entry-point group."""
