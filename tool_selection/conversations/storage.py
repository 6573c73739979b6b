"""Configuration files in (YAML or JSON, bounded before parsing) and JSON records out (written atomically, so a
run killed mid-write leaves the previous version whole)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tool_selection.conversations.errors import ConversationConfigError
from tool_selection.parsing import nesting_depth

__all__ = ["MAX_CONFIG_CHARS", "read_config", "write_json"]

MAX_CONFIG_CHARS = 200_000
MAX_CONFIG_DEPTH = 32


def read_config(source: str | os.PathLike | dict[str, Any], section: str) -> dict[str, Any]:
    """The ``section`` of a configuration: a dict given as is, or a YAML/JSON file (JSON is YAML) holding
    ``{section: {...}}``."""
    where = f"{section} config"
    if isinstance(source, dict):
        data: Any = source
    else:
        path = Path(source)
        where = str(path)
        if not path.is_file():
            raise ConversationConfigError(f"{section.capitalize()} config {path} "
                                          f"{'is a directory' if path.is_dir() else 'does not exist'}; give the "
                                          f"path of a YAML or JSON file.")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise ConversationConfigError(f"{path}: not UTF-8 ({error.reason} at byte {error.start}).") from None
        if len(text) > MAX_CONFIG_CHARS or nesting_depth(text.replace("-", "[")) > MAX_CONFIG_DEPTH:
            raise ConversationConfigError(f"{path}: too large or nested too deep for a {section} config (at most "
                                          f"{MAX_CONFIG_CHARS} characters, {MAX_CONFIG_DEPTH} levels).")
        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as error:
            raise ConversationConfigError(f"{path}: neither valid YAML nor JSON ({error}).") from None
    if not isinstance(data, dict) or not isinstance(data.get(section), dict):
        raise ConversationConfigError(f"{where}: expected a top-level '{section}' section holding its settings "
                                      f"({section}: {{...}}).")
    return data[section]


def write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as indented JSON: to a temporary file beside ``path``, then renamed over it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, ensure_ascii=False, default=str)
            file.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
