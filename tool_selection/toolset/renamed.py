"""``RenamedToolSet``: a set's tools under new names, and ``renamed_tool``, the renamed view of one tool."""

from __future__ import annotations

from collections.abc import Mapping

from tool_selection.tool import BaseTool
from tool_selection.toolset.base import ToolSet, original_tool
from tool_selection.toolset.wrapper import WrapperToolSet

__all__ = ["RenamedToolSet", "renamed_tool"]


def renamed_tool(tool: type[BaseTool], new_name: str) -> type[BaseTool]:
    """A subclass of ``tool`` that answers to ``new_name``, with the same description, arguments and execution.

    Tools are classes that carry their ``NAME``, so a new name needs a new class; it is made anew for each
    wrapper and remembers ``tool``'s original class, so views of one tool under one name count as one tool.
    """
    class_name = "".join(part.title() for part in new_name.split("_")) or "Tool"
    return type(class_name, (tool,), {"NAME": new_name, "__module__": tool.__module__,
                                      "__qualname__": f"{tool.__qualname__}[{new_name}]",
                                      "__renamed_from__": original_tool(tool)})


class RenamedToolSet(WrapperToolSet):
    """``wrapped`` with the tools named in ``new_names`` (``{old: new}``) under their new names, in the same
    order; an old name that ``wrapped`` lacks, or a new name another tool holds, is an error."""

    new_names: dict[str, str]

    def __init__(self, wrapped: ToolSet, new_names: Mapping[str, str], name: str | None = None):
        for old_name in new_names:
            wrapped.get(old_name)  # unknown names fail loudly, with close matches
        tools = tuple(renamed_tool(t, new_names[t.NAME]) if new_names.get(t.NAME, t.NAME) != t.NAME else t
                      for t in wrapped.tools)
        super().__init__(wrapped, name=name or f"{wrapped.name}-renamed", tools=tools)
        object.__setattr__(self, "new_names", dict(new_names))
