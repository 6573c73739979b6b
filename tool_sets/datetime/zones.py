"""Time zones from the IANA database (``zoneinfo``): lookup with close-match suggestions, and turning a local
wall-clock time into an instant, aware of daylight-saving gaps (times that never happen) and folds (times that
happen twice).

This module is ``tool_sets.datetime.zones``; ``import datetime`` here is an absolute import, so it is the
standard library's module, never this package.
"""

from __future__ import annotations

import datetime as dt
import difflib
import zoneinfo
from functools import cache
from typing import Any

__all__ = ["WEEKDAYS", "DateTimeProblem", "describe", "localize", "resolve_zone", "similar_zones", "zone_names"]

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class DateTimeProblem(ValueError):
    """A request the tools cannot answer (unknown zone, a local time that does not exist, out of range)."""

    def __init__(self, code: str, message: str, suggestions: list[str] | None = None, **details: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.suggestions = suggestions or []
        self.details = details


@cache
def zone_names() -> tuple[str, ...]:
    """Every IANA zone name this system knows, sorted."""
    return tuple(sorted(zoneinfo.available_timezones()))


@cache
def _by_normal_name() -> dict[str, str]:
    return {_normal(name): name for name in zone_names()}


def _normal(name: str) -> str:
    return "_".join(name.strip().lower().split())


# Common abbreviations that are not zone names themselves (several are ambiguous, so they are only suggested).
_ABBREVIATIONS = {
    "pst": ("America/Los_Angeles",), "pdt": ("America/Los_Angeles",), "mdt": ("America/Denver",),
    "cst": ("America/Chicago", "Asia/Shanghai"), "cdt": ("America/Chicago",), "edt": ("America/New_York",),
    "bst": ("Europe/London",), "cest": ("Europe/Paris",), "ist": ("Asia/Kolkata", "Europe/Dublin", "Asia/Jerusalem"),
    "jst": ("Asia/Tokyo",), "kst": ("Asia/Seoul",), "aest": ("Australia/Sydney",), "aedt": ("Australia/Sydney",),
}


def similar_zones(name: str, n: int = 3) -> list[str]:
    """Zone names that look like ``name``: a common abbreviation's zones ('PST' -> 'America/Los_Angeles'), zones
    of the city or a near spelling of it ('new york' -> 'America/New_York'), then near spellings of the whole
    name."""
    wanted = _normal(name)
    lowered = _by_normal_name()
    close = [lowered[m] for m in difflib.get_close_matches(wanted, list(lowered), n=n, cutoff=0.6)]
    cities = _by_city()
    city = wanted.rsplit("/", 1)[-1]
    near_city = [z for c in difflib.get_close_matches(city, list(cities), n=n, cutoff=0.75) for z in cities[c]]
    return list(dict.fromkeys([*_ABBREVIATIONS.get(wanted, ()), *near_city, *close]))[:n]


@cache
def _by_city() -> dict[str, tuple[str, ...]]:
    cities: dict[str, list[str]] = {}
    for zone in zone_names():
        cities.setdefault(_normal(zone).rsplit("/", 1)[-1], []).append(zone)
    return {city: tuple(zones) for city, zones in cities.items()}


def resolve_zone(name: str) -> zoneinfo.ZoneInfo:
    """The zone called ``name`` (case and spaces for underscores forgiven); ``DateTimeProblem`` if unknown."""
    key = _by_normal_name().get(_normal(name))
    if key is None:
        raise DateTimeProblem("unknown_timezone", f"Unknown time zone {name!r}. Use an IANA name such as "
                                                  "'Europe/Paris', 'America/New_York', 'Asia/Tokyo' or 'UTC'.",
                              suggestions=similar_zones(name), timezone=name)
    return zoneinfo.ZoneInfo(key)


def _wall_clock(moment: dt.datetime, zone: zoneinfo.ZoneInfo) -> dt.datetime:
    return moment.astimezone(dt.UTC).astimezone(zone).replace(tzinfo=None)


def localize(local: dt.datetime, zone: zoneinfo.ZoneInfo) -> tuple[dt.datetime, bool]:
    """The instant that wall-clock time ``local`` names in ``zone``, and whether it was ambiguous.

    A time in a fold (clocks going back) happens twice: the earlier one is chosen and ``True`` returned. A
    time in a gap (clocks going forward) never happens: ``DateTimeProblem`` suggests the same moment after the
    jump.
    """
    earlier = local.replace(tzinfo=zone, fold=0)
    try:
        wall_clock = _wall_clock(earlier, zone)
    except OverflowError:  # within a day of year 1 or 9999
        raise DateTimeProblem("out_of_range", "The time falls outside the supported years 1 to 9999 in UTC.",
                              timezone=zone.key) from None
    if wall_clock != local:
        after_jump = wall_clock.isoformat(timespec="minutes")
        raise DateTimeProblem(
            "nonexistent_local_time",
            f"{local.isoformat(timespec='minutes')} does not exist in {zone.key}: the clocks jump forward over it "
            "(daylight-saving time starts).", suggestions=[after_jump], timezone=zone.key)
    later = local.replace(tzinfo=zone, fold=1)
    return earlier, earlier.utcoffset() != later.utcoffset()


def _offset(moment: dt.datetime) -> str:
    seconds = int(moment.utcoffset().total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")


def describe(moment: dt.datetime) -> dict[str, Any]:
    """An aware datetime as the tools report it."""
    return {
        "datetime": moment.isoformat(timespec="seconds"),
        "timezone": getattr(moment.tzinfo, "key", None) or moment.tzname(),
        "utc_offset": _offset(moment),
        "abbreviation": moment.tzname(),
        "weekday": WEEKDAYS[moment.weekday()],
    }
