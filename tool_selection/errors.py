"""The toolkit's error types.

Two kinds, as in the tool model itself: a developer's mistake (a bad tool class, a duplicate name, a bad
config) raises at once with a fix in the message; a model's mistake (an unknown tool, a bad argument) is
raised by the low-level API but recorded and scored by the selector and the harness.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ArgumentProblem",
    "DuplicateToolError",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolSelectionError",
    "ToolsChangedError",
    "UnknownToolError",
    "close_matches",
]


class ToolSelectionError(Exception):
    """Base class of every error this toolkit raises on purpose."""


class ToolsChangedError(ToolSelectionError):
    """The tools a compiled selector (or its rewritten descriptions) was optimized for differ from the running
    registry."""


class ToolDefinitionError(ToolSelectionError, TypeError):
    """A tool class is malformed. Lists every problem found, not just the first."""

    def __init__(self, tool: str, problems: list[str]):
        self.tool = tool
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"Tool class {tool} is invalid ({len(problems)} problem(s)):\n{lines}")


class DuplicateToolError(ToolSelectionError, ValueError):
    """Two tools share a name in one registry or tool set."""

    def __init__(self, name: str, existing: str, new: str, where: str = "registry"):
        self.name = name
        super().__init__(
            f"Tool name {name!r} in {where} is already used by {existing}; {new} cannot take it too. "
            f"Rename one of them (set a different NAME), use ToolSet.prefixed() to namespace a set, "
            f"or register with replace=True if {new} is meant to supersede {existing}."
        )


def close_matches(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Names in ``candidates`` that look like ``name`` (typos, case, prefixes), best first."""
    candidates = list(candidates)
    lowered = {c.lower(): c for c in candidates}
    matches = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.6)
    found = [lowered[m] for m in matches]
    if not found:
        found = [c for c in candidates if name.lower() in c.lower() or c.lower() in name.lower()][:n]
    return found


class UnknownToolError(ToolSelectionError, KeyError):
    """A tool name is not registered."""

    def __init__(self, name: str, known: Iterable[str], where: str = "the registry"):
        known = sorted(known)
        self.name = name
        self.suggestions = close_matches(name, known)
        if self.suggestions:
            hint = "Did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        elif known:
            hint = f"Known tools: {', '.join(known[:20])}{' ...' if len(known) > 20 else ''}."
        else:
            hint = "No tools are registered; import a tool set (for example tool_sets.treasure_hunt) first."
        self.message = f"Unknown tool {name!r} in {where}. {hint}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


@dataclass(frozen=True)
class ArgumentProblem:
    """One bad field in a tool call: where it is and why it was refused."""

    field: str
    message: str
    value: object = None

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class ToolArgumentError(ToolSelectionError, ValueError):
    """Arguments for a tool failed validation. ``problems`` names each bad field and why."""

    def __init__(self, tool: str, problems: list[ArgumentProblem]):
        self.tool = tool
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"Invalid arguments for tool {tool!r} ({len(problems)} problem(s)):\n{lines}")

    def to_dict(self) -> dict:
        return {
            "error": "invalid_arguments",
            "tool": self.tool,
            "problems": [{"field": p.field, "message": p.message} for p in self.problems],
        }
