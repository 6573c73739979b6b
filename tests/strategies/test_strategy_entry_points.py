"""A third-party strategy found through the ``tool_selection.strategies`` entry-point group, as installed."""

from importlib.metadata import EntryPoint

from tool_selection import named_registry
from tool_selection.spec import SelectorSpec
from tool_selection.strategies import STRATEGIES, get_strategy, strategy_names
from tool_selection.strategies.native import Native


class PluginStrategy(Native):
    name = "plugin-native"
    summary = "native, shipped by another package"


def test_a_strategy_declared_as_an_entry_point_is_discovered(monkeypatch):
    declared = EntryPoint("plugin-native", f"{__name__}:PluginStrategy", STRATEGIES.group)

    def installed_entry_points(group=None):
        return [declared] if group == STRATEGIES.group else []

    monkeypatch.setattr(named_registry, "entry_points", installed_entry_points)
    monkeypatch.setattr(STRATEGIES, "_entry_point_cache", None)  # read the (patched) metadata again
    try:
        assert "plugin-native" in strategy_names() and "native" in strategy_names()
        assert isinstance(get_strategy("plugin-native"), PluginStrategy)
        assert SelectorSpec(strategy="gate+plugin-native").base_strategy == "plugin-native"
    finally:
        STRATEGIES.unregister("plugin-native")
