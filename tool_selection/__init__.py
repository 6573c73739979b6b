"""tool-selection: a research toolkit for studying how language models choose tools, built on DSPy.

Every name loads on first use (the tool model, ``BaseTool``, ``register_tool``, ``ToolSet``, ``ToolCall``, ...,
from its own light modules), so ``import tool_selection`` and ``toolsel --help`` stay fast::

    import dspy
    from tool_selection import MultiToolSelector, get_lm, load_tool_set

    dspy.configure(lm=get_lm("local:qwen2.5-coder-0.5b"))
    MultiToolSelector(load_tool_set("finance")).decide("What was ACME's last closing price?")

    spec = SelectorSpec(tools="finance", strategy="native", retrieval=RetrievalSpec(k=5))   # what it does, as a value
    MultiToolSelector.from_spec(spec, model="local:qwen2.5-coder-0.5b")

The evaluation harness (suites, ``evaluate``, ``optimize``, the benchmarks) is the ``evals`` package, built on this
one; this package does not import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_selection._lazy import lazy_getattr

if TYPE_CHECKING:
    from tool_selection.decision import CallProblem, MultiToolDecision, ToolCall
    from tool_selection.errors import (
        ArgumentProblem,
        DuplicateToolError,
        ToolArgumentError,
        ToolDefinitionError,
        ToolSelectionError,
        UnknownToolError,
    )
    from tool_selection.lm import get_lm
    from tool_selection.registry import ToolRegistry, default_registry, register_tool
    from tool_selection.run_config import RunConfig
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import GateSpec, RetrievalSpec, SelectorSpec
    from tool_selection.strategies import strategy_names
    from tool_selection.tool import BaseTool, NoArguments, StrictArguments, ToolArgument
    from tool_selection.toolset import ToolSet, ToolSetConfig, available_tool_sets, load_tool_set

__version__ = "0.1.0"

# name -> module; loaded on first attribute access (PEP 562)
_LAZY = {
    **dict.fromkeys(["CallProblem", "MultiToolDecision", "ToolCall"], "tool_selection.decision"),
    **dict.fromkeys(["ArgumentProblem", "DuplicateToolError", "ToolArgumentError", "ToolDefinitionError",
                     "ToolSelectionError", "UnknownToolError"], "tool_selection.errors"),
    **dict.fromkeys(["ToolRegistry", "default_registry", "register_tool"], "tool_selection.registry"),
    **dict.fromkeys(["BaseTool", "NoArguments", "StrictArguments", "ToolArgument"], "tool_selection.tool"),
    **dict.fromkeys(["ToolSet", "ToolSetConfig", "available_tool_sets", "load_tool_set"], "tool_selection.toolset"),
    **dict.fromkeys(["GateSpec", "RetrievalSpec", "SelectorSpec"], "tool_selection.spec"),
    "MultiToolSelector": "tool_selection.selector",
    "RunConfig": "tool_selection.run_config",
    "get_lm": "tool_selection.lm",
    "strategy_names": "tool_selection.strategies",
}

__all__ = [
    "ArgumentProblem",
    "BaseTool",
    "CallProblem",
    "DuplicateToolError",
    "GateSpec",
    "MultiToolDecision",
    "MultiToolSelector",
    "NoArguments",
    "RetrievalSpec",
    "RunConfig",
    "SelectorSpec",
    "StrictArguments",
    "ToolArgument",
    "ToolArgumentError",
    "ToolCall",
    "ToolDefinitionError",
    "ToolRegistry",
    "ToolSelectionError",
    "ToolSet",
    "ToolSetConfig",
    "UnknownToolError",
    "available_tool_sets",
    "default_registry",
    "get_lm",
    "load_tool_set",
    "register_tool",
    "strategy_names",
]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
