"""Events calendar and ticketing tools over the shipped catalog (offline and deterministic).

A request the catalog cannot satisfy (an unknown event, a sold-out ticket type, a past event) returns the shared
failure shape (``tool_selection.tool_failures``): ``{"ok": False, "error": <code>, "message", "suggestions", ...}``.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Literal

from pydantic import Field

from tool_selection import BaseTool, register_tool
from tool_selection.argtypes import IsoDate, end_not_before_start
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets.events.state import TODAY, EventsState

Category = Literal["concert", "theatre", "sports", "comedy", "festival", "workshop", "exhibition", "film"]
City = Literal["Seattle", "Portland", "Tacoma"]
TicketType = Literal["general", "vip"]


def _event_id() -> Any:
    return Field(pattern=r"^[Ee]\d{3}$", max_length=4,
                 description="Event id as returned by the search tools, e.g. 'E104'.")


def _tickets() -> Any:
    return Field(default=1, ge=1, le=10, description="Number of tickets (1-10).")


_STOPWORDS = frozenset(
    "a an and any are at event events for i in is me of on or show shows some the ticket tickets to "
    "upcoming what whats with".split()
)


class EventsTool(BaseTool, abstract=True):
    """Shared state and lookups of the events tools."""

    category = "events"
    state: EventsState = Field(default_factory=EventsState, description="Catalog, sales and bookings.")

    def _event(self, event_id: str) -> dict | None:
        return self.state.events.get(event_id.upper())

    @staticmethod
    def _unknown_event(event_id: str) -> dict[str, Any]:
        return tool_failure("unknown_event", f"unknown event id {event_id!r}; find ids with search_events",
                            event_id=event_id)

    @staticmethod
    def _no_ticket_type(event: dict, ticket_type: str) -> dict[str, Any]:
        return tool_failure("unknown_ticket_type", f"{event['event_id']} has no {ticket_type!r} tickets",
                            suggestions=list(event["tiers"]), event_id=event["event_id"])

    @staticmethod
    def _past(event: dict, already: str = "") -> dict[str, Any]:
        return tool_failure("event_past", f"{event['title']} {already}took place on {event['date']}",
                            event_id=event["event_id"], date=event["date"])

    def _upcoming_tier(self, event_id: str, ticket_type: str) -> tuple[dict | None, dict[str, Any] | None]:
        """The event, or the failure that stops buying or queueing for its ``ticket_type`` tickets."""
        event = self._event(event_id)
        if event is None:
            return None, self._unknown_event(event_id)
        if self.state.is_past(event):
            return None, self._past(event)
        if ticket_type not in event["tiers"]:
            return None, self._no_ticket_type(event, ticket_type)
        return event, None


def _words(text: str) -> set[str]:
    """Lower-cased keywords with a crude plural stem, without stopwords."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in words if len(w) > 1 and w not in _STOPWORDS}


@register_tool
class SearchEvents(EventsTool):
    NAME = "search_events"
    description = (
        "Search upcoming events by keyword (title, performer, genre, venue, city). Use it to find an event "
        "or its id from a name or topic; for 'what is on' a given date, use find_events_by_date."
    )

    class Arguments(StrictArguments):
        query: str = Field(min_length=1, max_length=200, description="Keywords, e.g. 'jazz' or 'Nova Lights'.")
        category: Category | None = Field(default=None, description="Only events of this category.")
        city: City | None = Field(default=None, description="Only events in this city.")
        include_past: bool = Field(default=False, description="Also return events that already happened.")
        limit: int = Field(default=10, ge=1, le=50, description="Maximum number of results.")

    def execute(self, query: str, category: str | None, city: str | None, include_past: bool,
                limit: int) -> dict[str, Any]:
        wanted = _words(query)
        scored = []
        for event in self.state.events.values():
            summary = self.state.summary(event)
            if (category and event["category"] != category) or (city and summary["city"] != city):
                continue
            if not include_past and self.state.is_past(event):
                continue
            text = " ".join([event["title"], event["category"], event["description"], summary["venue"],
                             summary["city"], *event["performers"], *event["tags"]])
            score = len(wanted & _words(text)) if wanted else 1
            if score:
                scored.append((-score, event["date"], event["time"], summary))
        matches = [s[-1] for s in sorted(scored, key=lambda s: s[:3])]
        return {"query": query, "total_matches": len(matches), "count": min(limit, len(matches)),
                "events": matches[:limit]}


@register_tool
class FindEventsByDate(EventsTool):
    NAME = "find_events_by_date"
    description = (
        "List every event on one date or within a date range, optionally by category and city. Use it for "
        f"'what is on' questions about dates; the calendar's today is {TODAY.isoformat()}."
    )

    class Arguments(StrictArguments):
        start_date: IsoDate = Field(description="First date (YYYY-MM-DD).")
        end_date: IsoDate | None = Field(
            default=None, description="Last date, inclusive (YYYY-MM-DD); omit for the start date alone.")
        category: Category | None = Field(default=None, description="Only events of this category.")
        city: City | None = Field(default=None, description="Only events in this city.")

        _dates_in_order = end_not_before_start()

    def execute(self, start_date: dt.date, end_date: dt.date | None, category: str | None,
                city: str | None) -> dict[str, Any]:
        end_date = end_date or start_date
        events = []
        for event in sorted(self.state.events.values(), key=lambda e: (e["date"], e["time"])):
            summary = self.state.summary(event)
            if not start_date <= self.state.event_date(event) <= end_date:
                continue
            if (category and event["category"] != category) or (city and summary["city"] != city):
                continue
            events.append(summary)
        return {"start_date": start_date.isoformat(), "end_date": end_date.isoformat(),
                "count": len(events), "events": events}


@register_tool
class GetEventDetails(EventsTool):
    NAME = "get_event_details"
    description = (
        "Full details of one event: date, start time, duration, performers, description, age limit and "
        "ticket prices. Not for remaining tickets (check_availability) or the venue itself (get_venue_info)."
    )

    class Arguments(StrictArguments):
        event_id: str = _event_id()

    def execute(self, event_id: str) -> dict[str, Any]:
        event = self._event(event_id)
        if event is None:
            return self._unknown_event(event_id)
        details = {k: v for k, v in event.items() if k not in ("tiers", "venue_id")}
        venue = self.state.venues[event["venue_id"]]
        details["venue"] = {"venue_id": venue["venue_id"], "name": venue["name"], "city": venue["city"]}
        details["prices"] = {tier: t["price"] for tier, t in event["tiers"].items()}
        details["currency"] = self.state.currency
        details["past"] = self.state.is_past(event)
        return {"ok": True, "event": details}


@register_tool
class ListVenues(EventsTool):
    NAME = "list_venues"
    description = "List the venues in the catalog (name, city, kind, capacity), optionally in one city."

    class Arguments(StrictArguments):
        city: City | None = Field(default=None, description="Only venues in this city.")

    def execute(self, city: str | None) -> dict[str, Any]:
        venues = [{k: v[k] for k in ("venue_id", "name", "city", "kind", "capacity")}
                  for v in self.state.venues.values() if city is None or v["city"] == city]
        return {"count": len(venues), "venues": venues}


@register_tool
class GetVenueInfo(EventsTool):
    NAME = "get_venue_info"
    description = (
        "Information about one venue: address, parking, public transit, wheelchair access, bag policy and "
        "its upcoming events. Takes the venue's name or id."
    )

    class Arguments(StrictArguments):
        venue: str = Field(min_length=2, max_length=100,
                           description="Venue name (or part of it, e.g. 'Rose Theatre') or id such as 'V3'.")

    def execute(self, venue: str) -> dict[str, Any]:
        needle = venue.strip().lower()
        venues = self.state.venues.values()
        found = [v for v in venues if needle in (v["venue_id"].lower(), v["name"].lower())]
        found = found or [v for v in venues if needle in v["name"].lower()]
        if len(found) != 1:
            error = "ambiguous_venue" if found else "unknown_venue"
            what = "several venues match" if found else "no venue matches"
            return tool_failure(error, f"{what} {venue!r}", suggestions=[v["name"] for v in (found or venues)],
                                venue=venue)
        info = dict(found[0])
        upcoming = [e for e in self.state.events.values()
                    if e["venue_id"] == info["venue_id"] and not self.state.is_past(e)]
        info["upcoming_events"] = [self.state.summary(e) for e in sorted(upcoming, key=lambda e: e["date"])]
        return {"ok": True, "venue": info}


@register_tool
class CheckAvailability(EventsTool):
    NAME = "check_availability"
    description = (
        "Check how many tickets remain for an event, per ticket type, and whether a number of tickets can "
        "be bought. Reserves nothing; use book_tickets to buy."
    )

    class Arguments(StrictArguments):
        event_id: str = _event_id()
        tickets: int = _tickets()
        ticket_type: TicketType | None = Field(default=None, description="Only this ticket type; omit for all.")

    def execute(self, event_id: str, tickets: int, ticket_type: str | None) -> dict[str, Any]:
        event = self._event(event_id)
        if event is None:
            return self._unknown_event(event_id)
        if ticket_type is not None and ticket_type not in event["tiers"]:
            return self._no_ticket_type(event, ticket_type)
        on_sale = not self.state.is_past(event)
        tiers = []
        for tier, info in event["tiers"].items():
            if ticket_type in (None, tier):
                remaining = self.state.remaining(event, tier) if on_sale else 0
                tiers.append({"ticket_type": tier, "price": info["price"], "remaining": remaining,
                              "enough": remaining >= tickets})
        return {"ok": True, "event_id": event["event_id"], "title": event["title"], "date": event["date"],
                "on_sale": on_sale, "requested_tickets": tickets, "tiers": tiers}


@register_tool
class BookTickets(EventsTool):
    NAME = "book_tickets"
    description = "Buy tickets for an event now, creating a booking. Fails if not enough tickets remain."

    class Arguments(StrictArguments):
        event_id: str = _event_id()
        tickets: int = _tickets()
        ticket_type: TicketType = Field(default="general", description="Ticket type: 'general' or 'vip'.")

    def execute(self, event_id: str, tickets: int, ticket_type: str) -> dict[str, Any]:
        event, failure = self._upcoming_tier(event_id, ticket_type)
        if failure:
            return failure
        remaining = self.state.remaining(event, ticket_type)
        if remaining < tickets:
            error, why = (("sold_out", "sold out; join_waitlist can queue you") if remaining == 0
                          else ("not_enough_tickets", f"only {remaining} left"))
            return tool_failure(error, f"{ticket_type} tickets for {event['title']}: {why}",
                                event_id=event["event_id"], remaining=remaining, requested=tickets)
        booking = self.state.new_booking(event, ticket_type, tickets)
        return {"ok": True, "booking": self.state.booking_view(booking)}


@register_tool
class JoinWaitlist(EventsTool):
    NAME = "join_waitlist"
    description = (
        "Join the waitlist of a sold-out event, to be offered tickets that are released later. Only for "
        "ticket types with too few tickets left; otherwise book_tickets."
    )

    class Arguments(StrictArguments):
        event_id: str = _event_id()
        tickets: int = _tickets()
        ticket_type: TicketType = Field(default="general", description="Ticket type: 'general' or 'vip'.")

    def execute(self, event_id: str, tickets: int, ticket_type: str) -> dict[str, Any]:
        event, failure = self._upcoming_tier(event_id, ticket_type)
        if failure:
            return failure
        remaining = self.state.remaining(event, ticket_type)
        if remaining >= tickets:
            return tool_failure("tickets_available",
                                f"{remaining} {ticket_type} tickets are available; book them instead",
                                event_id=event["event_id"], remaining=remaining)
        return {"ok": True, "waitlist": self.state.join_waitlist(event, ticket_type, tickets)}


@register_tool
class CancelBooking(EventsTool):
    NAME = "cancel_booking"
    description = (
        "Cancel one of my bookings by booking id and release its tickets. Refund: full 7+ days before the "
        "event, half 2-6 days before, none within 48 hours; past events cannot be cancelled."
    )

    class Arguments(StrictArguments):
        booking_id: str = Field(pattern=r"^[Bb]\d{4}$", max_length=5, description="Booking id, e.g. 'B1001'.")

    def execute(self, booking_id: str) -> dict[str, Any]:
        booking = self.state.bookings.get(booking_id.upper())
        if booking is None:
            return tool_failure("unknown_booking", f"no booking {booking_id!r}; see list_my_bookings",
                                booking_id=booking_id)
        if booking["status"] == "cancelled":
            return tool_failure("already_cancelled", f"booking {booking['booking_id']} is already cancelled",
                                booking_id=booking["booking_id"])
        event = self.state.events[booking["event_id"]]
        if self.state.is_past(event):
            return {**self._past(event, "already "), "booking_id": booking["booking_id"]}
        refund = self.state.cancel(booking)
        return {"ok": True, "booking": self.state.booking_view(booking), "refund": refund,
                "currency": self.state.currency}


@register_tool
class ListMyBookings(EventsTool):
    NAME = "list_my_bookings"
    description = "List my ticket bookings (id, event, date, tickets, price, status), newest event first."

    class Arguments(StrictArguments):
        status: Literal["active", "cancelled", "all"] = Field(
            default="active", description="Which bookings: 'active', 'cancelled' or 'all'.")

    def execute(self, status: str) -> dict[str, Any]:
        bookings = [self.state.booking_view(b) for b in self.state.bookings.values()
                    if status == "all" or b["status"] == status]
        bookings.sort(key=lambda b: (b["date"], b["booking_id"]), reverse=True)
        return {"status": status, "count": len(bookings), "bookings": bookings}


TOOLS = (SearchEvents, FindEventsByDate, GetEventDetails, ListVenues, GetVenueInfo, CheckAvailability,
         BookTickets, JoinWaitlist, CancelBooking, ListMyBookings)
