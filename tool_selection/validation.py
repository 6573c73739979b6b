"""One readable message from a pydantic ``ValidationError``: every problem, each named by its field."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["validation_problems"]


def validation_problems(error: ValidationError, prefix: str = "") -> str:
    """``"PREFIXfield.path: message; ..."`` for every problem in ``error`` (``(section)`` for the whole model);
    a ``ValueError`` raised by a validator reads as its own message, without pydantic's ``Value error,``."""
    return "; ".join(
        f"{prefix}{'.'.join(str(p) for p in e['loc']) or '(section)'}: {e['msg'].removeprefix('Value error, ')}"
        for e in error.errors(include_url=False)
    )
