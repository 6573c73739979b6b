"""The ``datetime`` tool set: the current time in a zone, time-zone conversion, adding durations and the time
between two moments, over the IANA time-zone database (``zoneinfo``).

The package is ``tool_sets.datetime``; its modules import the standard library's ``datetime`` absolutely, so
the names never clash. ``GetCurrentTime(now=...)`` fixes "now" for reproducible runs.
"""

from tool_selection import ToolSet
from tool_sets.datetime.tools import (
    TOOLS,
    AddDuration,
    ConvertTimezone,
    DatetimeDifference,
    GetCurrentTime,
    LocalDateTime,
    TimeZoneName,
)
from tool_sets.datetime.zones import DateTimeProblem, localize, resolve_zone, similar_zones

__all__ = [
    "TOOLS", "TOOL_SET", "AddDuration", "ConvertTimezone", "DateTimeProblem", "DatetimeDifference",
    "GetCurrentTime", "LocalDateTime", "TimeZoneName", "localize", "resolve_zone", "similar_zones",
]

TOOL_SET = ToolSet(
    name="datetime",
    description="Dates and times: the current time in any time zone, converting a time between zones, adding "
                "days, hours or minutes to a date, and the time elapsed between two moments.",
    tools=TOOLS,
)
