"""The treasure_hunt tool set: game behaviour over the shipped world, argument validation, schemas and the suite."""

import json
from importlib import resources
from typing import get_args

import jsonschema
import pytest

from evals.suite import load_suite
from tests.evals.test_domain_suites import alternatives
from tests.tool_sets.test_calculator import assert_failure
from tool_selection import ToolArgumentError, default_registry, load_tool_set
from tool_sets.treasure_hunt import (
    DIRECTIONS,
    TOOL_SET,
    WORLD,
    CheckInventory,
    Dig,
    ExamineLocation,
    GameState,
    GiveHint,
    InspectItem,
    Move,
    SearchArea,
    SearchMap,
    ShowProgress,
    TakeItem,
    TravelTo,
    UseItem,
    matches,
)


@pytest.fixture
def state():
    return GameState()


def run(tool, state, **arguments):
    return tool(state=state).validate_and_execute(**arguments)


def walk(state, *directions):
    for direction in directions:
        result = run(Move, state, direction=direction)
        assert result["ok"], result


def item_ids(items):
    return [i["item_id"] for i in items]


# ------------------------------------------------------------------------------------ the tool set
def test_tool_set_loads_by_name_and_registers_its_tools():
    tool_set = load_tool_set("treasure_hunt")
    assert tool_set is TOOL_SET and tool_set.name == "treasure_hunt"
    assert len(tool_set) >= 7 and "give_hint" in tool_set.names()
    for tool in tool_set:
        assert default_registry().get(tool.NAME) is tool
        assert tool.category == "treasure_hunt"


@pytest.mark.parametrize("tool", TOOL_SET.tools, ids=TOOL_SET.names())
def test_schema_is_valid_json_schema(tool):
    schema = tool.input_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema.get("additionalProperties") is False


def test_argument_enums_follow_the_world():
    assert set(get_args(Move.Arguments.model_fields["direction"].annotation)) == set(DIRECTIONS)
    assert set(get_args(TravelTo.Arguments.model_fields["destination"].annotation)) == set(WORLD.locations)
    assert set(get_args(InspectItem.Arguments.model_fields["item_id"].annotation)) == set(WORLD.items)


def test_world_is_consistent():
    locations = WORLD.locations
    assert WORLD.start in locations and WORLD.light in WORLD.items and WORLD.treasure.tool in WORLD.items
    for location in locations.values():
        exits = {**location.exits, **{d: e.to for d, e in location.locked_exits.items()}}
        assert set(exits) | set(location.walls) <= set(DIRECTIONS)
        assert not set(location.exits) & (set(location.walls) | set(location.locked_exits))
        assert set(exits.values()) <= set(locations)
        assert {s.near for s in location.secrets} <= set(location.landmarks)
    for item in WORLD.items.values():
        assert item.location is None or item.location in locations
        if item.hidden_near:
            assert item.hidden_near in locations[item.location].landmarks
    assert WORLD.treasure.landmark in locations[WORLD.treasure.location].landmarks
    for use in WORLD.uses:
        assert use.item in WORLD.items and use.location in locations and use.sets_flag in WORLD.milestones
    assert len(WORLD.hints) >= 3


def test_matches_uses_every_keyword():
    assert matches("palm trees", "three palm trees") and matches("The Well", "stone well")
    assert not matches("stone skull", "carved skull") and not matches("the", "the stone well")


# ------------------------------------------------------------------------------------ exploring
def test_examine_location_here_and_elsewhere(state):
    here = run(ExamineLocation, state)
    assert here["location_id"] == WORLD.start and here["here"] and here["visited"]
    assert item_ids(here["items"]) == ["coconut", "message_bottle"]  # the hidden ones are not listed
    ruins = run(ExamineLocation, state, location_id="ruins")
    assert ruins["name"] == "Temple Ruins" and not ruins["here"] and not ruins["visited"]
    assert ruins["exits"] == {"east": "Jungle Path"} and "stone idol" in ruins["landmarks"]
    assert "items" not in ruins  # items are only seen on the spot


def test_move_follows_exits_and_refuses_walls(state):
    result = run(Move, state, direction="north")
    assert result["ok"] and result["location_id"] == "jungle_path" and result["first_visit"]
    assert result["exits"] == ["north", "south", "east", "west"]
    back = run(Move, state, direction="south")
    assert back["location_id"] == "cove" and not back["first_visit"]
    wall = run(Move, state, direction="south")
    assert_failure(wall, "no_exit")
    assert "boat" in wall["message"] and wall["suggestions"] == ["north", "east", "west"] and state.location == "cove"
    nowhere = run(Move, state, direction="up")
    assert_failure(nowhere, "no_exit")
    assert "no way up" in nowhere["message"] and nowhere["location_id"] == "cove" and nowhere["direction"] == "up"
    assert state.moves == 2 and state.visited == ["cove", "jungle_path"]


def test_move_through_a_locked_exit_needs_its_flag(state):
    walk(state, "north", "east")
    blocked = run(Move, state, direction="down")
    assert_failure(blocked, "locked_exit")
    assert "rope" in blocked["message"] and "down" not in blocked["suggestions"] and state.location == "village"
    state.flags.append("rope_tied")
    assert run(Move, state, direction="down")["location_id"] == "well_bottom"


def test_travel_to_takes_the_shortest_route_through_visited_places(state):
    walk(state, "east", "north", "west")  # cove -> tide pools -> lighthouse -> village
    result = run(TravelTo, state, destination="cove")  # not through the unvisited jungle path (2 steps)
    assert result["ok"] and result["steps"] == 3
    assert [s["to"] for s in result["route"]] == ["Old Lighthouse", "Tide Pools", "Sandy Cove"]
    assert state.location == "cove" and state.moves == 6
    walk(state, "north")
    assert run(TravelTo, state, destination="village")["steps"] == 1  # now the jungle path is known
    unvisited = run(TravelTo, state, destination="ruins")
    assert_failure(unvisited, "not_visited")
    assert "not been" in unvisited["message"]
    here = run(TravelTo, state, destination="village")
    assert_failure(here, "already_here")
    assert "already" in here["message"]
    assert state.location == "village" and state.moves == 8


def test_search_area_reveals_hidden_items_only_here(state):
    walk(state, "west")
    elsewhere = run(SearchArea, state, focus="broken mast")
    assert elsewhere["ok"] and elsewhere["found_items"] == [] and "nothing" in elsewhere["message"]
    assert "brass_compass" not in item_ids(run(ExamineLocation, state)["items"])
    found = run(SearchArea, state, focus="cabin")
    assert item_ids(found["found_items"]) == ["brass_compass"] and found["searched"] == ["captain's cabin"]
    assert "brass_compass" in item_ids(run(ExamineLocation, state)["items"])
    assert run(SearchArea, state)["found_items"] == []  # already found
    missing = run(SearchArea, state, focus="stone well")
    assert_failure(missing, "unknown_landmark")
    assert missing["suggestions"] == ["broken mast", "captain's cabin"]


def test_search_area_opens_the_secret_cave(state):
    walk(state, "north", "north")
    assert run(Move, state, direction="east")["ok"] is False
    result = run(SearchArea, state)
    assert result["discoveries"] and "cave" in result["discoveries"][0]
    assert run(ExamineLocation, state)["exits"]["east"] == "Cave Behind the Falls"
    assert run(Move, state, direction="east")["location_id"] == "cave"
    dark = run(SearchArea, state)
    assert_failure(dark, "too_dark")
    assert "dark" in dark["message"]


def test_search_map_finds_landmarks_island_wide_with_distances(state):
    result = run(SearchMap, state, landmark="the stone idol")
    assert result["count"] == 1
    assert result["matches"][0] == {"landmark": "stone idol", "location_id": "ruins", "location": "Temple Ruins",
                                    "steps": 2}
    well = run(SearchMap, state, landmark="well")["matches"]
    assert [m["location_id"] for m in well] == ["village"] and well[0]["steps"] == 2
    skull = run(SearchMap, state, landmark="skull")["matches"][0]
    assert skull["location_id"] == "cave" and skull["steps"] is None  # no open way in yet
    assert run(SearchMap, state, landmark="volcano") == {"query": "volcano", "count": 0, "matches": []}


# ------------------------------------------------------------------------------------ items
def test_inspect_item_reads_clues_of_visible_or_carried_items(state):
    bottle = run(InspectItem, state, item_id="message_bottle")
    assert bottle["ok"] and not bottle["carried"] and "well" in bottle["clue"]
    assert state.clues_read == ["message_bottle"]
    assert run(InspectItem, state, item_id="coconut")["clue"] is None
    away = run(InspectItem, state, item_id="shovel")
    assert_failure(away, "not_here")
    assert "rusty shovel" in away["message"]
    walk(state, "west")
    assert run(InspectItem, state, item_id="brass_compass")["ok"] is False  # still hidden


def test_take_item_moves_it_into_the_pack(state):
    taken = run(TakeItem, state, item_id="coconut")
    assert taken["ok"] and item_ids(taken["inventory"]) == ["coconut"]
    assert "coconut" not in item_ids(run(ExamineLocation, state)["items"])
    again = run(TakeItem, state, item_id="coconut")
    assert_failure(again, "already_carried")
    assert "already" in again["message"]
    assert run(InspectItem, state, item_id="coconut")["carried"] is True
    assert_failure(run(TakeItem, state, item_id="shovel"), "not_here")  # it is at the shipwreck
    assert run(TakeItem, state, item_id="iron_chest")["ok"] is False  # not dug up yet


def test_check_inventory_lists_carried_items(state):
    assert run(CheckInventory, state) == {"count": 0, "items": []}
    walk(state, "west")
    run(TakeItem, state, item_id="shovel")
    inventory = run(CheckInventory, state)
    assert inventory["count"] == 1 and inventory["items"][0]["name"] == "rusty shovel"


def test_use_item_needs_the_item_the_place_and_the_target(state):
    state.inventory.append("rope")
    assert_failure(run(UseItem, state, item_id="rope", target="stone well"), "no_effect")  # at the cove
    walk(state, "north", "east")
    assert_failure(run(UseItem, state, item_id="rope", target="chief's hut"), "no_effect")
    not_carried = run(UseItem, state, item_id="old_key", target="well")
    assert_failure(not_carried, "not_carried")
    assert not_carried["message"].startswith("You are not carrying")
    tied = run(UseItem, state, item_id="rope", target="the well")
    assert tied["ok"] and tied["received"] is None and "rope_tied" in state.flags
    used = run(UseItem, state, item_id="rope", target="well")
    assert_failure(used, "already_used")
    assert "already" in used["message"]


def test_dig_needs_a_shovel_and_light_and_finds_only_the_chest(state):
    no_shovel = run(Dig, state)
    assert_failure(no_shovel, "nothing_to_dig_with")
    assert "nothing to dig with" in no_shovel["message"]
    state.inventory.append("shovel")
    plain = run(Dig, state)
    assert plain["ok"] and plain["found"] is None and "Sandy Cove" in plain["message"]
    state.location, state.flags = "cave", ["cave_found"]
    dark = run(Dig, state)
    assert_failure(dark, "too_dark")
    assert "dark" in dark["message"]
    state.inventory.append("lantern")
    result = run(Dig, state)
    assert result["found"] == {"item_id": "iron_chest", "name": "iron chest"}
    assert run(Dig, state)["found"] is None
    heavy = run(TakeItem, state, item_id="iron_chest")
    assert_failure(heavy, "too_heavy")
    assert "too heavy" in heavy["message"]


def test_show_progress_summarises_the_game(state):
    start = run(ShowProgress, state)
    assert start["moves"] == 0 and start["explored"] == f"1/{len(WORLD.locations)}"
    assert start["milestones"] == [] and start["milestones_left"] == len(WORLD.milestones)
    assert start["treasure_found"] is False
    walk(state, "north")
    run(InspectItem, state, item_id="message_bottle")  # not here any more
    progress = run(ShowProgress, state)
    assert progress["location"] == "Jungle Path" and progress["visited"] == ["Sandy Cove", "Jungle Path"]
    assert progress["clues_read"] == []


def test_give_hint_gets_more_specific_then_stays_at_the_last(state):
    hints = [run(GiveHint, state, hint_total=n) for n in range(len(WORLD.hints) + 2)]
    assert [h["hint"] for h in hints[: len(WORLD.hints)]] == list(WORLD.hints)
    assert len({h["hint"] for h in hints}) == len(WORLD.hints)
    assert hints[0]["level"] == 1 and hints[0]["more_specific_available"]
    assert hints[-1]["level"] == len(WORLD.hints) and not hints[-1]["more_specific_available"]
    assert hints[-1]["hint_number"] == len(WORLD.hints) + 2
    assert "carved skull" not in hints[0]["hint"] and "carved skull" in hints[3]["hint"]


def test_full_walkthrough_finds_the_treasure():
    """The game is winnable through the registry, sharing one state between calls."""
    registry, game = TOOL_SET.registry(), GameState()

    def play(name, **arguments):
        result = registry.execute(name, arguments, state=game)
        json.dumps(result)  # results are JSON-serialisable
        assert result.get("ok", True), (name, arguments, result)
        return result

    play("move", direction="west")
    play("take_item", item_id="shovel")
    play("travel_to", destination="cove")
    play("move", direction="east")
    assert item_ids(play("search_area", focus="seaweed")["found_items"]) == ["rope"]
    play("take_item", item_id="rope")
    play("move", direction="north")
    play("take_item", item_id="lantern")
    play("move", direction="west")
    play("use_item", item_id="rope", target="stone well")
    play("move", direction="down")
    assert item_ids(play("search_area")["found_items"]) == ["old_key"]
    play("take_item", item_id="old_key")
    play("move", direction="up")
    play("move", direction="west")
    play("move", direction="north")
    play("search_area", focus="curtain of water")
    play("move", direction="east")
    assert play("dig")["found"]["item_id"] == "iron_chest"
    opened = play("use_item", item_id="old_key", target="iron chest")
    assert opened["received"]["item_id"] == "marigold_gold"
    progress = play("show_progress")
    assert progress["treasure_found"] and progress["milestones_left"] == 0
    assert "marigold_gold" in item_ids(play("check_inventory")["items"])
    assert registry.execute("show_progress", {})["treasure_found"] is False  # a fresh default game


def test_state_is_per_instance_and_the_shipped_world_is_never_written(state):
    shipped = resources.files("tool_sets.treasure_hunt").joinpath("world.json").read_text(encoding="utf-8")
    assert Move().state is not Move().state
    run(TakeItem, state, item_id="coconut")
    assert GameState().item_locations["coconut"] == "cove" and WORLD.items["coconut"].location == "cove"
    assert Move(state=state).state is state
    assert resources.files("tool_sets.treasure_hunt").joinpath("world.json").read_text(encoding="utf-8") == shipped


# ------------------------------------------------------------------------------- invalid arguments
INVALID = [
    (ExamineLocation, {"location_id": "volcano"}, "location_id"),
    (Move, {"direction": "northwest"}, "direction"),
    (Move, {"direction": "n"}, "direction"),
    (Move, {}, "direction"),
    (TravelTo, {"destination": "Sandy Cove"}, "destination"),
    (SearchArea, {"focus": ""}, "focus"),
    (SearchMap, {"landmark": "x"}, "landmark"),
    (SearchMap, {"place": "stone well"}, "place"),
    (InspectItem, {"item_id": "sword"}, "item_id"),
    (TakeItem, {"item_id": "Shovel"}, "item_id"),
    (UseItem, {"item_id": "rope"}, "target"),
    (UseItem, {"item_id": "rope", "target": "well", "times": 2}, "times"),
    (Dig, {"depth": 3}, "depth"),
    (CheckInventory, {"verbose": True}, "verbose"),
    (ShowProgress, {"detail": "full"}, "detail"),
    (GiveHint, {"hint_total": -1}, "hint_total"),
    (GiveHint, {"hint_total": 10**30}, "hint_total"),
    (GiveHint, {"hint_total": "two"}, "hint_total"),
    (GiveHint, {}, "hint_total"),
]


@pytest.mark.parametrize("tool, arguments, field", INVALID, ids=[f"{t.NAME}-{f}" for t, _, f in INVALID])
def test_invalid_arguments_raise_naming_the_field(state, tool, arguments, field):
    before = state.model_dump()
    with pytest.raises(ToolArgumentError) as info:
        run(tool, state, **arguments)
    assert info.value.tool == tool.NAME
    assert field in [p.field for p in info.value.problems]
    assert state.model_dump() == before


def test_every_tool_has_an_invalid_argument_case():
    assert {tool.NAME for tool, _, _ in INVALID} == set(TOOL_SET.names())


# ------------------------------------------------------------------------------------ eval suite
# The checks every domain suite must pass are in tests/evals/test_domain_suites.py; these check the world.
@pytest.mark.parametrize("case", load_suite("treasure_hunt").cases, ids=lambda case: case.id)
def test_suite_expected_places_and_targets_exist_in_the_world(case):
    for call in case.expected_calls:
        for arguments in alternatives(call):
            if "landmark" in arguments:  # expected landmarks exist on the map
                assert run(SearchMap, GameState(), landmark=arguments["landmark"])["count"], (case.id, arguments)
            if "focus" in arguments:
                assert any(matches(arguments["focus"], m) for loc in WORLD.locations.values() for m in loc.landmarks)
            if "target" in arguments:
                assert any(matches(arguments["target"], u.target) for u in WORLD.uses if u.item == arguments["item_id"])
