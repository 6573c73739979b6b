"""``MergedToolSet``: every tool of several sets in one; a name two different tools hold is an error."""

from __future__ import annotations

from tool_selection.toolset.base import ToolSet

__all__ = ["MergedToolSet"]


class MergedToolSet(ToolSet):
    """The tools of ``tool_sets`` in order, named ``a+b+...`` unless told; the same tool in two sets is kept
    once, and two tools with one name raise ``DuplicateToolError``."""

    tool_sets: tuple[ToolSet, ...]

    def __init__(self, *tool_sets: ToolSet, name: str | None = None):
        if not tool_sets or not all(isinstance(s, ToolSet) for s in tool_sets):
            raise TypeError(f"MergedToolSet merges one or more ToolSets, got {tool_sets!r}")
        super().__init__(name=name or "+".join(s.name for s in tool_sets),
                         tools=tuple(t for s in tool_sets for t in s.tools))
        object.__setattr__(self, "tool_sets", tool_sets)
