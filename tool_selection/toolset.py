"""Tool sets: named, composable groups of tool classes.

A ``ToolSet`` holds class references, never name strings, so a renamed tool cannot leave a stale entry behind.
Domain sets live in the ``tool_sets`` package (each module exposes ``TOOL_SET``); third-party packages can add
more through the ``tool_selection.tool_sets`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from tool_selection.errors import DuplicateToolError, UnknownToolError
from tool_selection.named_registry import Registry
from tool_selection.registry import ToolRegistry
from tool_selection.tool import BaseTool

__all__ = ["TOOL_SETS", "ToolSet", "ToolSetConfig", "available_tool_sets", "load_tool_set"]

ENTRY_POINT_GROUP = "tool_selection.tool_sets"  # built-in sets register here too (pyproject.toml)


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
            other = seen.get(tool.NAME)
            if other is not None and other is not tool:
                raise DuplicateToolError(
                    tool.NAME, f"{other.__module__}.{other.__qualname__}",
                    f"{tool.__module__}.{tool.__qualname__}", where=f"tool set {self.name!r}",
                )
            seen[tool.NAME] = tool
        object.__setattr__(self, "tools", tuple(dict.fromkeys(self.tools)))

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
    def filtered(self, keep: Callable[[type[BaseTool]], bool] | Iterable[type[BaseTool]], name: str | None = None) -> ToolSet:
        """A set with the tools for which ``keep(tool)`` is true, or with only the given tool classes."""
        if callable(keep):
            tools = tuple(t for t in self.tools if keep(t))
        else:
            wanted = tuple(keep)
            missing = [t for t in wanted if t not in self.tools]
            if missing:
                raise UnknownToolError(getattr(missing[0], "NAME", str(missing[0])), self.names(),
                                       where=f"tool set {self.name!r}")
            tools = tuple(t for t in self.tools if t in wanted)
        return ToolSet(name=name or f"{self.name}-filtered", tools=tools, description=self.description)

    def without(self, *tools: type[BaseTool], name: str | None = None) -> ToolSet:
        return self.filtered(lambda t: t not in tools, name=name or f"{self.name}-without")

    def prefixed(self, prefix: str, name: str | None = None) -> ToolSet:
        """A set whose tools are renamed ``{prefix}_{NAME}`` (subclasses; the originals are untouched)."""
        renamed = tuple(_renamed(t, f"{prefix}_{t.NAME}") for t in self.tools)
        return ToolSet(name=name or f"{prefix}_{self.name}", tools=renamed, description=self.description)

    def merged(self, *others: ToolSet, name: str | None = None) -> ToolSet:
        """One set with every tool of this and the other sets; clashing names raise ``DuplicateToolError``."""
        tools = self.tools + tuple(t for other in others for t in other.tools)
        merged_name = name or "+".join([self.name, *(o.name for o in others)])
        return ToolSet(name=merged_name, tools=tools)

    def __add__(self, other: ToolSet) -> ToolSet:
        return self.merged(other)


_RENAMED: dict[tuple[type[BaseTool], str], type[BaseTool]] = {}


def _renamed(tool: type[BaseTool], new_name: str) -> type[BaseTool]:
    key = (tool, new_name)
    if key not in _RENAMED:
        class_name = "".join(part.title() for part in new_name.split("_")) or "Tool"
        _RENAMED[key] = type(class_name, (tool,), {"NAME": new_name, "__module__": tool.__module__,
                                                   "__qualname__": f"{tool.__qualname__}[{new_name}]"})
    return _RENAMED[key]


# --------------------------------------------------------------------------- loading by name
def _check_tool_set(entry: object) -> None:
    if not isinstance(entry, ToolSet):
        raise TypeError(f"{entry!r} is not a ToolSet; define TOOL_SET = ToolSet(name=..., tools=[...]) in the module, "
                        "or point the entry point at the right attribute ('module:ATTRIBUTE')")


TOOL_SETS: Registry[ToolSet] = Registry("tool set", group=ENTRY_POINT_GROUP, check=_check_tool_set,
                                        hint=f"Third-party sets register under the {ENTRY_POINT_GROUP!r} "
                                             "entry-point group.")
"""The tool sets by name: every set of the ``tool_selection.tool_sets`` entry-point group (the built-in ones
included, ``pyproject.toml``), and those registered with ``TOOL_SETS.register``; a set's module is imported when
the set is first asked for."""


def available_tool_sets() -> list[str]:
    """Names that ``load_tool_set`` accepts, sorted."""
    return sorted(TOOL_SETS.names())


def load_tool_set(name: str) -> ToolSet:
    """The tool set called ``name``; importing its module registers its tools in the default registry."""
    return TOOL_SETS.get(name)


class ToolSetConfig(BaseModel):
    """A tool set described in a config file: named sets to merge, then tools to keep or drop."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    sets: list[str] = Field(min_length=1, description="Tool sets to merge, by name (see available_tool_sets()).")
    include: list[str] | None = Field(default=None, description="Keep only these tool names.")
    exclude: list[str] = Field(default_factory=list, description="Drop these tool names.")
    prefix: str | None = Field(default=None, description="Rename every tool to PREFIX_NAME.")

    def build(self) -> ToolSet:
        tool_set = load_tool_set(self.sets[0])
        for other in self.sets[1:]:
            tool_set = tool_set.merged(load_tool_set(other))
        for tool_name in [*(self.include or []), *self.exclude]:
            tool_set.get(tool_name)  # unknown names fail loudly, with close matches
        if self.include is not None:
            tool_set = tool_set.filtered(lambda t: t.NAME in self.include)
        if self.exclude:
            tool_set = tool_set.filtered(lambda t: t.NAME not in self.exclude)
        if self.prefix:
            tool_set = tool_set.prefixed(self.prefix)
        name = self.name or tool_set.name
        return ToolSet(name=name, tools=tool_set.tools, description=tool_set.description)
