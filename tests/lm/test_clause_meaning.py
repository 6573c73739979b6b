"""Functions a clause of the request asks for by meaning (MiniLM over the listed functions' documents)."""

import pytest

from tool_selection.decision import ToolCall
from tool_selection.lm.clause_meaning import MEANT_SIMILARITY, clause_matcher, clauses

CANCEL = {"name": "cancel_booking", "description": "Cancel a booking by its id.",
          "parameters": {"type": "object", "required": ["booking_id"],
                         "properties": {"booking_id": {"type": "string"}}}}
BOOKINGS = {"name": "list_my_bookings", "description": "List the bookings you have made.",
            "parameters": {"type": "object", "properties": {}}}
VENUES = {"name": "list_venues", "description": "List the venues in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
CANCELLED = [ToolCall(tool_name="cancel_booking", arguments={"booking_id": "B1004"})]


@pytest.mark.parametrize(("request_text", "parts"), [
    ("Cancel B1004 and then show me what I still have booked.", ["Cancel B1004", "show me what I still have booked"]),
    ("Cancel B1004.", []),  # one clause asks for one thing
    ("user: Cancel B1004.\nassistant: Done.\nuser: Now the venues in Oslo, then my bookings",
     ["Now the venues in Oslo", "my bookings"]),  # the last user turn alone
])
def test_clauses_are_read_from_the_last_user_turn(request_text, parts):
    assert clauses(request_text) == parts


def test_a_clause_asks_for_the_uncalled_function_closest_in_meaning():
    meant = clause_matcher([CANCEL, BOOKINGS, VENUES])
    assert meant("Cancel B1004 and then show me what I still have booked.", CANCELLED) == ["list_my_bookings"]
    assert meant("Cancel B1004 and then tell me a joke about penguins.", CANCELLED) == []  # nothing close enough
    assert meant("Cancel B1004.", CANCELLED) == []
    assert 0 < MEANT_SIMILARITY < 1


def test_a_single_listed_function_or_no_embedder_asks_for_none(monkeypatch):
    import tool_selection.lm.clause_meaning as clause_meaning
    from tool_selection.errors import ToolSelectionError

    assert clause_matcher([CANCEL])("Cancel B1004 and then cancel B1005.", []) == []

    def missing():
        raise ToolSelectionError("Dense tool retrieval needs the retrieval extra")

    monkeypatch.setattr(clause_meaning, "_dense", missing)
    assert clause_matcher([CANCEL, BOOKINGS])("Cancel B1004 and then show my bookings.", CANCELLED) == []
