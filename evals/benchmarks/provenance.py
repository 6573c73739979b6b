"""The provenance table of a generated results page: where each kept run came from.

A results folder holds ``provenance.json``, a list of ``{what, kept, command, commit, machine, date, notes}``, one
entry per run, written when the run is kept.
"""

from __future__ import annotations

import json
from pathlib import Path

from tool_selection.conversations.summary import format_table

__all__ = ["PROVENANCE_FIELDS", "provenance_table"]

PROVENANCE_FIELDS = ("what", "kept", "command", "commit", "machine", "date", "notes")


def provenance_table(path: Path) -> str:
    """The Markdown table of ``path``'s entries; a malformed file is refused, naming every entry's problem."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        entries, problems = [], ["not a list"]
    else:
        problems = [f"entry {i}: missing {', '.join(sorted(set(PROVENANCE_FIELDS) - set(e)))}"
                    if isinstance(e, dict) else f"entry {i}: not an object" for i, e in enumerate(entries)
                    if not isinstance(e, dict) or set(PROVENANCE_FIELDS) - set(e)]
    if problems:
        raise ValueError(f"{path} must be a list of objects with the fields {', '.join(PROVENANCE_FIELDS)}: "
                         f"{'; '.join(problems)}.")
    return format_table([{k: f"`{e[k]}`" if k in ("kept", "command", "commit") else e[k] for k in PROVENANCE_FIELDS}
                         for e in entries], PROVENANCE_FIELDS)
