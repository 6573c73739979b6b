"""Tool sets: named, composable groups of tool classes.

A ``ToolSet`` holds class references, never name strings, so a renamed tool cannot leave a stale entry behind.
Combinators return small wrappers that hold the set they wrap, one module each: ``FilteredToolSet``
(``filtered``, ``without``), ``RenamedToolSet`` (``renamed``), ``PrefixedToolSet`` (``prefixed``),
``DescribedToolSet`` (``described``: other descriptions shown) and ``MergedToolSet`` (``merged``, ``+``). Domain sets live in the ``tool_sets`` package (each module exposes
``TOOL_SET``); third-party packages can add more through the ``tool_selection.tool_sets`` entry-point group.
"""

from tool_selection.toolset.base import ToolSet, same_tool
from tool_selection.toolset.described import DescribedToolSet, described_tool
from tool_selection.toolset.filtered import FilteredToolSet
from tool_selection.toolset.loading import (
    ENTRY_POINT_GROUP,
    TOOL_SETS,
    ToolSetConfig,
    available_tool_sets,
    load_tool_set,
)
from tool_selection.toolset.merged import MergedToolSet
from tool_selection.toolset.prefixed import PrefixedToolSet
from tool_selection.toolset.renamed import RenamedToolSet, renamed_tool
from tool_selection.toolset.wrapper import WrapperToolSet

__all__ = [
    "ENTRY_POINT_GROUP",
    "TOOL_SETS",
    "DescribedToolSet",
    "FilteredToolSet",
    "MergedToolSet",
    "PrefixedToolSet",
    "RenamedToolSet",
    "ToolSet",
    "ToolSetConfig",
    "WrapperToolSet",
    "available_tool_sets",
    "described_tool",
    "load_tool_set",
    "renamed_tool",
    "same_tool",
]
