"""The events domain: an events calendar with venues and ticketing, over a shipped catalog.

Every tool instance owns an ``EventsState`` built fresh from ``events.json``; pass one state to several tools
(``BookTickets(state=s)``) to chain actions. The calendar's "today" is fixed in the data (``TODAY``).
"""

from tool_selection import ToolSet
from tool_sets.events.state import CATEGORIES, CITIES, TODAY, EventsState, load_catalog
from tool_sets.events.tools import (
    TOOLS,
    BookTickets,
    CancelBooking,
    CheckAvailability,
    EventsTool,
    FindEventsByDate,
    GetEventDetails,
    GetVenueInfo,
    JoinWaitlist,
    ListMyBookings,
    ListVenues,
    SearchEvents,
)

__all__ = [
    "CATEGORIES", "CITIES", "TODAY", "TOOL_SET", "TOOLS", "BookTickets", "CancelBooking", "CheckAvailability",
    "EventsState", "EventsTool", "FindEventsByDate", "GetEventDetails", "GetVenueInfo", "JoinWaitlist",
    "ListMyBookings", "ListVenues", "SearchEvents", "load_catalog",
]

TOOL_SET = ToolSet(
    name="events",
    description="Events calendar and ticketing: find events and venues, check availability, book and cancel.",
    tools=TOOLS,
)
