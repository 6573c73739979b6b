"""Figures as files: a path checked before any work, a figure written by its suffix, a figure as PNG bytes (what
the harness stores; the reports draw the figures)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from tool_selection.errors import ToolSelectionError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FORMATS", "check_figure_path", "figure_png", "save_figure"]

FORMATS = (".png", ".svg", ".pdf")


def check_figure_path(path: str | Path) -> Path:
    """``path`` as a figure file, refused before any work unless it ends in a format matplotlib writes here."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ToolSelectionError(f"Cannot write a figure as {path.name!r}: give a file name ending in "
                                 f"{', '.join(FORMATS)}.")
    return path


def save_figure(fig: Figure, path: str | Path) -> Path:
    """``fig`` written to ``path`` (PNG, SVG or PDF, by its suffix)."""
    path = check_figure_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def figure_png(fig: Figure) -> bytes:
    """``fig`` as PNG bytes (for embedding)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
