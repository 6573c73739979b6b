"""tool-selection: a research toolkit for studying how language models choose tools, built on DSPy."""

from tool_selection.decision import CallProblem, MultiToolDecision, ToolCall
from tool_selection.errors import (
    ArgumentProblem,
    DuplicateToolError,
    ToolArgumentError,
    ToolDefinitionError,
    ToolSelectionError,
    UnknownToolError,
)
from tool_selection.registry import ToolRegistry, default_registry, register_tool
from tool_selection.tool import BaseTool, NoArguments, StrictArguments, ToolArgument
from tool_selection.toolset import ToolSet, ToolSetConfig, available_tool_sets, load_tool_set

__version__ = "0.1.0"

__all__ = [
    "ArgumentProblem",
    "BaseTool",
    "CallProblem",
    "DuplicateToolError",
    "MultiToolDecision",
    "NoArguments",
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
    "load_tool_set",
    "register_tool",
]
