"""One shape for every tool failure a model sees: ``{"ok": False, "error", "message", "suggestions", ...}``.

``error`` is a short machine-readable code (``unknown_symbol``, ``outside_root``, ``timeout``), ``message`` a
sentence a model or a person can act on, ``suggestions`` the closest valid values when there are any. Extra
keyword arguments add details (a limit that was hit, the path that was refused).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["is_failure", "tool_failure"]


def tool_failure(error: str, message: str, *, suggestions: Iterable[str] = (), **details: Any) -> dict[str, Any]:
    """The structured result of a tool that could not do what it was asked."""
    return {"ok": False, "error": error, "message": message, "suggestions": list(suggestions), **details}


def is_failure(result: Any) -> bool:
    """Whether a tool's result is a structured failure."""
    return isinstance(result, dict) and result.get("ok") is False
