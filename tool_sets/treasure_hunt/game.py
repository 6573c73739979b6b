"""The treasure-hunt world (shipped read-only in ``world.json``) and the game state the tools act on."""

from __future__ import annotations

import re
from collections import deque
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DIRECTIONS", "GameState", "Item", "ItemUse", "Location", "WORLD", "World", "item_view", "load_world", "matches",
]

DIRECTIONS = ("north", "south", "east", "west", "up", "down")


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LockedExit(_Data):
    to: str
    flag: str
    reason: str


class Secret(_Data):
    near: str
    flag: str
    message: str


class Location(_Data):
    name: str
    description: str
    exits: dict[str, str] = {}
    walls: dict[str, str] = {}
    locked_exits: dict[str, LockedExit] = {}
    landmarks: tuple[str, ...] = ()
    secrets: tuple[Secret, ...] = ()
    dark: bool = False


class Item(_Data):
    name: str
    description: str
    location: str | None  # where it starts; None: appears only when an action creates it
    hidden_near: str | None = None  # the landmark it is hidden by, until search_area finds it
    portable: bool = True
    clue: str | None = None


class ItemUse(_Data):
    item: str
    target: str
    location: str
    requires_flag: str | None = None
    sets_flag: str
    gives: str | None = None
    message: str


class Treasure(_Data):
    location: str
    landmark: str
    tool: str
    reveals: str
    flag: str
    message: str


class World(_Data):
    title: str
    intro: str
    start: str
    light: str
    locations: dict[str, Location]
    items: dict[str, Item]
    treasure: Treasure
    uses: tuple[ItemUse, ...]
    milestones: dict[str, str]
    hints: tuple[str, ...]


@cache
def load_world() -> World:
    """The shipped world (immutable; cached)."""
    text = resources.files(__package__).joinpath("world.json").read_text(encoding="utf-8")
    return World.model_validate_json(text)


WORLD = load_world()

_STOPWORDS = frozenset("a an the of to at on in near by around any anywhere is where there".split())


def _words(text: str) -> set[str]:
    """Lower-cased words with a crude plural stem, without stopwords."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in words if len(w) > 1 and w not in _STOPWORDS}


def matches(query: str, text: str) -> bool:
    """Whether every keyword of ``query`` occurs in ``text`` (``"palm trees"`` matches ``"three palm trees"``)."""
    wanted = _words(query)
    return bool(wanted) and wanted <= _words(text)


class GameState(BaseModel):
    """Everything that changes during one game. A fresh instance is a new game at the start location.

    Share one instance between tools (``Move(state=s)``, ``registry.execute(..., state=s)``) to play on.
    """

    location: str = Field(default_factory=lambda: WORLD.start)
    inventory: list[str] = Field(default_factory=list)
    item_locations: dict[str, str] = Field(
        default_factory=lambda: {i: item.location for i, item in WORLD.items.items() if item.location})
    found: list[str] = Field(default_factory=list, description="Hidden items discovered by searching.")
    flags: list[str] = Field(default_factory=list)
    visited: list[str] = Field(default_factory=lambda: [WORLD.start])
    clues_read: list[str] = Field(default_factory=list)
    moves: int = 0

    # ------------------------------------------------------------------ views
    @property
    def here(self) -> Location:
        return WORLD.locations[self.location]

    def carrying(self, item_id: str) -> bool:
        return item_id in self.inventory

    def can_see(self, location_id: str | None = None) -> bool:
        """Whether the location (default: here) is lit, or the player carries the light."""
        return not WORLD.locations[location_id or self.location].dark or self.carrying(WORLD.light)

    def visible_items(self) -> list[str]:
        """Items lying here that the player can see (hidden ones only once found)."""
        if not self.can_see():
            return []
        return [i for i, where in self.item_locations.items()
                if where == self.location and (WORLD.items[i].hidden_near is None or i in self.found)]

    def open_exits(self, location_id: str | None = None) -> dict[str, str]:
        """Direction to destination for every passable exit, unlocked ones included."""
        location = WORLD.locations[location_id or self.location]
        exits = dict(location.exits)
        exits.update({d: e.to for d, e in location.locked_exits.items() if e.flag in self.flags})
        return {d: exits[d] for d in DIRECTIONS if d in exits}

    def route(self, start: str, goal: str, within: set[str] | None = None) -> list[tuple[str, str]] | None:
        """Shortest list of ``(direction, location)`` steps from ``start`` to ``goal`` (None: no route)."""
        previous: dict[str, tuple[str, str] | None] = {start: None}
        queue = deque([start])
        while queue:
            current = queue.popleft()
            if current == goal:
                steps = []
                while previous[current] is not None:
                    direction, before = previous[current]
                    steps.append((direction, current))
                    current = before
                return steps[::-1]
            for direction, nxt in self.open_exits(current).items():
                if nxt not in previous and (within is None or nxt in within):
                    previous[nxt] = (direction, current)
                    queue.append(nxt)
        return None

    # -------------------------------------------------------------- mutations
    def enter(self, location_id: str, steps: int = 1) -> bool:
        """Move the player; returns whether it is a first visit."""
        self.location = location_id
        self.moves += steps
        first = location_id not in self.visited
        if first:
            self.visited.append(location_id)
        return first

    def set_flag(self, flag: str) -> None:
        if flag not in self.flags:
            self.flags.append(flag)


def item_view(item_id: str) -> dict[str, str]:
    return {"item_id": item_id, "name": WORLD.items[item_id].name}
