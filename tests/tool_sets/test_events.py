"""The events tool set: behaviour over the shipped catalog, argument validation, schemas and the eval suite."""

import datetime as dt
import json
import re
from importlib import resources
from typing import get_args

import jsonschema
import pytest

from evals.suite import load_suite
from tests.evals.test_domain_suites import alternatives
from tests.tool_sets.test_calculator import assert_failure
from tool_selection import ToolArgumentError, default_registry, load_tool_set
from tool_sets.events import (
    CATEGORIES,
    CITIES,
    TODAY,
    TOOL_SET,
    BookTickets,
    CancelBooking,
    CheckAvailability,
    EventsState,
    FindEventsByDate,
    GetEventDetails,
    GetVenueInfo,
    JoinWaitlist,
    ListMyBookings,
    ListVenues,
    SearchEvents,
    load_catalog,
)

CATALOG = load_catalog()


@pytest.fixture
def state():
    return EventsState()


def run(tool, state, **arguments):
    return tool(state=state).validate_and_execute(**arguments)


def ids(events):
    return [e["event_id"] for e in events]


# ------------------------------------------------------------------------------------ the tool set
def test_tool_set_loads_by_name_and_registers_its_tools():
    tool_set = load_tool_set("events")
    assert tool_set is TOOL_SET and tool_set.name == "events"
    assert len(tool_set) >= 7
    for tool in tool_set:
        assert default_registry().get(tool.NAME) is tool
        assert tool.category == "events"


@pytest.mark.parametrize("tool", TOOL_SET.tools, ids=TOOL_SET.names())
def test_schema_is_valid_json_schema(tool):
    schema = tool.input_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema.get("additionalProperties") is False


def test_argument_enums_match_the_catalog():
    categories = {e["category"] for e in CATALOG["events"]}
    cities = {v["city"] for v in CATALOG["venues"]}
    assert categories <= set(CATEGORIES) and cities == set(CITIES)
    assert set(get_args(get_args(SearchEvents.Arguments.model_fields["category"].annotation)[0])) == set(CATEGORIES)
    assert set(get_args(get_args(ListVenues.Arguments.model_fields["city"].annotation)[0])) == set(CITIES)


def test_catalog_is_consistent():
    venues = {v["venue_id"] for v in CATALOG["venues"]}
    events = {e["event_id"]: e for e in CATALOG["events"]}
    for event in events.values():
        assert event["venue_id"] in venues
        for tier in event["tiers"].values():
            assert 0 <= tier["sold"] <= tier["capacity"]
    for booking in CATALOG["bookings"]:
        assert booking["event_id"] in events and booking["ticket_type"] in events[booking["event_id"]]["tiers"]
    assert TODAY == dt.date.fromisoformat(CATALOG["today"])


# ------------------------------------------------------------------------------------- lookups
def test_search_events_matches_keywords_and_skips_past_events(state):
    jazz = run(SearchEvents, state, query="jazz")
    assert ids(jazz["events"]) == ["E101"]  # E090 (jazz brunch) is in the past
    with_past = run(SearchEvents, state, query="Jazz", include_past=True)
    assert set(ids(with_past["events"])) == {"E090", "E101"}


def test_search_events_ranks_by_matched_keywords_and_filters(state):
    result = run(SearchEvents, state, query="Shakespeare comedy")
    assert ids(result["events"])[0] == "E110"  # matches both words
    comedy_in_portland = run(SearchEvents, state, query="comedy", category="comedy", city="Portland")
    assert comedy_in_portland["events"] and all(
        e["category"] == "comedy" and e["city"] == "Portland" for e in comedy_in_portland["events"])
    limited = run(SearchEvents, state, query="music", limit=2)
    assert limited["count"] == 2 and limited["total_matches"] > 2
    assert run(SearchEvents, state, query="opera karaoke")["events"] == []


def test_find_events_by_date_lists_exactly_the_events_in_range(state):
    start, end = dt.date(2025, 6, 14), dt.date(2025, 6, 21)
    expected = {e["event_id"] for e in CATALOG["events"] if start <= dt.date.fromisoformat(e["date"]) <= end}
    result = run(FindEventsByDate, state, start_date="2025-06-14", end_date="2025-06-21")
    assert set(ids(result["events"])) == expected and result["count"] == len(expected)
    assert [e["date"] for e in result["events"]] == sorted(e["date"] for e in result["events"])
    one_day = run(FindEventsByDate, state, start_date="2025-06-14")
    assert one_day["end_date"] == "2025-06-14" and set(ids(one_day["events"])) == {"E102", "E104"}
    filtered = run(FindEventsByDate, state, start_date="2025-06-01", end_date="2025-08-31", category="sports",
                   city="Seattle")
    assert set(ids(filtered["events"])) == {"E103", "E115"}


def test_get_event_details(state):
    result = run(GetEventDetails, state, event_id="e106")
    event = result["event"]
    assert result["ok"] and event["event_id"] == "E106"
    assert event["venue"]["name"] == "Riverside Park Grounds" and "Juniper Road" in event["performers"]
    assert event["prices"] == {"general": 70.0, "vip": 180.0} and event["past"] is False
    missing = run(GetEventDetails, state, event_id="E999")
    assert_failure(missing, "unknown_event")
    assert "E999" in missing["message"] and missing["event_id"] == "E999"


def test_list_venues(state):
    assert run(ListVenues, state)["count"] == len(CATALOG["venues"])
    portland = run(ListVenues, state, city="Portland")["venues"]
    assert portland and all(v["city"] == "Portland" for v in portland)
    assert {v["name"] for v in portland} == {v["name"] for v in CATALOG["venues"] if v["city"] == "Portland"}


def test_get_venue_info_by_name_part_or_id(state):
    rose = run(GetVenueInfo, state, venue="rose theatre")["venue"]
    assert rose["venue_id"] == "V3" and rose["parking"] == "Street parking only"
    assert rose["upcoming_events"] and all(e["venue"] == "Rose Theatre" and e["date"] >= TODAY.isoformat()
                                           for e in rose["upcoming_events"])
    assert run(GetVenueInfo, state, venue="V4")["venue"]["wheelchair_accessible"] is False
    assert run(GetVenueInfo, state, venue="Harbor")["venue"]["name"] == "Harbor Hall"
    ambiguous = run(GetVenueInfo, state, venue="ar")
    assert_failure(ambiguous, "ambiguous_venue")
    assert len(ambiguous["suggestions"]) > 1 and all("ar" in name.lower() for name in ambiguous["suggestions"])
    unknown = run(GetVenueInfo, state, venue="Moda Center")
    assert_failure(unknown, "unknown_venue")
    assert len(unknown["suggestions"]) == len(CATALOG["venues"])


def test_check_availability(state):
    result = run(CheckAvailability, state, event_id="E101", tickets=4)
    tiers = {t["ticket_type"]: t for t in result["tiers"]}
    assert tiers["general"]["remaining"] == 1500 - 1320 and tiers["general"]["enough"]
    assert tiers["vip"]["remaining"] == 0 and not tiers["vip"]["enough"]
    only_vip = run(CheckAvailability, state, event_id="E101", ticket_type="vip")
    assert [t["ticket_type"] for t in only_vip["tiers"]] == ["vip"]
    assert run(CheckAvailability, state, event_id="E090")["on_sale"] is False
    no_vip = run(CheckAvailability, state, event_id="E104", ticket_type="vip")
    assert_failure(no_vip, "unknown_ticket_type")
    assert no_vip["suggestions"] == ["general"]
    assert_failure(run(CheckAvailability, state, event_id="E999"), "unknown_event")


# ------------------------------------------------------------------------------------- actions
def test_book_tickets_creates_a_booking_and_uses_up_seats(state):
    before = run(CheckAvailability, state, event_id="E105")["tiers"][0]["remaining"]
    result = run(BookTickets, state, event_id="E105", tickets=2)
    booking = result["booking"]
    assert result["ok"] and booking["status"] == "active" and booking["total_price"] == 120.0
    assert booking["booking_id"] not in {b["booking_id"] for b in CATALOG["bookings"]}
    assert run(CheckAvailability, state, event_id="E105")["tiers"][0]["remaining"] == before - 2
    assert booking["booking_id"] in ids_of_bookings(run(ListMyBookings, state))
    too_many = run(BookTickets, state, event_id="E105", tickets=before)
    assert_failure(too_many, "not_enough_tickets")
    assert too_many["remaining"] == before - 2 and too_many["requested"] == before


def ids_of_bookings(result):
    return [b["booking_id"] for b in result["bookings"]]


@pytest.mark.parametrize("arguments, error, message", [
    ({"event_id": "E104", "tickets": 1}, "sold_out", "sold out"),
    ({"event_id": "E101", "ticket_type": "vip"}, "sold_out", "sold out"),
    ({"event_id": "E090"}, "event_past", "took place"),
    ({"event_id": "E104", "ticket_type": "vip"}, "unknown_ticket_type", "no 'vip'"),
    ({"event_id": "E999"}, "unknown_event", "unknown event"),
])
def test_book_tickets_refuses_impossible_bookings(state, arguments, error, message):
    result = run(BookTickets, state, **arguments)
    assert_failure(result, error)
    assert message in result["message"]
    assert ids_of_bookings(run(ListMyBookings, state, status="all")) == ids_of_bookings(
        run(ListMyBookings, EventsState(), status="all"))


def test_join_waitlist_only_when_too_few_tickets(state):
    first = run(JoinWaitlist, state, event_id="E104", tickets=2)
    assert first["ok"] and first["waitlist"]["position"] == CATALOG["waitlists"]["E104"]["general"] + 1
    assert run(JoinWaitlist, state, event_id="E104")["waitlist"]["position"] == first["waitlist"]["position"] + 1
    available = run(JoinWaitlist, state, event_id="E105", tickets=1)
    assert_failure(available, "tickets_available")
    assert "book" in available["message"] and available["remaining"] == 3
    assert run(JoinWaitlist, state, event_id="E105", tickets=4)["ok"]  # only 3 left
    assert_failure(run(JoinWaitlist, state, event_id="E090"), "event_past")


def test_cancel_booking_refunds_by_policy_and_releases_seats(state):
    seats = run(CheckAvailability, state, event_id="E106", ticket_type="general")["tiers"][0]["remaining"]
    full = run(CancelBooking, state, booking_id="B1004")  # 11 days ahead
    assert full["ok"] and full["refund"] == 4 * 70.0 and full["booking"]["status"] == "cancelled"
    assert run(CheckAvailability, state, event_id="E106", ticket_type="general")["tiers"][0]["remaining"] == seats + 4
    assert run(CancelBooking, state, booking_id="b1001")["refund"] == 2 * 38.0 / 2  # 4 days ahead
    again = run(CancelBooking, state, booking_id="B1004")
    assert_failure(again, "already_cancelled")
    assert "already cancelled" in again["message"]
    past = run(CancelBooking, state, booking_id="B1003")
    assert_failure(past, "event_past")
    assert "already took place" in past["message"] and past["booking_id"] == "B1003"
    assert_failure(run(CancelBooking, state, booking_id="B9999"), "unknown_booking")
    assert ids_of_bookings(run(ListMyBookings, state)) == ["B1003"]


def test_list_my_bookings_by_status(state):
    active = run(ListMyBookings, state)
    assert active["status"] == "active" and set(ids_of_bookings(active)) == {"B1001", "B1003", "B1004"}
    assert [b["date"] for b in active["bookings"]] == sorted((b["date"] for b in active["bookings"]), reverse=True)
    assert ids_of_bookings(run(ListMyBookings, state, status="cancelled")) == ["B1002"]
    assert run(ListMyBookings, state, status="all")["count"] == len(CATALOG["bookings"])


def test_state_is_per_instance_and_the_shipped_data_is_never_written():
    shipped = resources.files("tool_sets.events").joinpath("events.json").read_text(encoding="utf-8")
    registry = TOOL_SET.registry()
    shared = EventsState()
    booked = registry.execute("book_tickets", {"event_id": "E117", "tickets": 3}, state=shared)
    assert registry.execute("list_my_bookings", {}, state=shared)["count"] == 4
    assert registry.execute("list_my_bookings", {})["count"] == 3  # a fresh default state
    assert BookTickets().state is not BookTickets().state
    assert registry.execute("cancel_booking", {"booking_id": booked["booking"]["booking_id"]}, state=shared)["ok"]
    assert resources.files("tool_sets.events").joinpath("events.json").read_text(encoding="utf-8") == shipped
    json.dumps(booked)  # results are JSON-serialisable


# ------------------------------------------------------------------------------- invalid arguments
INVALID = [
    (SearchEvents, {"query": ""}, "query"),
    (SearchEvents, {"query": "jazz", "category": "opera"}, "category"),
    (SearchEvents, {"query": "jazz", "limit": 0}, "limit"),
    (FindEventsByDate, {"start_date": "14/06/2025"}, "start_date"),
    (FindEventsByDate, {"start_date": 1749859200}, "start_date"),
    (FindEventsByDate, {"start_date": "2025-06-20", "end_date": "2025-06-13"}, "end_date"),
    (FindEventsByDate, {"start_date": "2025-06-20", "city": "Boston"}, "city"),
    (GetEventDetails, {"event_id": "101"}, "event_id"),
    (GetEventDetails, {}, "event_id"),
    (ListVenues, {"city": "Spokane"}, "city"),
    (GetVenueInfo, {"venue": ""}, "venue"),
    (CheckAvailability, {"event_id": "E101", "tickets": 11}, "tickets"),
    (CheckAvailability, {"event_id": "E101", "ticket_type": "balcony"}, "ticket_type"),
    (BookTickets, {"event_id": "E105", "tickets": 0}, "tickets"),
    (BookTickets, {"event_id": "E105", "seats": 2}, "seats"),
    (JoinWaitlist, {"event_id": "E104", "ticket_type": "premium"}, "ticket_type"),
    (CancelBooking, {"booking_id": "1001"}, "booking_id"),
    (ListMyBookings, {"status": "pending"}, "status"),
]


@pytest.mark.parametrize("tool, arguments, field", INVALID, ids=[f"{t.NAME}-{f}" for t, _, f in INVALID])
def test_invalid_arguments_raise_naming_the_field(state, tool, arguments, field):
    with pytest.raises(ToolArgumentError) as info:
        run(tool, state, **arguments)
    assert info.value.tool == tool.NAME
    assert field in [p.field for p in info.value.problems]


def test_every_tool_has_an_invalid_argument_case():
    assert {tool.NAME for tool, _, _ in INVALID} == set(TOOL_SET.names())


# ------------------------------------------------------------------------------------ eval suite
# The checks every domain suite must pass are in tests/evals/test_domain_suites.py; these check the catalog.
@pytest.mark.parametrize("case", load_suite("events").cases, ids=lambda case: case.id)
def test_suite_events_bookings_and_venues_exist_in_the_catalog(case):
    events = {e["event_id"] for e in CATALOG["events"]}
    bookings = {b["booking_id"] for b in CATALOG["bookings"]}
    for call in case.expected_calls:
        for arguments in alternatives(call):
            if "event_id" in arguments:
                assert arguments["event_id"].upper() in events
            if "booking_id" in arguments:
                assert arguments["booking_id"].upper() in bookings
            if "venue" in arguments:
                assert GetVenueInfo().validate_and_execute(venue=arguments["venue"])["ok"]
    text = case.request or " ".join(m.content for m in case.messages)
    for entity in re.findall(r"\b[EB]\d{3,4}\b", text, flags=re.I):
        assert entity.upper() in events | bookings, (case.id, entity)
