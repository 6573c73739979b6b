"""Names of things on disk and in MLflow, made from free text (suite names, model specs, strategies)."""

from __future__ import annotations

import re

__all__ = ["slug"]


def slug(text: str) -> str:
    """``text`` as a file-name-safe slug: runs of anything but letters, digits and dots become ``-`` (at most 60
    characters), e.g. ``local:qwen2.5-coder-0.5b`` -> ``local-qwen2.5-coder-0.5b``."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:60]
