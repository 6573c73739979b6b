"""Configuration files in (YAML or JSON, read strictly by ``strict_files.read_yaml``) and JSON records out (written
atomically, so a run killed mid-write leaves the previous version whole)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tool_selection.conversations.errors import ConversationConfigError
from tool_selection.strict_files import read_yaml

__all__ = ["MAX_CONFIG_BYTES", "read_config", "write_json"]

MAX_CONFIG_BYTES = 200_000
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
        data = read_yaml(path, what=f"{section} config", max_bytes=MAX_CONFIG_BYTES, max_depth=MAX_CONFIG_DEPTH,
                         fix=f"Write it as YAML or JSON holding {section}: {{...}} (examples/discussion.yaml).")
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
