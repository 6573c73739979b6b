"""What conversations record: contributions (a discussion's turns, a debate's proposals, critiques and refinements,
each with its tool calls, results and iterations in ``metadata``), a discussion's transcript and a debate's state
file, saved after every turn or contribution so that a killed run loses no finished work.

Both are JSON in camelCase (``roundNumber``, ``agentId``, ``toolCalls``), the spelling of the debate protocol and of
``context_search``'s matches; both expose ``rounds``, which is what ``context_search`` searches.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from tool_selection.conversations.config import PHASES, DebateConfig
from tool_selection.conversations.errors import StateFileError
from tool_selection.conversations.speaker import TurnMetadata
from tool_selection.conversations.storage import write_json
from tool_selection.validation import validation_problems

__all__ = ["STATE_VERSION", "Contribution", "DebateState", "DiscussionTranscript", "Round", "now"]

STATE_VERSION = 1
MAX_STATE_BYTES = 200_000_000


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True,
                              serialize_by_alias=True)


class Contribution(_Record):
    """One agent's message: a discussion turn (``type`` "message") or a debate phase's proposal, critique or
    refinement. ``content`` is empty when the model gave no answer; ``metadata.error`` then says why."""

    agent_id: str
    agent_name: str
    agent_role: str
    type: str
    content: str
    metadata: TurnMetadata


class Round(_Record):
    """One debate round: its contributions in the order they were made, and the phases finished."""

    number: int = Field(alias="roundNumber", ge=1)
    contributions: list[Contribution] = Field(default_factory=list)
    completed_phases: list[Literal["proposal", "critique", "refinement"]] = Field(default_factory=list)

    def of(self, phase: str, agent_id: str | None = None) -> list[Contribution]:
        return [c for c in self.contributions if c.type == phase and agent_id in (None, c.agent_id)]


@dataclass
class _TurnAsRound:
    number: int
    contributions: list[Contribution]


class _Saved(_Record):
    """A record saved as a JSON file, and read back with every problem named."""

    version: int = STATE_VERSION
    status: Literal["running", "complete"] = "running"
    started_at: str = Field(default_factory=now)
    updated_at: str = Field(default_factory=now)
    seconds: float = Field(0.0, description="Time spent speaking, over every run that added to it.")

    def save(self, path: str | Path) -> Path:
        self.updated_at = now()
        return write_json(path, self.model_dump(mode="json"))

    @classmethod
    def load(cls, path: str | Path):
        path = Path(path)
        kind = cls.__name__
        if not path.is_file():
            raise StateFileError(f"{kind} file {path} does not exist.")
        if path.stat().st_size > MAX_STATE_BYTES:
            raise StateFileError(f"{path} is larger than {MAX_STATE_BYTES:,} bytes; not a {kind} file.")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
            raise StateFileError(f"{path} is not a JSON {kind} file ({error}).") from None
        if isinstance(data, dict) and data.get("version") not in (None, STATE_VERSION):
            raise StateFileError(f"{path} is a version {data.get('version')} {kind} file; this toolkit reads "
                                 f"version {STATE_VERSION}.")
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise StateFileError(f"{path}: not a valid {kind} file: {validation_problems(error)}") from None


class DiscussionTranscript(_Saved):
    """A discussion as it went: the config it ran, each turn, the tools that were skipped."""

    config: dict[str, Any]
    turns: list[Contribution] = Field(default_factory=list)
    skipped_tools: list[str] = Field(default_factory=list)

    @property
    def rounds(self) -> list[_TurnAsRound]:
        """Each turn as a round of one contribution (what ``context_search`` reads)."""
        return [_TurnAsRound(number, [turn]) for number, turn in enumerate(self.turns, start=1)]


class DebateState(_Saved):
    """A debate's state file: its config (and fingerprint, to refuse resuming another debate), the rounds so far,
    and whether it is complete."""

    fingerprint: str
    config: DebateConfig
    rounds_planned: int = Field(ge=1)
    rounds: list[Round] = Field(default_factory=list)

    @classmethod
    def start(cls, config: DebateConfig) -> DebateState:
        return cls(fingerprint=config.fingerprint(), config=config, rounds_planned=config.rounds)

    def round(self, number: int) -> Round:
        """Round ``number``, created (empty) when it is the next one."""
        while len(self.rounds) < number:
            self.rounds.append(Round(number=len(self.rounds) + 1))
        return self.rounds[number - 1]

    def done(self, number: int, phase: str) -> bool:
        return len(self.rounds) >= number and phase in self.rounds[number - 1].completed_phases

    def next_phase(self) -> tuple[int, str] | None:
        """The first (round, phase) not finished, within the planned rounds; None when there is none."""
        for number in range(1, self.rounds_planned + 1):
            for phase in PHASES:
                if not self.done(number, phase):
                    return number, phase
        return None
