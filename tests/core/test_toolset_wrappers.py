"""Tool-set combinators as wrappers: each holds the set it wraps, and renamed tools live only as long as it."""

import gc
import importlib
import pkgutil
import weakref

import pytest

import tool_selection.toolset as toolset_package
from tests.core.tools_fixture import Add, Echo, Now
from tool_selection import BaseTool, DuplicateToolError, ToolSet, UnknownToolError
from tool_selection.toolset import (
    DescribedToolSet,
    FilteredToolSet,
    MergedToolSet,
    PrefixedToolSet,
    RenamedToolSet,
    WrapperToolSet,
    same_tool,
)

BASIC = ToolSet(name="basic", tools=(Echo, Add, Now), description="Three small tools.")


def test_each_combinator_returns_its_wrapper_holding_the_wrapped_set():
    filtered = BASIC.filtered([Echo, Now])
    prefixed = BASIC.prefixed("lab")
    renamed = BASIC.renamed({"echo": "repeat"})
    merged = BASIC.merged(prefixed)
    assert isinstance(filtered, FilteredToolSet) and filtered.wrapped is BASIC and filtered.keep == (Echo, Now)
    assert isinstance(BASIC.without(Add), FilteredToolSet)
    assert isinstance(prefixed, PrefixedToolSet) and prefixed.wrapped is BASIC and prefixed.prefix == "lab"
    assert isinstance(prefixed, RenamedToolSet) and prefixed.new_names["echo"] == "lab_echo"
    assert isinstance(renamed, RenamedToolSet) and renamed.wrapped is BASIC
    assert isinstance(merged, MergedToolSet) and merged.tool_sets == (BASIC, prefixed)
    assert all(isinstance(s, ToolSet) for s in (filtered, prefixed, renamed, merged))
    assert filtered.description == prefixed.description == renamed.description == BASIC.description
    assert merged.description == ""


def test_wrappers_compose_and_keep_the_wrapped_order():
    chained = BASIC.without(Now).prefixed("lab").renamed({"lab_echo": "lab_say"})
    assert chained.names() == ["lab_say", "lab_add_numbers"]
    assert chained.name == "lab_basic-without-renamed"
    assert isinstance(chained.wrapped, PrefixedToolSet) and isinstance(chained.wrapped.wrapped, FilteredToolSet)
    assert chained.wrapped.wrapped.wrapped is BASIC
    assert chained.registry().execute("lab_say", {"message": "hi", "times": 2}) == "hi hi"
    assert chained.registry().names() == ["lab_add_numbers", "lab_say"]


def test_a_renamed_tool_keeps_schema_description_and_execution():
    renamed = BASIC.renamed({"echo": "repeat"})
    tool = renamed.get("repeat")
    assert issubclass(tool, Echo) and tool.NAME == "repeat" and Echo.NAME == "echo"
    assert tool.input_schema() == Echo.input_schema() and tool.description == Echo.description
    assert tool.schema_hash() != Echo.schema_hash()  # the name is part of what a model sees
    assert tool().validate_and_execute(message="x", mode="shout") == "X"
    assert renamed.get("add_numbers") is Add  # tools not named keep their class
    assert renamed.names() == ["repeat", "add_numbers", "get_time"]


def test_names_can_be_swapped():
    swapped = BASIC.renamed({"echo": "add_numbers", "add_numbers": "echo"})
    assert swapped.names() == ["add_numbers", "echo", "get_time"]
    assert swapped.registry().execute("echo", {"a": 1, "b": 2}) == 3


def test_a_new_name_that_another_tool_holds_is_a_clear_error():
    with pytest.raises(DuplicateToolError, match=r"'add_numbers' in tool set 'basic-renamed' is already used by "
                                                 r"tests\.core\.tools_fixture\.Echo\[add_numbers\]"):
        BASIC.renamed({"echo": "add_numbers"})

    class LabEcho(BaseTool):
        NAME = "lab_echo"
        description = "Already namespaced."

    with pytest.raises(DuplicateToolError, match="'lab_echo' in tool set 'mixed'"):
        BASIC.prefixed("lab").merged(ToolSet(name="other", tools=(LabEcho,)), name="mixed")


def test_renaming_a_tool_the_set_lacks_names_close_matches():
    with pytest.raises(UnknownToolError, match="Did you mean 'echo'"):
        BASIC.renamed({"ecko": "repeat"})


def test_views_of_one_tool_under_one_name_are_one_tool():
    first, second = BASIC.prefixed("lab"), BASIC.prefixed("lab")
    assert first.get("lab_echo") is not second.get("lab_echo")  # each wrapper makes its own view
    assert same_tool(first.get("lab_echo"), second.get("lab_echo"))
    assert not same_tool(first.get("lab_echo"), Echo)
    assert (first + second).names() == first.names()
    assert first.filtered([second.get("lab_add_numbers")]).names() == ["lab_add_numbers"]
    assert first.without(second.get("lab_echo")).names() == ["lab_add_numbers", "lab_get_time"]


def test_merging_nothing_or_not_a_set_is_refused():
    with pytest.raises(TypeError, match="merges one or more ToolSets"):
        MergedToolSet()
    with pytest.raises(TypeError, match="wraps a ToolSet"):
        PrefixedToolSet([Echo], "lab")


def test_renamed_classes_are_not_cached_anywhere():
    prefixed = BASIC.prefixed("gone")
    view = weakref.ref(prefixed.get("gone_echo"))
    del prefixed
    gc.collect()
    assert view() is None  # nothing outlives the wrapper that made it

    for module_info in pkgutil.iter_modules(toolset_package.__path__):
        module = importlib.import_module(f"{toolset_package.__name__}.{module_info.name}")
        for value in vars(module).values():
            assert not (isinstance(value, dict) and any(isinstance(k, tuple) for k in value)), module.__name__


def test_every_wrapper_module_holds_one_small_wrapper():
    assert issubclass(FilteredToolSet, WrapperToolSet) and issubclass(RenamedToolSet, WrapperToolSet)
    for wrapper in (FilteredToolSet, RenamedToolSet, PrefixedToolSet, DescribedToolSet, MergedToolSet):
        assert wrapper.__module__.rsplit(".", 1)[1] in {"filtered", "renamed", "prefixed", "described", "merged"}


def test_wrappers_copy_like_any_tool_set():
    import copy

    chained = BASIC.filtered([Echo, Add]).prefixed("lab")
    for duplicate in (copy.copy(chained), copy.deepcopy(chained)):
        assert type(duplicate) is PrefixedToolSet and duplicate.names() == chained.names()
        assert duplicate.wrapped.names() == ["echo", "add_numbers"]
