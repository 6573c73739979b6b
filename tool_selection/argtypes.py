"""Argument types that tools share."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

from pydantic import BeforeValidator

__all__ = ["IsoDate"]


def _iso_date_only(value: Any) -> Any:
    """Accept dates and 'YYYY-MM-DD' strings only (no timestamps, datetimes or other formats)."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        return value.strip()
    raise ValueError("expected an ISO date, YYYY-MM-DD")


IsoDate = Annotated[dt.date, BeforeValidator(_iso_date_only)]
"""A calendar date given as ``YYYY-MM-DD`` (JSON Schema ``format: date``)."""
