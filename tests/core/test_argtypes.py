"""Argument types tools share: ISO dates only, and an end that may not come before its start."""

import datetime as dt

import pytest
from pydantic import BaseModel, ValidationError

from tool_selection.argtypes import IsoDate, end_not_before_start


class Period(BaseModel):
    start_date: IsoDate
    end_date: IsoDate | None = None
    _ordered = end_not_before_start()


def test_iso_dates_and_date_objects_are_accepted():
    assert Period(start_date="2025-03-01").start_date == dt.date(2025, 3, 1)
    assert Period(start_date=" 2025-03-01 ").start_date == dt.date(2025, 3, 1)
    assert Period(start_date=dt.date(2025, 3, 1), end_date="2025-03-31").end_date == dt.date(2025, 3, 31)


@pytest.mark.parametrize("value", ["03/01/2025", "2025-03-01T10:00", "March 1", 20250301,
                                   dt.datetime(2025, 3, 1, 10, 0)])
def test_anything_else_is_refused_with_the_expected_form(value):
    with pytest.raises(ValidationError, match="expected an ISO date, YYYY-MM-DD"):
        Period(start_date=value)


def test_the_end_may_not_come_before_the_start():
    with pytest.raises(ValidationError, match="end_date must not be before start_date"):
        Period(start_date="2025-03-10", end_date="2025-03-01")
    assert Period(start_date="2025-03-10", end_date="2025-03-10").end_date == dt.date(2025, 3, 10)
