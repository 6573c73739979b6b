"""Tool descriptions a selector shows in place of the tools' own: ``DescriptionOverrides``.

``toolsel optimize --target descriptions`` rewrites the descriptions a selector shows the model; the tools
themselves are untouched. A compiled selector stores the rewritten texts (``manifest.descriptions``) with the sha256
of the catalog's original ``{name: description}`` mapping they were written for
(``manifest.original_descriptions_sha256``). A selector with overrides (``MultiToolSelector.described``) shows them
in every catalog it is given, after checking that the catalog's own descriptions are those originals: rewrites made
for other descriptions are refused, naming the fix, unless ``allow_tool_changes``.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tool_selection.errors import ToolsChangedError, ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.tool import BaseTool
from tool_selection.toolset.described import described_tool

__all__ = ["DescriptionOverrides", "descriptions_of", "descriptions_sha256"]


def descriptions_of(registry: ToolRegistry) -> dict[str, str]:
    """Each tool's name and the description it shows, in name order."""
    return {tool.NAME: tool.description for tool in registry}


def descriptions_sha256(descriptions: Mapping[str, str]) -> str:
    """The sha256 of a ``{name: description}`` mapping, over its canonical JSON."""
    canonical = json.dumps(dict(descriptions), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class DescriptionOverrides:
    """``descriptions`` (``{name: text}``) shown in place of the tools' own in a catalog whose original
    ``{name: description}`` mapping hashes to ``original_sha256``; ``allow_changes``: show them in another catalog
    too (the tools it shares by name). ``source`` names where they came from, in errors."""

    descriptions: dict[str, str]
    original_sha256: str
    allow_changes: bool = False
    source: str = "the selector"
    _shown: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary, init=False, repr=False,
                                              compare=False)  # catalog -> the catalog as shown
    _classes: dict = field(default_factory=dict, init=False, repr=False,
                           compare=False)  # tool class -> the class as shown (a subclass: it holds its tool anyway)

    @classmethod
    def for_registry(cls, registry: ToolRegistry, descriptions: Mapping[str, str]) -> DescriptionOverrides:
        """Overrides for ``registry``: the texts of ``descriptions`` that differ from the tools' own."""
        own = descriptions_of(registry)
        unknown = sorted(set(descriptions) - set(own))
        if unknown:
            raise ToolSelectionError(f"Descriptions for tools that {registry.name!r} lacks: {', '.join(unknown)}.")
        return cls({name: text for name, text in descriptions.items() if own[name] != text},
                   descriptions_sha256(own))

    def problem(self, registry: ToolRegistry) -> str | None:
        """Why these rewrites do not belong to ``registry`` (its descriptions are not the originals), or None."""
        current = descriptions_sha256(descriptions_of(registry))
        if current == self.original_sha256:
            return None
        missing = sorted(set(self.descriptions) - set(registry.names()))
        detail = f"it lacks {', '.join(missing)}" if missing else "its tools or their own descriptions changed"
        return (f"The tool descriptions {self.source} rewrites were optimized for other tools than "
                f"{registry.name!r} holds ({detail}; sha256 of its name -> description mapping {current[:12]}, "
                f"{self.original_sha256[:12]} recorded)")

    def check(self, registry: ToolRegistry) -> None:
        """Raise ``ToolsChangedError`` if the rewrites do not belong to ``registry``, unless ``allow_changes``."""
        problem = None if self.allow_changes else self.problem(registry)
        if problem:
            raise ToolsChangedError(f"{problem}. Optimize the descriptions again for these tools (toolsel optimize "
                                    "--target descriptions), or load with allow_tool_changes=True "
                                    "(--allow-tool-changes) to show them anyway.")

    def apply(self, registry: ToolRegistry) -> ToolRegistry:
        """``registry`` as the selector shows it: its tools with the rewritten descriptions (checked first)."""
        revision, shown = self._shown.get(registry, (None, None))
        if shown is None or revision is not registry.revision:  # new, or a tool registered or unregistered since
            self.check(registry)
            shown = ToolRegistry(registry.name, [self._shown_class(tool) for tool in registry])
            self._shown[registry] = (registry.revision, shown)
        return shown

    def _shown_class(self, tool: type[BaseTool]) -> type[BaseTool]:
        """``tool`` with its rewritten description, one class per tool: another registry of the same tools (a
        ``ToolSet`` passed with each call) is shown with the same classes, so a retriever fitted to them is kept."""
        if tool.NAME not in self.descriptions:
            return tool
        if tool not in self._classes:
            self._classes[tool] = described_tool(tool, self.descriptions[tool.NAME])
        return self._classes[tool]

    def __getstate__(self) -> dict[str, Any]:  # copies and pickles leave the caches behind
        return {name: value for name, value in self.__dict__.items() if name not in ("_shown", "_classes")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _shown=weakref.WeakKeyDictionary(), _classes={})
