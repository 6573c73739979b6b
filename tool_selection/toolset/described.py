"""``DescribedToolSet``: a set's tools shown with other descriptions, and ``described_tool``, one such view."""

from __future__ import annotations

from collections.abc import Mapping

from tool_selection.tool import BaseTool
from tool_selection.toolset.base import ToolSet, original_tool
from tool_selection.toolset.wrapper import WrapperToolSet

__all__ = ["DescribedToolSet", "described_tool"]


def described_tool(tool: type[BaseTool], description: str) -> type[BaseTool]:
    """A subclass of ``tool`` that describes itself with ``description``, with the same name, arguments and
    execution; ``tool`` is untouched. Like a renamed view it remembers ``tool``'s original class, so the two
    count as one tool (``same_tool``). An empty description is a ``ToolDefinitionError``, as for any tool."""
    return type(tool.__name__, (tool,), {"NAME": tool.NAME, "description": description,
                                         "__module__": tool.__module__,
                                         "__qualname__": f"{tool.__qualname__}[described]",
                                         "__renamed_from__": original_tool(tool)})


class DescribedToolSet(WrapperToolSet):
    """``wrapped`` with the tools named in ``descriptions`` (``{name: description}``) described anew, in the
    same order; a name that ``wrapped`` lacks is an error."""

    descriptions: dict[str, str]

    def __init__(self, wrapped: ToolSet, descriptions: Mapping[str, str], name: str | None = None):
        for tool_name in descriptions:
            wrapped.get(tool_name)  # unknown names fail loudly, with close matches
        tools = tuple(described_tool(t, descriptions[t.NAME]) if descriptions.get(t.NAME, t.description)
                      != t.description else t for t in wrapped.tools)
        super().__init__(wrapped, name=name or f"{wrapped.name}-described", tools=tools)
        object.__setattr__(self, "descriptions", dict(descriptions))
