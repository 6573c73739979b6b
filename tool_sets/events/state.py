"""The events catalog (shipped read-only in ``events.json``) and the mutable state the tools act on."""

from __future__ import annotations

import copy
import datetime as dt
import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["CATEGORIES", "CITIES", "TODAY", "EventsState", "load_catalog"]

CATEGORIES = ("concert", "theatre", "sports", "comedy", "festival", "workshop", "exhibition", "film")
CITIES = ("Seattle", "Portland", "Tacoma")


@cache
def _catalog_text() -> str:
    return resources.files(__package__).joinpath("events.json").read_text(encoding="utf-8")


def load_catalog() -> dict[str, Any]:
    """A fresh, private copy of the shipped catalog (the file itself is never written)."""
    return json.loads(_catalog_text())


TODAY = dt.date.fromisoformat(load_catalog()["today"])


class EventsState:
    """Venues, events, ticket sales, bookings and waitlists for one tool-state instance.

    Each instance starts from the shipped catalog; share one instance between tools (``Tool(state=s)``) to
    chain actions such as booking then cancelling.
    """

    def __init__(self, catalog: dict[str, Any] | None = None):
        data = copy.deepcopy(catalog) if catalog is not None else load_catalog()
        self.today = dt.date.fromisoformat(data["today"])
        self.currency: str = data["currency"]
        self.venues: dict[str, dict] = {v["venue_id"]: v for v in data["venues"]}
        self.events: dict[str, dict] = {e["event_id"]: e for e in data["events"]}
        self.bookings: dict[str, dict] = {b["booking_id"]: b for b in data["bookings"]}
        self.waitlists: dict[str, dict[str, int]] = data.get("waitlists", {})
        self.waitlist_entries: list[dict] = []

    # ------------------------------------------------------------------ views
    def event_date(self, event: dict) -> dt.date:
        return dt.date.fromisoformat(event["date"])

    def is_past(self, event: dict) -> bool:
        return self.event_date(event) < self.today

    def remaining(self, event: dict, ticket_type: str) -> int:
        tier = event["tiers"][ticket_type]
        return tier["capacity"] - tier["sold"]

    def summary(self, event: dict) -> dict[str, Any]:
        venue = self.venues[event["venue_id"]]
        return {
            "event_id": event["event_id"], "title": event["title"], "category": event["category"],
            "date": event["date"], "time": event["time"], "venue": venue["name"], "city": venue["city"],
        }

    def booking_view(self, booking: dict) -> dict[str, Any]:
        event = self.events[booking["event_id"]]
        return {
            **booking, "title": event["title"], "date": event["date"], "time": event["time"],
            "venue": self.venues[event["venue_id"]]["name"],
            "total_price": round(booking["unit_price"] * booking["tickets"], 2),
        }

    # -------------------------------------------------------------- mutations
    def new_booking(self, event: dict, ticket_type: str, tickets: int) -> dict[str, Any]:
        event["tiers"][ticket_type]["sold"] += tickets
        booking_id = f"B{max(int(b[1:]) for b in self.bookings) + 1}" if self.bookings else "B1001"
        booking = {
            "booking_id": booking_id, "event_id": event["event_id"], "ticket_type": ticket_type,
            "tickets": tickets, "unit_price": event["tiers"][ticket_type]["price"], "status": "active",
            "booked_on": self.today.isoformat(),
        }
        self.bookings[booking_id] = booking
        return booking

    def refund_fraction(self, event: dict) -> float:
        """Full refund 7+ days ahead, half 2-6 days ahead, none within 48 hours."""
        days = (self.event_date(event) - self.today).days
        return 1.0 if days >= 7 else 0.5 if days >= 2 else 0.0

    def cancel(self, booking: dict) -> float:
        event = self.events[booking["event_id"]]
        refund = round(booking["unit_price"] * booking["tickets"] * self.refund_fraction(event), 2)
        event["tiers"][booking["ticket_type"]]["sold"] -= booking["tickets"]
        booking["status"] = "cancelled"
        booking["refund"] = refund
        return refund

    def join_waitlist(self, event: dict, ticket_type: str, tickets: int) -> dict[str, Any]:
        queue = self.waitlists.setdefault(event["event_id"], {})
        queue[ticket_type] = queue.get(ticket_type, 0) + 1
        entry = {"event_id": event["event_id"], "title": event["title"], "ticket_type": ticket_type,
                 "tickets": tickets, "position": queue[ticket_type]}
        self.waitlist_entries.append(entry)
        return entry
