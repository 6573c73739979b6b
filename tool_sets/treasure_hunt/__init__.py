"""The ``treasure_hunt`` domain: a small text adventure on Gull Island, over a shipped world (``world.json``).

Every tool instance owns a ``GameState`` (a new game by default); pass one state to several tools
(``Move(state=s)``) to play on. Everything is offline and deterministic.
"""

from tool_selection import ToolSet
from tool_sets.treasure_hunt.game import DIRECTIONS, WORLD, GameState, World, load_world, matches
from tool_sets.treasure_hunt.tools import (
    TOOLS,
    CheckInventory,
    Dig,
    ExamineLocation,
    GiveHint,
    InspectItem,
    Move,
    SearchArea,
    SearchMap,
    ShowProgress,
    TakeItem,
    TravelTo,
    TreasureHuntTool,
    UseItem,
)

__all__ = [
    "DIRECTIONS", "TOOL_SET", "TOOLS", "WORLD", "CheckInventory", "Dig", "ExamineLocation", "GameState", "GiveHint",
    "InspectItem", "Move", "SearchArea", "SearchMap", "ShowProgress", "TakeItem", "TravelTo", "TreasureHuntTool",
    "UseItem", "World", "load_world", "matches",
]

TOOL_SET = ToolSet(
    name="treasure_hunt",
    description="A treasure-hunt text adventure: explore the island, search for hidden items and clues, pick up "
                "and use items, dig for the buried chest, track progress and ask for hints.",
    tools=TOOLS,
)
