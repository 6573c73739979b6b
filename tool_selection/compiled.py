"""Compiled selectors on disk: the DSPy program state plus a manifest of what it was compiled against.

    selector-dir/
      program.json    DSPy state (instructions, demonstrations)
      manifest.json   tools (names and schema hashes), model, DSPy version, optimizer, scores, creation time

Loading checks the manifest's tools against the running registry and refuses, naming what changed, unless the
caller passes ``allow_tool_changes=True``.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel, Field

from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry

__all__ = ["Manifest", "ToolsChangedError", "load_compiled", "save_compiled", "tool_fingerprint"]

PROGRAM_FILE = "program.json"
MANIFEST_FILE = "manifest.json"


class ToolsChangedError(ToolSelectionError):
    """The tools a compiled selector was optimized for differ from the running registry."""


class Manifest(BaseModel):
    tool_set: str | None = Field(description="Tool set name, or None when tools came per case (e.g. BFCL).")
    tools: dict[str, str] = Field(default_factory=dict, description="Tool name -> schema hash.")
    model: str
    dspy_version: str = dspy.__version__
    optimizer: str = "none"
    optimizer_args: dict[str, Any] = Field(default_factory=dict)
    teacher: str | None = None
    suite: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    created_at: str = Field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))


def tool_fingerprint(registry: ToolRegistry) -> dict[str, str]:
    return {tool.NAME: tool.schema_hash() for tool in registry}


def save_compiled(program: dspy.Module, directory: str | Path, manifest: Manifest) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    program.save(str(directory / PROGRAM_FILE))
    (directory / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    return directory


def read_manifest(directory: str | Path) -> Manifest:
    path = Path(directory) / MANIFEST_FILE
    if not path.exists():
        raise ToolSelectionError(f"{directory} is not a compiled selector: {MANIFEST_FILE} is missing.")
    return Manifest.model_validate_json(path.read_text(encoding="utf-8"))


def check_tools(manifest: Manifest, registry: ToolRegistry) -> list[str]:
    """What changed between the manifest's tools and ``registry``: one line per added/removed/altered tool."""
    current = tool_fingerprint(registry)
    changes = [f"removed: {n}" for n in sorted(set(manifest.tools) - set(current))]
    changes += [f"added: {n}" for n in sorted(set(current) - set(manifest.tools))]
    changes += [f"schema changed: {n}" for n in sorted(set(current) & set(manifest.tools))
                if current[n] != manifest.tools[n]]
    return changes


def load_compiled(program: dspy.Module, directory: str | Path, registry: ToolRegistry | None,
                  *, allow_tool_changes: bool = False) -> Manifest:
    """Load state into ``program`` after checking the tools; returns the manifest."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    if registry is not None and manifest.tools:
        changes = check_tools(manifest, registry)
        if changes and not allow_tool_changes:
            raise ToolsChangedError(
                f"The tools differ from those {directory} was compiled for ({manifest.tool_set}): "
                + "; ".join(changes)
                + ". Re-optimize for the current tools, or load with allow_tool_changes=True "
                "(--allow-tool-changes) to use it anyway."
            )
    with open(directory / PROGRAM_FILE, encoding="utf-8") as handle:
        json.load(handle)  # a clear JSON error before DSPy's own loader
    program.load(str(directory / PROGRAM_FILE))
    return manifest
