"""``FilteredToolSet``: the tools of a set that a predicate keeps, or that are named by class."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tool_selection.errors import UnknownToolError
from tool_selection.tool import BaseTool
from tool_selection.toolset.base import ToolSet, same_tool
from tool_selection.toolset.wrapper import WrapperToolSet

__all__ = ["FilteredToolSet"]


class FilteredToolSet(WrapperToolSet):
    """``wrapped``'s tools for which ``keep(tool)`` is true, or those among the tool classes ``keep`` lists
    (each must be in ``wrapped``), in ``wrapped``'s order."""

    keep: Callable[[type[BaseTool]], bool] | tuple[type[BaseTool], ...]

    def __init__(self, wrapped: ToolSet, keep: Callable[[type[BaseTool]], bool] | Iterable[type[BaseTool]],
                 name: str | None = None):
        if callable(keep):
            tools = tuple(t for t in wrapped.tools if keep(t))
        else:
            keep = tuple(keep)
            missing = [w for w in keep if not any(same_tool(t, w) for t in wrapped.tools)]
            if missing:
                raise UnknownToolError(getattr(missing[0], "NAME", str(missing[0])), wrapped.names(),
                                       where=f"tool set {wrapped.name!r}")
            tools = tuple(t for t in wrapped.tools if any(same_tool(t, w) for w in keep))
        super().__init__(wrapped, name=name or f"{wrapped.name}-filtered", tools=tools)
        object.__setattr__(self, "keep", keep)
