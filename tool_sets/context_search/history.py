"""Conversation history for ``context_search``: entries of {content, source, role?, type?, timestamp?}, and the
shipped default, a 30-turn debate transcript (``debate.json``)."""

from __future__ import annotations

import datetime as dt
import json
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["HistoryEntry", "default_history"]


class HistoryEntry(BaseModel):
    """One turn or message of a conversation, oldest first in a history."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = Field(min_length=1, description="What was said.")
    source: str = Field(min_length=1, description="Who said it: a speaker's name or a turn id.")
    role: str | None = Field(default=None, min_length=1, description="The speaker's role (default: the source).")
    type: str = Field(default="message", min_length=1, description="What kind of contribution it is.")
    timestamp: str | None = Field(default=None, description="When, as an ISO 8601 date-time.")

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            dt.datetime.fromisoformat(value)  # raises ValueError, reported by pydantic
        return value


@cache
def default_history() -> tuple[HistoryEntry, ...]:
    """The shipped debate transcript: a moderator and two speakers on whether public transport should be free."""
    data = json.loads(resources.files(__package__).joinpath("debate.json").read_text(encoding="utf-8"))
    return tuple(HistoryEntry(**entry) for entry in data["entries"])
