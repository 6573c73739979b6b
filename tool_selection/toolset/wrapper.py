"""``WrapperToolSet``: the base of the combinators, a tool set derived from one other set that it holds."""

from __future__ import annotations

from typing import Any

from tool_selection.tool import BaseTool
from tool_selection.toolset.base import ToolSet

__all__ = ["WrapperToolSet"]


class WrapperToolSet(ToolSet):
    """A tool set computed from ``wrapped`` when it is built; it keeps ``wrapped``'s description."""

    wrapped: ToolSet

    def __new__(cls, *args: Any, **kwargs: Any):
        wrapped = args[0] if args else kwargs.get("wrapped")  # neither when copy and pickle rebuild one
        if (args or "wrapped" in kwargs) and not isinstance(wrapped, ToolSet):  # before a subclass reads it
            raise TypeError(f"{cls.__name__} wraps a ToolSet, got {wrapped!r}")
        return super().__new__(cls)

    def __init__(self, wrapped: ToolSet, *, name: str, tools: tuple[type[BaseTool], ...]):
        super().__init__(name=name, tools=tools, description=wrapped.description)
        object.__setattr__(self, "wrapped", wrapped)
