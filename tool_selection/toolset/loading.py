"""Tool sets by name: the ``TOOL_SETS`` registry, ``load_tool_set`` and ``ToolSetConfig`` (a set in a config file)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tool_selection.named_registry import Registry
from tool_selection.toolset.base import ToolSet

__all__ = ["ENTRY_POINT_GROUP", "TOOL_SETS", "ToolSetConfig", "available_tool_sets", "load_tool_set"]

ENTRY_POINT_GROUP = "tool_selection.tool_sets"  # built-in sets register here too (pyproject.toml)


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
