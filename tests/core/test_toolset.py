"""Tool sets: class references, composition and loading by name."""

from importlib.metadata import EntryPoint

import pytest

from tests.core.tools_fixture import Add, Echo, Now
from tool_selection import (
    BaseTool,
    DuplicateToolError,
    ToolSelectionError,
    ToolSet,
    ToolSetConfig,
    UnknownToolError,
    available_tool_sets,
    load_tool_set,
)


def make_set() -> ToolSet:
    return ToolSet(name="basic", tools=(Echo, Add, Now))


def test_tool_set_holds_classes_in_order():
    tool_set = make_set()
    assert tool_set.names() == ["echo", "add_numbers", "get_time"]
    assert tool_set.get("add_numbers") is Add
    assert Echo in tool_set and "echo" in tool_set
    assert tool_set.registry().names() == ["add_numbers", "echo", "get_time"]


def test_tool_set_rejects_name_strings_and_duplicates():
    with pytest.raises(TypeError, match="tool sets hold tool classes"):
        ToolSet(name="bad", tools=("echo",))

    class Echo2(BaseTool):
        NAME = "echo"
        description = "Clash."

    with pytest.raises(DuplicateToolError, match="tool set 'bad'"):
        ToolSet(name="bad", tools=(Echo, Echo2))


def test_filtered_without_prefixed_merged():
    tool_set = make_set()
    assert tool_set.filtered(lambda t: t.NAME.startswith("e")).names() == ["echo"]
    assert tool_set.filtered([Now, Echo]).names() == ["echo", "get_time"]
    assert tool_set.without(Add).names() == ["echo", "get_time"]

    prefixed = tool_set.prefixed("lab")
    assert prefixed.names() == ["lab_echo", "lab_add_numbers", "lab_get_time"]
    assert prefixed.get("lab_echo")().validate_and_execute(message="x") == "x"
    assert Echo.NAME == "echo"  # originals untouched

    merged = tool_set.merged(prefixed)
    assert len(merged) == 6 and merged.name == "basic+lab_basic"
    assert len(tool_set + tool_set) == 3  # the same classes merge without conflict

    class OtherEcho(BaseTool):
        NAME = "echo"
        description = "A different tool with a clashing name."

    with pytest.raises(DuplicateToolError, match="OtherEcho"):
        tool_set.merged(ToolSet(name="other", tools=(OtherEcho,)))


def test_filtered_with_a_foreign_class_fails():
    class Stranger(BaseTool):
        NAME = "stranger"
        description = "Not in the set."

    with pytest.raises(UnknownToolError, match="stranger"):
        make_set().filtered([Stranger])


def test_load_tool_set_by_name_and_unknown_names():
    names = available_tool_sets()
    assert {"treasure_hunt", "events", "ecommerce", "finance", "language"} <= set(names)
    with pytest.raises(ToolSelectionError, match="Unknown tool set 'nope'"):
        load_tool_set("nope")


@pytest.mark.parametrize("name", ["treasure_hunt", "events", "ecommerce", "finance", "language"])
def test_domain_sets_have_at_least_six_tools(name):
    tool_set = load_tool_set(name)
    assert tool_set.name == name
    assert len(tool_set) >= 6


def test_tool_set_config_builds_and_checks_names():
    config = ToolSetConfig(sets=["finance", "language"], exclude=["translate_text"], prefix="x")
    built = config.build()
    assert "x_translate_text" not in built.names()
    assert all(n.startswith("x_") for n in built.names())
    with pytest.raises(UnknownToolError, match="Did you mean 'translate_text'"):
        ToolSetConfig(sets=["language"], include=["translate_txt"]).build()


def test_entry_points_load_their_set_and_a_missing_attribute_is_explained(monkeypatch):
    from tool_selection import toolset

    group = toolset.ENTRY_POINT_GROUP
    monkeypatch.setattr(toolset.TOOL_SETS, "_entry_points", lambda: {
        name: EntryPoint(name, value, group) for name, value in [("mine", "tests.core.test_toolset:PLUGIN_SET"),
                                                                  ("broken", "tests.core.test_toolset:NOT_THERE"),
                                                                  ("wrong", "tests.core.test_toolset:Echo")]})
    try:
        assert "mine" in available_tool_sets() and load_tool_set("mine") is PLUGIN_SET
    finally:
        toolset.TOOL_SETS.unregister("mine")
    with pytest.raises(ToolSelectionError, match="'tests.core.test_toolset:NOT_THERE' .* does not load: module "
                                                 "'tests.core.test_toolset' has no attribute 'NOT_THERE'"):
        load_tool_set("broken")
    with pytest.raises(ToolSelectionError, match="is not a ToolSet; define TOOL_SET = ToolSet"):
        load_tool_set("wrong")


PLUGIN_SET = ToolSet(name="mine", tools=(Echo,))
