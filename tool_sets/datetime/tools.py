"""The date and time tools: the current time in a zone, conversion between zones, adding a duration, and the
time between two moments.

Date-times are given as local wall-clock times (``YYYY-MM-DDTHH:MM[:SS]``, or a bare date for midnight) with the
zone as a separate IANA name; results carry their UTC offset. Anything the tools cannot answer is a
``tool_failure``: an unknown zone (with close matches), a local time skipped by a daylight-saving change, or a
result outside years 1-9999.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator, Field, WithJsonSchema

from tool_selection import BaseTool, register_tool
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets.datetime.zones import WEEKDAYS, DateTimeProblem, describe, localize, resolve_zone

__all__ = ["TOOLS", "AddDuration", "ConvertTimezone", "DatetimeDifference", "GetCurrentTime", "LocalDateTime",
           "TimeZoneName"]

LOCAL_DATETIME_PATTERN = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?)?$"


def _local_datetime(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value
    if isinstance(value, str) and re.fullmatch(LOCAL_DATETIME_PATTERN, value.strip()):
        return dt.datetime.fromisoformat(value.strip())  # an impossible date (2025-02-30) fails here
    raise ValueError("expected a local date-time YYYY-MM-DDTHH:MM[:SS] or a date YYYY-MM-DD, without a UTC offset "
                     "(give the zone separately)")


LocalDateTime = Annotated[dt.datetime, BeforeValidator(_local_datetime),
                          WithJsonSchema({"type": "string", "pattern": LOCAL_DATETIME_PATTERN, "maxLength": 19})]
"""A wall-clock date-time without offset, e.g. ``2025-03-14T09:30``; a bare date means midnight."""

TimeZoneName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_+\-/ ]+$")]
"""An IANA time-zone name such as ``Europe/Paris``."""

_ZONE_HELP = "IANA time zone, e.g. 'Europe/Paris', 'America/New_York' or 'UTC'."


def _problems_as_failures(execute: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Return a ``DateTimeProblem`` raised by ``execute`` as a ``tool_failure`` result."""

    @functools.wraps(execute)
    def wrapper(self: BaseTool, **arguments: Any) -> dict[str, Any]:
        try:
            return execute(self, **arguments)
        except DateTimeProblem as problem:
            return tool_failure(problem.code, problem.message, suggestions=problem.suggestions, **problem.details)

    return wrapper


def _out_of_range() -> DateTimeProblem:
    return DateTimeProblem("out_of_range", "The result falls outside the supported years 1 to 9999.")


@register_tool
class GetCurrentTime(BaseTool):
    NAME = "get_current_time"
    description = ("The current date and time in a time zone, with its UTC offset, abbreviation and weekday. "
                   "To express another moment in a different zone use convert_timezone.")
    category = "datetime"

    now: AwareDatetime | None = Field(default=None, exclude=True,
                                      description="A fixed instant reported instead of the clock (tests, replays).")

    class Arguments(StrictArguments):
        timezone: TimeZoneName = Field(default="UTC", description=_ZONE_HELP)

    @_problems_as_failures
    def execute(self, timezone: str) -> dict[str, Any]:
        zone = resolve_zone(timezone)
        local = (self.now or dt.datetime.now(dt.UTC)).astimezone(zone)
        return {"ok": True, **describe(local), "date": local.date().isoformat(),
                "time": local.strftime("%H:%M:%S"), "is_dst": bool(local.dst()), "unix_time": int(local.timestamp())}


@register_tool
class ConvertTimezone(BaseTool):
    NAME = "convert_timezone"
    description = ("Convert a local date and time from one time zone to another (daylight saving included), "
                   "e.g. 2025-06-01T09:00 in America/New_York is 15:00 in Europe/Paris.")
    category = "datetime"

    class Arguments(StrictArguments):
        datetime: LocalDateTime = Field(description="The local time in from_timezone, YYYY-MM-DDTHH:MM.")
        from_timezone: TimeZoneName = Field(description=f"Zone the time is given in; {_ZONE_HELP}")
        to_timezone: TimeZoneName = Field(description=f"Zone to convert to; {_ZONE_HELP}")

    @_problems_as_failures
    def execute(self, datetime: dt.datetime, from_timezone: str, to_timezone: str) -> dict[str, Any]:
        source, target = resolve_zone(from_timezone), resolve_zone(to_timezone)
        moment, ambiguous = localize(datetime, source)
        try:
            converted = moment.astimezone(target)
        except OverflowError:
            raise _out_of_range() from None
        result = {"ok": True, "from": describe(moment), "to": describe(converted), "ambiguous": ambiguous}
        if ambiguous:
            result["note"] = (f"{datetime.isoformat(timespec='minutes')} happens twice in {source.key} (clocks go "
                              "back); the earlier occurrence was used.")
        return result


@register_tool
class AddDuration(BaseTool):
    NAME = "add_duration"
    description = ("Add (or, with negative values, subtract) days, hours and minutes to a date and time, e.g. "
                   "'what date is 90 days after 2025-01-15'. Without a time zone this is calendar arithmetic; with "
                   "one, the duration is elapsed time across daylight-saving changes.")
    category = "datetime"

    class Arguments(StrictArguments):
        datetime: LocalDateTime = Field(description="The starting local time, YYYY-MM-DDTHH:MM or YYYY-MM-DD.")
        days: int = Field(default=0, ge=-36_500, le=36_500, description="Days to add (negative to subtract).")
        hours: int = Field(default=0, ge=-100_000, le=100_000, description="Hours to add (negative to subtract).")
        minutes: int = Field(default=0, ge=-1_000_000, le=1_000_000,
                             description="Minutes to add (negative to subtract).")
        timezone: TimeZoneName | None = Field(default=None, description=f"Optional zone of datetime; {_ZONE_HELP}")

    @_problems_as_failures
    def execute(self, datetime: dt.datetime, days: int, hours: int, minutes: int,
                timezone: str | None) -> dict[str, Any]:
        duration = dt.timedelta(days=days, hours=hours, minutes=minutes)
        if timezone is None:
            start = datetime
            try:
                end = datetime + duration
            except OverflowError:
                raise _out_of_range() from None
            return {"ok": True, "start": start.isoformat(timespec="seconds"),
                    "result": end.isoformat(timespec="seconds"), "date": end.date().isoformat(),
                    "weekday": WEEKDAYS[end.weekday()], "timezone": None}
        zone = resolve_zone(timezone)
        start, _ = localize(datetime, zone)
        try:
            end = (start.astimezone(dt.UTC) + duration).astimezone(zone)
        except OverflowError:
            raise _out_of_range() from None
        return {"ok": True, "start": start.isoformat(timespec="seconds"), "result": end.isoformat(timespec="seconds"),
                "date": end.date().isoformat(), "weekday": WEEKDAYS[end.weekday()], "timezone": zone.key}


@register_tool
class DatetimeDifference(BaseTool):
    NAME = "datetime_difference"
    description = ("The time elapsed from one date and time to another, in total days, hours, minutes and seconds "
                   "and as days + hours + minutes + seconds; each moment may be in its own time zone.")
    category = "datetime"

    class Arguments(StrictArguments):
        start: LocalDateTime = Field(description="The earlier moment (local time), YYYY-MM-DDTHH:MM or YYYY-MM-DD.")
        end: LocalDateTime = Field(description="The later moment (local time), YYYY-MM-DDTHH:MM or YYYY-MM-DD.")
        start_timezone: TimeZoneName = Field(default="UTC", description=f"Zone of start; {_ZONE_HELP}")
        end_timezone: TimeZoneName | None = Field(default=None,
                                                  description="Zone of end; omit when it is start_timezone.")

    @_problems_as_failures
    def execute(self, start: dt.datetime, end: dt.datetime, start_timezone: str,
                end_timezone: str | None) -> dict[str, Any]:
        start_zone = resolve_zone(start_timezone)
        end_zone = start_zone if end_timezone is None else resolve_zone(end_timezone)
        first, _ = localize(start, start_zone)
        last, _ = localize(end, end_zone)
        # Aware datetimes sharing one tzinfo subtract as wall-clock times, so compare them in UTC.
        total = int((last.astimezone(dt.UTC) - first.astimezone(dt.UTC)).total_seconds())
        days, rest = divmod(abs(total), 86_400)
        hours, rest = divmod(rest, 3_600)
        minutes, seconds = divmod(rest, 60)
        return {
            "ok": True, "start": first.isoformat(timespec="seconds"), "end": last.isoformat(timespec="seconds"),
            "total_seconds": total, "total_minutes": round(total / 60, 4), "total_hours": round(total / 3_600, 4),
            "total_days": round(total / 86_400, 4), "end_before_start": total < 0,
            "days": days, "hours": hours, "minutes": minutes, "seconds": seconds,
        }


TOOLS = (GetCurrentTime, ConvertTimezone, AddDuration, DatetimeDifference)
