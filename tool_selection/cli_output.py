"""Output helpers shared by the command groups."""

from __future__ import annotations

import json

__all__ = ["print_json"]


def print_json(data: object) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
