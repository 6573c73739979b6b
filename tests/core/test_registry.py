"""The registry: registration, duplicates, unknown names and structured execution results."""

import pytest

from tests.core.tools_fixture import Add, Echo, Now
from tool_selection import (
    BaseTool,
    DuplicateToolError,
    ToolArgumentError,
    ToolRegistry,
    UnknownToolError,
    default_registry,
    register_tool,
)


def test_register_tool_works_bare_and_with_arguments():
    registry = ToolRegistry("test")
    assert register_tool(registry=registry)(Echo) is Echo
    assert registry.names() == ["echo"]
    assert len(registry) == 1 and "echo" in registry


def test_bare_decorator_uses_the_default_registry():
    class Ping(BaseTool):
        NAME = "ping_registry_test"
        description = "Reply pong."

        def execute(self) -> str:
            return "pong"

    assert register_tool(Ping) is Ping
    try:
        assert default_registry().execute("ping_registry_test") == "pong"
    finally:
        default_registry().unregister("ping_registry_test")


def test_register_tool_rejects_non_classes():
    with pytest.raises(TypeError, match="expects a BaseTool subclass"):
        register_tool("echo")


def test_duplicate_names_name_both_classes_and_the_fix():
    registry = ToolRegistry("dups", [Echo])

    class OtherEcho(BaseTool):
        NAME = "echo"
        description = "Another echo."

    with pytest.raises(DuplicateToolError) as info:
        registry.register(OtherEcho)
    message = str(info.value)
    assert "tests.core.tools_fixture.Echo" in message
    assert "OtherEcho" in message
    assert "Rename one of them" in message
    registry.register(OtherEcho, replace=True)
    assert registry.get("echo") is OtherEcho


def test_unknown_names_list_close_matches():
    registry = ToolRegistry("r", [Echo, Add, Now])
    with pytest.raises(UnknownToolError) as info:
        registry.get("add_number")
    assert info.value.suggestions == ["add_numbers"]
    assert "Did you mean 'add_numbers'?" in str(info.value)
    with pytest.raises(UnknownToolError, match="Known tools: add_numbers, echo, get_time"):
        registry.get("zzz")


def test_isolated_registries_do_not_share_tools():
    a, b = ToolRegistry("a", [Echo]), ToolRegistry("b")
    assert "echo" in a and "echo" not in b
    assert "echo" not in default_registry() or default_registry().get("echo") is not Echo


def test_execute_validates_and_try_execute_returns_structured_errors():
    registry = ToolRegistry("r", [Echo, Now])
    assert registry.execute("echo", {"message": "a", "mode": "shout"}) == "A"
    assert registry.execute("get_time", clock="07:00") == "07:00"
    with pytest.raises(ToolArgumentError):
        registry.execute("echo", {"times": 0})
    bad = registry.try_execute("echo", {"message": "a", "times": 0})
    assert bad["ok"] is False and bad["error"] == "invalid_arguments"
    assert bad["problems"][0]["field"] == "times"
    unknown = registry.try_execute("ecko", {})
    assert unknown["error"] == "unknown_tool" and unknown["suggestions"] == ["echo"]
    assert registry.try_execute("echo", {"message": "x"}) == {"ok": True, "result": "x"}


def test_subset_keeps_only_named_tools():
    registry = ToolRegistry("r", [Echo, Add, Now]).subset(["echo", "get_time"])
    assert registry.names() == ["echo", "get_time"]
    with pytest.raises(UnknownToolError):
        ToolRegistry("r", [Echo]).subset(["nope"])


def test_the_revision_changes_with_the_tools_and_only_with_them():
    registry = ToolRegistry("test", [Echo])
    first = registry.revision
    registry.get("echo"), registry.names(), registry.subset(["echo"])
    assert registry.revision is first
    registry.register(Add)
    second = registry.revision
    assert second is not first
    registry.unregister("add_numbers")
    assert registry.revision is not second and registry.revision is not first  # the same tools, a new token


def test_a_copy_has_its_own_tools_and_revision():
    import copy
    import pickle

    registry = ToolRegistry("test", [Echo])
    duplicate = copy.copy(registry)
    duplicate.register(Add)
    assert registry.names() == ["echo"] and registry.revision is not duplicate.revision
    assert pickle.loads(pickle.dumps(registry)).revision is not registry.revision
