"""``PrefixedToolSet``: a set whose every tool is renamed ``{prefix}_{NAME}``, to namespace it."""

from __future__ import annotations

from tool_selection.toolset.base import ToolSet
from tool_selection.toolset.renamed import RenamedToolSet

__all__ = ["PrefixedToolSet"]


class PrefixedToolSet(RenamedToolSet):
    """``wrapped`` with every tool renamed ``{prefix}_{NAME}``; named ``{prefix}_{wrapped.name}`` unless told."""

    prefix: str

    def __init__(self, wrapped: ToolSet, prefix: str, name: str | None = None):
        super().__init__(wrapped, {t.NAME: f"{prefix}_{t.NAME}" for t in wrapped.tools},
                         name=name or f"{prefix}_{wrapped.name}")
        object.__setattr__(self, "prefix", prefix)
