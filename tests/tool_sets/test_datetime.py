"""The datetime tool set: time zones (with daylight saving), durations and differences against known offsets,
every refusal in the tool-failure shape, and a package named ``datetime`` that leaves the standard library alone."""

import datetime
import json
import sys
from pathlib import Path

import pydantic
import pytest

from tests.tool_sets.test_calculator import assert_failure, check_tool_set
from tool_selection import ToolArgumentError
from tool_sets.datetime import TOOL_SET, GetCurrentTime, similar_zones
from tool_sets.datetime import tools as datetime_tools

UTC = datetime.UTC


def run(name: str, **arguments) -> dict:
    result = TOOL_SET.registry().execute(name, arguments)
    assert json.loads(json.dumps(result)) == result
    return result


# ------------------------------------------------------------------------------------------ the set
def test_tool_set_loads_and_every_schema_is_bounded(monkeypatch):
    check_tool_set(TOOL_SET, monkeypatch)
    assert TOOL_SET.names() == ["get_current_time", "convert_timezone", "add_duration", "datetime_difference"]


def test_the_package_name_does_not_shadow_the_standard_library():
    stdlib = Path(sys.modules["datetime"].__file__).resolve()
    assert "tool_sets" not in stdlib.parts
    assert datetime_tools.dt is sys.modules["datetime"]
    assert datetime.datetime(2025, 1, 1).isoformat() == "2025-01-01T00:00:00"


# ------------------------------------------------------------------------------------------ current time
def test_current_time_uses_the_fixed_now_in_the_requested_zone():
    summer = GetCurrentTime(now=datetime.datetime(2025, 7, 1, 10, 0, tzinfo=UTC))
    paris = summer.validate_and_execute(timezone="Europe/Paris")
    assert paris == {
        "ok": True, "datetime": "2025-07-01T12:00:00+02:00", "timezone": "Europe/Paris", "utc_offset": "+02:00",
        "abbreviation": "CEST", "weekday": "Tuesday", "date": "2025-07-01", "time": "12:00:00", "is_dst": True,
        "unix_time": 1751364000,
    }
    winter = GetCurrentTime(now=datetime.datetime(2025, 1, 1, 3, 0, tzinfo=UTC))
    new_york = winter.validate_and_execute(timezone="America/New_York")
    assert new_york["datetime"] == "2024-12-31T22:00:00-05:00" and new_york["is_dst"] is False
    assert new_york["weekday"] == "Tuesday" and new_york["abbreviation"] == "EST"
    kathmandu = winter.validate_and_execute(timezone="Asia/Kathmandu")
    assert kathmandu["utc_offset"] == "+05:45" and kathmandu["time"] == "08:45:00"
    assert winter.validate_and_execute()["timezone"] == "UTC"


def test_current_time_reads_the_clock_by_default():
    before = datetime.datetime.now(UTC).replace(microsecond=0)
    result = run("get_current_time", timezone="Asia/Tokyo")
    after = datetime.datetime.now(UTC)
    reported = datetime.datetime.fromisoformat(result["datetime"])
    assert before <= reported <= after and result["utc_offset"] == "+09:00"


def test_fixed_now_must_carry_an_offset():
    with pytest.raises(pydantic.ValidationError, match="timezone"):
        GetCurrentTime(now=datetime.datetime(2025, 1, 1))


def test_zone_names_forgive_case_and_spaces():
    assert run("get_current_time", timezone="europe/paris")["timezone"] == "Europe/Paris"
    assert run("get_current_time", timezone="America/New York")["timezone"] == "America/New_York"


@pytest.mark.parametrize("name, first_suggestion", [
    ("new york", "America/New_York"),
    ("PST", "America/Los_Angeles"),
    ("IST", "Asia/Kolkata"),
    ("Londn", "Europe/London"),
    ("Europe/Pari", "Europe/Paris"),
    ("Tokio", "Asia/Tokyo"),
])
def test_unknown_zones_are_failures_with_close_matches(name, first_suggestion):
    result = run("get_current_time", timezone=name)
    assert_failure(result, "unknown_timezone")
    assert result["suggestions"][0] == first_suggestion and result["timezone"] == name
    assert len(result["suggestions"]) <= 3


def test_a_name_like_no_zone_gets_no_suggestions():
    assert similar_zones("Mars/Olympus_Mons") == []


# ------------------------------------------------------------------------------------------ conversion
@pytest.mark.parametrize("local, source, target, expected", [
    ("2025-06-01T09:00", "America/New_York", "Europe/Paris", "2025-06-01T15:00:00+02:00"),
    ("2025-01-15T12:00", "America/New_York", "Asia/Tokyo", "2025-01-16T02:00:00+09:00"),
    ("2025-06-01", "UTC", "Asia/Kolkata", "2025-06-01T05:30:00+05:30"),
    ("2025-12-31T23:30:15", "Australia/Sydney", "UTC", "2025-12-31T12:30:15+00:00"),
    ("2025-03-10 08:00", "Europe/London", "America/Los_Angeles", "2025-03-10T01:00:00-07:00"),
])
def test_convert_timezone(local, source, target, expected):
    result = run("convert_timezone", datetime=local, from_timezone=source, to_timezone=target)
    assert result["ok"] and result["to"]["datetime"] == expected and result["to"]["timezone"] == target
    assert result["from"]["timezone"] == source and result["ambiguous"] is False and "note" not in result
    back = run("convert_timezone", datetime=expected[:19], from_timezone=target, to_timezone=source)
    assert back["to"]["datetime"][:16] == datetime.datetime.fromisoformat(local).isoformat()[:16]


@pytest.mark.parametrize("local, zone, after_jump", [
    ("2025-03-30T02:30", "Europe/Paris", "2025-03-30T03:30"),
    ("2025-03-09T02:15", "America/New_York", "2025-03-09T03:15"),
])
def test_a_time_skipped_by_daylight_saving_is_a_failure(local, zone, after_jump):
    result = run("convert_timezone", datetime=local, from_timezone=zone, to_timezone="UTC")
    assert_failure(result, "nonexistent_local_time")
    assert result["suggestions"] == [after_jump] and zone in result["message"]


def test_a_time_that_happens_twice_uses_the_earlier_and_says_so():
    result = run("convert_timezone", datetime="2025-10-26T02:30", from_timezone="Europe/Paris", to_timezone="UTC")
    assert result["ok"] and result["ambiguous"] is True and "twice" in result["note"]
    assert result["from"]["utc_offset"] == "+02:00" and result["to"]["datetime"] == "2025-10-26T00:30:00+00:00"


def test_conversion_reports_unknown_zones_and_years_out_of_range():
    assert_failure(run("convert_timezone", datetime="2025-01-01T00:00", from_timezone="UTC",
                       to_timezone="Europe/Atlantis"), "unknown_timezone")
    assert_failure(run("convert_timezone", datetime="0001-01-01T00:00", from_timezone="Asia/Tokyo",
                       to_timezone="UTC"), "out_of_range")
    assert_failure(run("convert_timezone", datetime="9999-12-31T23:00", from_timezone="UTC",
                       to_timezone="Asia/Tokyo"), "out_of_range")


# ------------------------------------------------------------------------------------------ durations
@pytest.mark.parametrize("arguments, result, weekday", [
    ({"datetime": "2025-01-15", "days": 90}, "2025-04-15T00:00:00", "Tuesday"),
    ({"datetime": "2024-02-28", "days": 1}, "2024-02-29T00:00:00", "Thursday"),
    ({"datetime": "2025-03-01", "days": -1}, "2025-02-28T00:00:00", "Friday"),
    ({"datetime": "2025-12-31T23:30", "minutes": 45}, "2026-01-01T00:15:00", "Thursday"),
    ({"datetime": "2025-06-01T12:00", "days": 1, "hours": -36, "minutes": 30}, "2025-06-01T00:30:00", "Sunday"),
    ({"datetime": "2025-03-29T12:00", "hours": 24}, "2025-03-30T12:00:00", "Sunday"),
])
def test_add_duration_as_calendar_arithmetic(arguments, result, weekday):
    out = run("add_duration", **arguments)
    assert out["ok"] and out["result"] == result and out["weekday"] == weekday and out["timezone"] is None
    assert out["date"] == result[:10]


def test_add_duration_in_a_zone_is_elapsed_time_across_daylight_saving():
    out = run("add_duration", datetime="2025-03-29T12:00", hours=24, timezone="Europe/Paris")
    assert out["start"] == "2025-03-29T12:00:00+01:00" and out["result"] == "2025-03-30T13:00:00+02:00"
    assert out["timezone"] == "Europe/Paris"
    autumn = run("add_duration", datetime="2025-10-25T12:00", days=1, timezone="Europe/Paris")
    assert autumn["result"] == "2025-10-26T11:00:00+01:00"


def test_add_duration_failures():
    assert_failure(run("add_duration", datetime="9999-12-31", days=1), "out_of_range")
    assert_failure(run("add_duration", datetime="0001-01-01", minutes=-1, timezone="UTC"), "out_of_range")
    assert_failure(run("add_duration", datetime="2025-03-30T02:30", hours=1, timezone="Europe/Paris"),
                   "nonexistent_local_time")
    assert_failure(run("add_duration", datetime="2025-01-01", days=1, timezone="Moon/Base"), "unknown_timezone")


# ------------------------------------------------------------------------------------------ differences
def test_difference_between_dates():
    out = run("datetime_difference", start="2025-01-01", end="2025-03-01")
    assert out["total_days"] == 59 and out["days"] == 59 and out["total_seconds"] == 59 * 86_400
    assert run("datetime_difference", start="2024-01-01", end="2024-03-01")["days"] == 60
    assert out["start"] == "2025-01-01T00:00:00+00:00" and out["end_before_start"] is False


def test_difference_breakdown_and_totals():
    out = run("datetime_difference", start="2025-05-01T08:15:10", end="2025-05-03T10:20:40")
    assert (out["days"], out["hours"], out["minutes"], out["seconds"]) == (2, 2, 5, 30)
    assert out["total_seconds"] == 2 * 86_400 + 2 * 3_600 + 5 * 60 + 30
    assert out["total_minutes"] == round(out["total_seconds"] / 60, 4)
    assert out["total_hours"] == round(out["total_seconds"] / 3_600, 4)


@pytest.mark.parametrize("day, hours", [("2025-03-30", 11), ("2025-10-26", 13), ("2025-07-01", 12)])
def test_difference_counts_elapsed_time_across_daylight_saving(day, hours):
    out = run("datetime_difference", start=f"{day}T00:00", end=f"{day}T12:00", start_timezone="Europe/Paris")
    assert out["total_hours"] == hours and out["hours"] == hours


def test_difference_between_zones_and_backwards():
    out = run("datetime_difference", start="2025-06-01T09:00", end="2025-06-01T08:00",
              start_timezone="America/New_York", end_timezone="Europe/London")
    assert out["total_hours"] == -6 and out["end_before_start"] is True
    assert (out["days"], out["hours"], out["minutes"]) == (0, 6, 0)
    same_instant = run("datetime_difference", start="2025-06-01T09:00", end="2025-06-01T15:00",
                       start_timezone="America/New_York", end_timezone="Europe/Paris")
    assert same_instant["total_seconds"] == 0


def test_difference_failures():
    assert_failure(run("datetime_difference", start="2025-01-01", end="2025-01-02", end_timezone="Nowhere"),
                   "unknown_timezone")
    assert_failure(run("datetime_difference", start="2025-03-09T02:30", end="2025-03-10",
                       start_timezone="America/New_York"), "nonexistent_local_time")


# ------------------------------------------------------------------------------------------ validation
INVALID = [
    ("get_current_time", {"timezone": "Europe/Paris; rm -rf /"}, "timezone"),
    ("get_current_time", {"timezone": "A" * 65}, "timezone"),
    ("get_current_time", {"timezone": ""}, "timezone"),
    ("convert_timezone", {"datetime": "2025-02-30T10:00", "from_timezone": "UTC", "to_timezone": "UTC"}, "datetime"),
    ("convert_timezone", {"datetime": "2025-01-01T10:00Z", "from_timezone": "UTC", "to_timezone": "UTC"}, "datetime"),
    ("convert_timezone", {"datetime": "01/02/2025", "from_timezone": "UTC", "to_timezone": "UTC"}, "datetime"),
    ("convert_timezone", {"datetime": "2025-01-01T10:00", "from_timezone": "UTC"}, "to_timezone"),
    ("add_duration", {"datetime": "2025-01-01", "days": 36_501}, "days"),
    ("add_duration", {"datetime": "2025-01-01", "hours": -100_001}, "hours"),
    ("add_duration", {"datetime": "2025-01-01", "minutes": 1.5}, "minutes"),
    ("add_duration", {"datetime": "2025-01-01", "weeks": 2}, "weeks"),
    ("datetime_difference", {"start": "2025-01-01"}, "end"),
    ("datetime_difference", {"start": "2025-01-01", "end": "2025-01-02", "start_timezone": "Paris!"},
     "start_timezone"),
]


@pytest.mark.parametrize("name, arguments, field", INVALID, ids=[f"{n}-{f}" for n, _, f in INVALID])
def test_invalid_arguments_raise_naming_the_field(name, arguments, field):
    with pytest.raises(ToolArgumentError) as caught:
        TOOL_SET.registry().execute(name, arguments)
    assert field in [p.field for p in caught.value.problems]
