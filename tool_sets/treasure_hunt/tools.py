"""Treasure-hunt tools: explore Gull Island, find clues and dig up the Marigold's gold (offline, deterministic).

Impossible actions (walking into a cliff, taking what is not there) return the shared failure shape
(``tool_selection.tool_failures``): ``{"ok": False, "error": <code>, "message": <what happened>, "suggestions": [...]}``,
with codes such as ``no_exit``, ``locked_exit``, ``too_dark``, ``not_here`` or ``no_effect``. Malformed arguments
raise ``ToolArgumentError`` before any tool runs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tool_selection import BaseTool, StrictArguments, register_tool
from tool_selection.tool_failures import tool_failure
from tool_sets.treasure_hunt.game import DIRECTIONS, WORLD, GameState, item_view, matches

Direction = Literal[DIRECTIONS]
LocationId = Literal[tuple(WORLD.locations)]
ItemId = Literal[tuple(WORLD.items)]

_HINT_COUNT = len(WORLD.hints)


class TreasureHuntTool(BaseTool, abstract=True):
    """Shared game state of the treasure-hunt tools."""

    category = "treasure_hunt"
    state: GameState = Field(default_factory=GameState, description="The game in progress.")

    def _too_dark(self) -> dict[str, Any] | None:
        if self.state.can_see():
            return None
        return tool_failure("too_dark", f"It is too dark in the {self.state.here.name} to do that; bring a light.",
                            location_id=self.state.location)


@register_tool
class ExamineLocation(TreasureHuntTool):
    NAME = "examine_location"
    description = (
        "Describe a place on the island: its description, exits and landmarks, and (for the player's current "
        "location) the items lying in plain sight. Omit location_id for where the player stands. Describes "
        "places, not items (inspect_item); does not uncover hidden things (search_area)."
    )

    class Arguments(StrictArguments):
        location_id: LocationId | None = Field(default=None, description="Place to describe; omit for here.")

    def execute(self, location_id: str | None) -> dict[str, Any]:
        state = self.state
        location_id = location_id or state.location
        location = WORLD.locations[location_id]
        here = location_id == state.location
        result = {
            "ok": True, "location_id": location_id, "name": location.name, "description": location.description,
            "here": here, "visited": location_id in state.visited,
            "exits": {d: WORLD.locations[to].name for d, to in state.open_exits(location_id).items()},
            "landmarks": list(location.landmarks),
        }
        if here:
            result["items"] = [item_view(i) for i in state.visible_items()]
            if not state.can_see():
                result["note"] = "It is too dark to see anything here; bring a light."
        return result


@register_tool
class Move(TreasureHuntTool):
    NAME = "move"
    description = (
        "Walk one step from the current location in a compass direction (or up/down). For a place already "
        "visited several steps away, use travel_to."
    )

    class Arguments(StrictArguments):
        direction: Direction = Field(description="Direction to walk: north, south, east, west, up or down.")

    def execute(self, direction: str) -> dict[str, Any]:
        state, location = self.state, self.state.here
        exits = state.open_exits()
        if direction not in exits:
            locked = location.locked_exits.get(direction)
            message = (locked.reason if locked else location.walls.get(direction)
                       or f"There is no way {direction} from the {location.name}.")
            return tool_failure("locked_exit" if locked else "no_exit", message, suggestions=list(exits),
                                location_id=state.location, direction=direction)
        came_from = location.name
        first_visit = state.enter(exits[direction])
        arrived = state.here
        return {"ok": True, "from": came_from, "location_id": state.location, "name": arrived.name,
                "description": arrived.description, "exits": list(state.open_exits()), "first_visit": first_visit}


@register_tool
class TravelTo(TreasureHuntTool):
    NAME = "travel_to"
    description = (
        "Walk to a named place the player has already visited, along the shortest known route (several steps "
        "at once). Unvisited places must be reached step by step with move."
    )

    class Arguments(StrictArguments):
        destination: LocationId = Field(description="Id of a previously visited place, e.g. 'shipwreck'.")

    def execute(self, destination: str) -> dict[str, Any]:
        state = self.state
        name = WORLD.locations[destination].name
        if destination == state.location:
            return tool_failure("already_here", f"You are already at the {name}.", location_id=destination)
        if destination not in state.visited:
            return tool_failure("not_visited", f"You have not been to the {name} yet; explore there step by step "
                                               "with move.", location_id=destination)
        route = state.route(state.location, destination, within=set(state.visited))
        if route is None:
            return tool_failure("no_known_route", f"You know no open route to the {name} from here.",
                                location_id=destination)
        state.enter(destination, steps=len(route))
        return {"ok": True, "location_id": destination, "name": name, "steps": len(route),
                "route": [{"direction": d, "to": WORLD.locations[to].name} for d, to in route]}


@register_tool
class SearchArea(TreasureHuntTool):
    NAME = "search_area"
    description = (
        "Search the player's current location closely for hidden items and secret passages, optionally only "
        "around one of its landmarks. Searches here only; to find where a landmark is on the island, use "
        "search_map."
    )

    class Arguments(StrictArguments):
        focus: str | None = Field(default=None, min_length=2, max_length=60,
                                  description="A landmark here to search around, e.g. 'broken mast'; omit for all.")

    def execute(self, focus: str | None) -> dict[str, Any]:
        state, location = self.state, self.state.here
        if dark := self._too_dark():
            return dark
        spots = [m for m in location.landmarks if focus is None or matches(focus, m)]
        if not spots:
            return tool_failure("unknown_landmark", f"There is no {focus!r} to search at the {location.name}.",
                                suggestions=location.landmarks, location_id=state.location)
        found = [i for i, where in state.item_locations.items()
                 if where == state.location and WORLD.items[i].hidden_near in spots and i not in state.found]
        state.found.extend(found)
        discoveries = []
        for secret in location.secrets:
            if secret.near in spots and secret.flag not in state.flags:
                state.set_flag(secret.flag)
                discoveries.append(secret.message)
        return {"ok": True, "location_id": state.location, "searched": spots,
                "found_items": [item_view(i) for i in found], "discoveries": discoveries,
                "message": "You find something!" if found or discoveries else "You find nothing new."}


@register_tool
class SearchMap(TreasureHuntTool):
    NAME = "search_map"
    description = (
        "Search the whole island map for a landmark by name (e.g. 'stone well', 'carved skull') and say which "
        "places have it and how many steps away they are. Does not search for hidden items (search_area)."
    )

    class Arguments(StrictArguments):
        landmark: str = Field(min_length=2, max_length=60, description="Landmark to look for, e.g. 'stone idol'.")

    def execute(self, landmark: str) -> dict[str, Any]:
        state = self.state
        found = []
        for location_id, location in WORLD.locations.items():
            for name in location.landmarks:
                if matches(landmark, name):
                    route = state.route(state.location, location_id)
                    found.append({"landmark": name, "location_id": location_id, "location": location.name,
                                  "steps": None if route is None else len(route)})
        found.sort(key=lambda m: (m["steps"] is None, m["steps"] or 0, m["location_id"]))
        return {"query": landmark, "count": len(found), "matches": found}


@register_tool
class InspectItem(TreasureHuntTool):
    NAME = "inspect_item"
    description = (
        "Look closely at one item the player carries or can see here, and read any clue written on it. For "
        "places, use examine_location."
    )

    class Arguments(StrictArguments):
        item_id: ItemId = Field(description="Id of the item, e.g. 'brass_compass'.")

    def execute(self, item_id: str) -> dict[str, Any]:
        state, item = self.state, WORLD.items[item_id]
        carried = state.carrying(item_id)
        if not carried and item_id not in state.visible_items():
            return tool_failure("not_here", f"You don't see the {item.name} here or in your pack.", item_id=item_id)
        if item.clue and item_id not in state.clues_read:
            state.clues_read.append(item_id)
        return {"ok": True, "item_id": item_id, "name": item.name, "description": item.description,
                "carried": carried, "portable": item.portable, "clue": item.clue}


@register_tool
class TakeItem(TreasureHuntTool):
    NAME = "take_item"
    description = "Pick up an item the player can see at the current location and put it in the pack."

    class Arguments(StrictArguments):
        item_id: ItemId = Field(description="Id of the item to pick up, e.g. 'shovel'.")

    def execute(self, item_id: str) -> dict[str, Any]:
        state, item = self.state, WORLD.items[item_id]
        if state.carrying(item_id):
            return tool_failure("already_carried", f"You are already carrying the {item.name}.", item_id=item_id)
        if item_id not in state.visible_items():
            return tool_failure("not_here", f"You don't see the {item.name} here.", item_id=item_id)
        if not item.portable:
            return tool_failure("too_heavy", f"The {item.name} is far too heavy to carry.", item_id=item_id)
        del state.item_locations[item_id]
        state.inventory.append(item_id)
        return {"ok": True, "taken": item_view(item_id), "inventory": [item_view(i) for i in state.inventory]}


@register_tool
class UseItem(TreasureHuntTool):
    NAME = "use_item"
    description = (
        "Use an item from the pack on something at the current location, e.g. tie the rope to a well or open "
        "a lock with a key."
    )

    class Arguments(StrictArguments):
        item_id: ItemId = Field(description="Id of a carried item, e.g. 'rope'.")
        target: str = Field(min_length=2, max_length=60, description="What to use it on, e.g. 'stone well'.")

    def execute(self, item_id: str, target: str) -> dict[str, Any]:
        state, item = self.state, WORLD.items[item_id]
        if not state.carrying(item_id):
            return tool_failure("not_carried", f"You are not carrying the {item.name}.", item_id=item_id)
        if dark := self._too_dark():
            return dark
        use = next((u for u in WORLD.uses if u.item == item_id and u.location == state.location
                    and matches(target, u.target)), None)
        if use is None or (use.requires_flag and use.requires_flag not in state.flags):
            return tool_failure("no_effect", f"Using the {item.name} on {target!r} does nothing here.",
                                item_id=item_id, target=target)
        if use.sets_flag in state.flags:
            return tool_failure("already_used", f"You have already used the {item.name} on the {use.target}.",
                                item_id=item_id, target=use.target)
        state.set_flag(use.sets_flag)
        if use.gives:
            state.inventory.append(use.gives)
        return {"ok": True, "message": use.message, "received": item_view(use.gives) if use.gives else None}


@register_tool
class Dig(TreasureHuntTool):
    NAME = "dig"
    description = "Dig into the ground at the player's current location with a carried shovel."

    def execute(self) -> dict[str, Any]:
        state, treasure = self.state, WORLD.treasure
        if not state.carrying(treasure.tool):
            return tool_failure("nothing_to_dig_with", "You have nothing to dig with.")
        if dark := self._too_dark():
            return dark
        if state.location != treasure.location:
            return {"ok": True, "found": None, "message": f"You dig a hole at the {state.here.name} but find nothing."}
        if treasure.flag in state.flags:
            return {"ok": True, "found": None, "message": "Only the hole you already dug is here."}
        state.set_flag(treasure.flag)
        state.item_locations[treasure.reveals] = state.location
        return {"ok": True, "found": item_view(treasure.reveals), "message": treasure.message}


@register_tool
class CheckInventory(TreasureHuntTool):
    NAME = "check_inventory"
    description = "List the items the player is carrying. For overall game progress, use show_progress."

    def execute(self) -> dict[str, Any]:
        items = [{**item_view(i), "description": WORLD.items[i].description} for i in self.state.inventory]
        return {"count": len(items), "items": items}


@register_tool
class ShowProgress(TreasureHuntTool):
    NAME = "show_progress"
    description = (
        "Summarise the player's progress: moves made, places visited, clues read, milestones reached and "
        "whether the treasure has been found. For the items carried, use check_inventory."
    )

    def execute(self) -> dict[str, Any]:
        state = self.state
        return {
            "location": state.here.name, "moves": state.moves,
            "visited": [WORLD.locations[v].name for v in state.visited],
            "explored": f"{len(state.visited)}/{len(WORLD.locations)}",
            "clues_read": [WORLD.items[i].name for i in state.clues_read],
            "items_carried": len(state.inventory),
            "milestones": [text for flag, text in WORLD.milestones.items() if flag in state.flags],
            "milestones_left": sum(flag not in state.flags for flag in WORLD.milestones),
            "treasure_found": "treasure_found" in state.flags,
        }


@register_tool
class GiveHint(TreasureHuntTool):
    NAME = "give_hint"
    description = (
        "Give the player a hint about where the treasure is and how to get it. Hints get more specific the "
        "more hints the player has already received."
    )

    class Arguments(StrictArguments):
        hint_total: int = Field(ge=0, le=1000,
                                description="How many hints the player has received so far (0 for the first).")

    def execute(self, hint_total: int) -> dict[str, Any]:
        level = min(hint_total, _HINT_COUNT - 1)
        return {"hint_number": hint_total + 1, "level": level + 1, "max_level": _HINT_COUNT,
                "hint": WORLD.hints[level], "more_specific_available": level < _HINT_COUNT - 1}


TOOLS = (ExamineLocation, Move, TravelTo, SearchArea, SearchMap, InspectItem, TakeItem, UseItem, Dig,
         CheckInventory, ShowProgress, GiveHint)
