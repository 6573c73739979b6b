"""Argument types that tools share."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationInfo, field_validator

__all__ = ["IsoDate", "end_not_before_start"]


def _iso_date_only(value: Any) -> Any:
    """Accept dates and 'YYYY-MM-DD' strings only (no timestamps, datetimes or other formats)."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        return value.strip()
    raise ValueError("expected an ISO date, YYYY-MM-DD")


IsoDate = Annotated[dt.date, BeforeValidator(_iso_date_only)]
"""A calendar date given as ``YYYY-MM-DD`` (JSON Schema ``format: date``)."""


def end_not_before_start(start: str = "start_date", end: str = "end_date") -> Any:
    """A validator for an ``Arguments`` model: ``end`` may not come before ``start`` (when both are given).

        class Arguments(BaseModel):
            start_date: IsoDate = Field(...)
            end_date: IsoDate | None = Field(...)
            _ordered = end_not_before_start()
    """

    def check(cls: type, value: Any, info: ValidationInfo) -> Any:
        first = info.data.get(start)
        if value is not None and first is not None and value < first:
            raise ValueError(f"{end} must not be before {start}")
        return value

    return field_validator(end)(check)
