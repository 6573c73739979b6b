"""``ToolSet``: an ordered group of tool classes with unique names, and its combinators.

Each combinator returns a wrapper from its own module (``filtered.py``, ``renamed.py``, ``prefixed.py``,
``described.py``, ``merged.py``); they are imported where used because each wrapper is a ``ToolSet`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tool_selection.errors import DuplicateToolError, UnknownToolError
from tool_selection.registry import ToolRegistry
from tool_selection.tool import BaseTool

__all__ = ["ToolSet", "same_tool"]


def original_tool(tool: type[BaseTool]) -> type[BaseTool]:
    """The class a renamed tool was made from (see ``renamed_tool``), or ``tool`` itself."""
    return tool.__dict__.get("__renamed_from__", tool)


def same_tool(first: type[BaseTool], second: type[BaseTool]) -> bool:
    """Whether two tool classes are one tool: the same class, or renamed views of one class under one name
    (two ``prefixed("lab")`` calls give two views of ``Echo`` as ``lab_echo``, and they merge as one)."""
    return first is second or (first.NAME == second.NAME and original_tool(first) is original_tool(second))


@dataclass(frozen=True)
class ToolSet:
    """An ordered group of tool classes with unique names."""

    name: str
    tools: tuple[type[BaseTool], ...]
    description: str = ""

    def __post_init__(self) -> None:
        seen: dict[str, type[BaseTool]] = {}
        for tool in self.tools:
            if isinstance(tool, str):
                raise TypeError(
                    f"ToolSet {self.name!r} got the name string {tool!r}; tool sets hold tool classes. "
                    "Import the class and pass it, or look it up with default_registry().get(name)."
                )
            if not (isinstance(tool, type) and issubclass(tool, BaseTool)):
                raise TypeError(f"ToolSet members must be BaseTool subclasses, got {tool!r}")
            other = seen.setdefault(tool.NAME, tool)
            if not same_tool(other, tool):
                raise DuplicateToolError(
                    tool.NAME, f"{other.__module__}.{other.__qualname__}",
                    f"{tool.__module__}.{tool.__qualname__}", where=f"tool set {self.name!r}",
                )
        object.__setattr__(self, "tools", tuple(seen.values()))

    # ----------------------------------------------------------------- views
    def names(self) -> list[str]:
        return [t.NAME for t in self.tools]

    def get(self, name: str) -> type[BaseTool]:
        for tool in self.tools:
            if tool.NAME == name:
                return tool
        raise UnknownToolError(name, self.names(), where=f"tool set {self.name!r}")

    def registry(self) -> ToolRegistry:
        """An isolated registry with exactly this set's tools (what a selector chooses from)."""
        return ToolRegistry(self.name, self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self):
        return iter(self.tools)

    def __contains__(self, item: object) -> bool:
        return item in self.tools or item in self.names()

    # ----------------------------------------------------------- composition
    def filtered(self, keep: Callable[[type[BaseTool]], bool] | Iterable[type[BaseTool]],
                 name: str | None = None) -> ToolSet:
        """A set with the tools for which ``keep(tool)`` is true, or with only the given tool classes."""
        from tool_selection.toolset.filtered import FilteredToolSet

        return FilteredToolSet(self, keep, name=name)

    def without(self, *tools: type[BaseTool], name: str | None = None) -> ToolSet:
        """A set without the given tool classes."""
        return self.filtered(lambda t: not any(same_tool(t, dropped) for dropped in tools),
                             name=name or f"{self.name}-without")

    def renamed(self, new_names: Mapping[str, str], name: str | None = None) -> ToolSet:
        """A set whose tools named in ``new_names`` (``{old: new}``) answer to their new names; the originals
        are untouched."""
        from tool_selection.toolset.renamed import RenamedToolSet

        return RenamedToolSet(self, new_names, name=name)

    def prefixed(self, prefix: str, name: str | None = None) -> ToolSet:
        """A set whose tools are renamed ``{prefix}_{NAME}`` (the originals are untouched)."""
        from tool_selection.toolset.prefixed import PrefixedToolSet

        return PrefixedToolSet(self, prefix, name=name)

    def described(self, descriptions: Mapping[str, str], name: str | None = None) -> ToolSet:
        """A set whose tools named in ``descriptions`` (``{name: description}``) show those descriptions to
        models (the originals are untouched)."""
        from tool_selection.toolset.described import DescribedToolSet

        return DescribedToolSet(self, descriptions, name=name)

    def merged(self, *others: ToolSet, name: str | None = None) -> ToolSet:
        """One set with every tool of this and the other sets; clashing names raise ``DuplicateToolError``."""
        from tool_selection.toolset.merged import MergedToolSet

        return MergedToolSet(self, *others, name=name)

    def __add__(self, other: ToolSet) -> ToolSet:
        return self.merged(other)
