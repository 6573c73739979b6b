"""The one registry class behind strategies, stuck detectors, optimizers, retrievers and tool sets."""

import sys
from importlib.metadata import EntryPoint

import pytest

from tool_selection.errors import ToolSelectionError
from tool_selection.named_registry import Registry, format_listing


class Widget:
    name = "widget"


class Gadget:
    name = "gadget"


class BadName(Exception):
    pass


def _check(entry):
    if not isinstance(entry, type):
        raise TypeError(f"a thing is a class, got {entry!r}")


def test_decorators_bare_and_with_arguments_return_what_they_register():
    things = Registry("thing", check=_check)
    assert things.register(Widget) is Widget
    assert things.register(name="doohickey")(Gadget) is Gadget
    assert things.names() == ["widget", "doohickey"] and things.get("doohickey") is Gadget
    assert things["widget"] is Widget and "widget" in things and len(things) == 2
    with pytest.raises(TypeError, match="an entry or keyword arguments, not both"):
        things.register(Widget, name="other")
    with pytest.raises(TypeError, match="a thing is a class, got 3"):
        things.register(3)

    class Nameless:
        pass

    with pytest.raises(TypeError, match="Nameless has no name attribute; give it one, or register it with "
                                        "register\\(name=...\\)"):
        things.register(Nameless)


def test_a_taken_name_says_who_holds_it_and_the_same_entry_again_is_fine():
    things = Registry("thing", conflict_error=BadName)
    things.register(Widget)
    assert things.register(Widget) is Widget

    class Impostor:
        name = "widget"

    with pytest.raises(BadName, match=r"Thing name 'widget' is taken by Widget \(tests.core.test_named_registry\); "
                                      r"give .*Impostor \(tests.core.test_named_registry\) another name\."):
        things.register(Impostor)


def test_unknown_names_suggest_close_ones_and_list_every_name():
    things = Registry("thing", error=BadName, hint="See the docs.")
    things.register(Widget)
    things.register(Gadget)
    with pytest.raises(BadName) as error:
        things.get("widgte")
    assert str(error.value) == "Unknown thing 'widgte' (did you mean 'widget'?); choose one of: widget, gadget. See the docs."
    with pytest.raises(BadName, match="Unknown things 'q', 'zz'; choose one of"):
        things.check_names(["widget", "q", " zz "])
    with pytest.raises(BadName, match="No thing given; choose one or more of: widget, gadget."):
        things.check_names([" "])
    assert things.check_names([" gadget", "widget", "gadget"]) == ["gadget", "widget"]
    assert things.unregister("gadget") is Gadget and things.names() == ["widget"]


def test_builtins_are_imported_on_first_lookup(monkeypatch):
    monkeypatch.delitem(sys.modules, "tests.core.tools_fixture", raising=False)
    things = Registry("tool module", builtins=["tests.core.tools_fixture"])
    assert "tests.core.tools_fixture" not in sys.modules
    assert things.names() == [] and "tests.core.tools_fixture" in sys.modules


def test_entry_points_are_listed_without_loading_and_loaded_when_asked_for(monkeypatch):
    monkeypatch.delitem(sys.modules, "tests.core.tools_fixture", raising=False)
    things = Registry("thing", group="tests.things", check=_check)
    monkeypatch.setattr(things, "_entry_points", lambda: {
        "echo": EntryPoint("echo", "tests.core.tools_fixture:Echo", "tests.things"),
        "gone": EntryPoint("gone", "tests.core.tools_fixture:Gone", "tests.things"),
        "value": EntryPoint("value", "tests.core.test_named_registry:VALUE", "tests.things")})
    things.register(Widget)
    assert things.names() == ["widget", "echo", "gone", "value"]
    assert "tests.core.tools_fixture" not in sys.modules
    assert things.get("echo").NAME == "echo"
    with pytest.raises(ToolSelectionError, match="Thing 'gone': its entry point 'tests.core.tools_fixture:Gone' "
                                                 "\\(group 'tests.things'\\) does not load"):
        things.get("gone")
    with pytest.raises(ToolSelectionError, match="Thing 'value': .*a thing is a class, got 3"):
        things.get("value")


def test_an_empty_registry_with_a_group_says_to_install_the_project():
    things = Registry("thing", group="tests.nothing.here")
    with pytest.raises(ToolSelectionError, match="none is registered \\(install the project"):
        things.get("x")


def test_a_listing_aligns_names_and_summaries():
    things = Registry("thing")
    things.register(Widget)
    things.register(Gadget)
    assert things.listing(lambda cls: cls.__name__.lower() + "s") == [("widget", "widgets"), ("gadget", "gadgets")]
    assert format_listing([("a", "first"), ("long", "second")], indent="  ") == "  a     first\n  long  second"


VALUE = 3
