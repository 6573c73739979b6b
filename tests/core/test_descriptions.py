"""Rewritten tool descriptions: the described view of a tool set, the overrides a selector shows, their place in a
compiled selector and the checks on load."""

import copy
import json
import pickle
import re

import dspy
import pytest

from evals.evaluation import program_fingerprint
from tests.core.tools_fixture import Add, Echo, Now
from tests.evals.test_runner import CountingLM
from tool_selection import ToolDefinitionError, ToolSet, UnknownToolError
from tool_selection.compiled import Manifest, ToolsChangedError, save_compiled, tool_fingerprint
from tool_selection.descriptions import DescriptionOverrides, descriptions_of, descriptions_sha256
from tool_selection.registry import ToolRegistry
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter
from tool_selection.toolset import DescribedToolSet, same_tool

BASIC = ToolSet(name="basic", tools=(Echo, Add))
REWRITE = "Say the user's message back to them, as many times as asked."
NO_CALL = {"": {"reasoning": "none fits", "tool_calls": "[]"}}


class PromptSpy(CountingLM):
    """Answers with no call and keeps every prompt it was sent."""

    def __init__(self):
        super().__init__(NO_CALL, adapter=ToolSelectionAdapter())
        self.prompts = []

    def forward(self, prompt=None, messages=None, **kwargs):
        self.prompts.append(json.dumps(messages))
        return super().forward(prompt=prompt, messages=messages, **kwargs)


def described_selector(tools=BASIC):
    selector = MultiToolSelector(tools, strategy="json-cot")
    selector.described = DescriptionOverrides.for_registry(BASIC.registry(), {"echo": REWRITE,
                                                                            "add_numbers": Add.description})
    return selector


def test_a_described_set_shows_new_descriptions_and_leaves_the_tools_alone():
    described = BASIC.described({"echo": REWRITE})
    assert isinstance(described, DescribedToolSet) and described.wrapped is BASIC
    echo = described.get("echo")
    assert echo.description == REWRITE and Echo.description == "Repeat a message a number of times."
    assert same_tool(echo, Echo) and echo.NAME == "echo" and echo.Arguments is Echo.Arguments
    assert described.get("add_numbers") is Add  # not rewritten: the tool itself
    assert echo.schema_hash() != Echo.schema_hash()  # a manifest sees what the model is shown
    with pytest.raises(UnknownToolError, match="echoo"):
        BASIC.described({"echoo": REWRITE})
    with pytest.raises(ToolDefinitionError, match="empty description"):
        BASIC.described({"echo": "  "})


def test_overrides_keep_only_the_changed_texts_and_hash_the_originals():
    overrides = DescriptionOverrides.for_registry(BASIC.registry(), {"echo": REWRITE, "add_numbers": Add.description})
    assert overrides.descriptions == {"echo": REWRITE}
    assert overrides.original_sha256 == descriptions_sha256({"add_numbers": "Add two numbers.",
                                                             "echo": "Repeat a message a number of times."})
    with pytest.raises(Exception, match="Descriptions for tools that 'basic' lacks: get_time"):
        DescriptionOverrides.for_registry(BASIC.registry(), {"get_time": "A clock."})


def test_the_selector_sends_the_rewritten_description_and_the_tool_set_keeps_its_own():
    lm = PromptSpy()
    with dspy.context(lm=lm):
        described_selector().decide("say hi twice")
    assert REWRITE in lm.prompts[-1] and "Repeat a message a number of times." not in lm.prompts[-1]
    assert Echo.description == "Repeat a message a number of times."
    assert descriptions_of(BASIC.registry())["echo"] == Echo.description  # the registered tools are untouched


def test_a_compiled_selector_stores_the_rewrites_and_loads_them_back(tmp_path):
    save_compiled(described_selector(), tmp_path, Manifest(tool_set=None, tools=tool_fingerprint(BASIC.registry()),
                                                         model="m"))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["descriptions"] == {"echo": REWRITE}
    assert manifest["original_descriptions_sha256"] == descriptions_sha256(descriptions_of(BASIC.registry()))

    loaded = MultiToolSelector.load(tmp_path, tools=BASIC)
    lm = PromptSpy()
    with dspy.context(lm=lm):
        loaded.decide("say hi")
    assert REWRITE in lm.prompts[-1]
    assert program_fingerprint(loaded) != program_fingerprint(MultiToolSelector(BASIC, strategy="json-cot"))


def test_a_selector_without_rewrites_saves_none(tmp_path):
    save_compiled(MultiToolSelector(BASIC, strategy="json-cot"), tmp_path,
                  Manifest(tool_set=None, tools=tool_fingerprint(BASIC.registry()), model="m"))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["descriptions"] == {} and manifest["original_descriptions_sha256"] is None
    assert MultiToolSelector.load(tmp_path, tools=BASIC).described is None


def test_rewrites_for_other_originals_are_refused_on_load_naming_the_fix(tmp_path):
    save_compiled(described_selector(), tmp_path, Manifest(tool_set=None, tools=tool_fingerprint(BASIC.registry()),
                                                         model="m"))
    path = tmp_path / "manifest.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "original_descriptions_sha256": "0" * 64}))
    with pytest.raises(ToolsChangedError, match=re.escape("were optimized for other tools than 'basic' holds (its "
                                                          "tools or their own descriptions changed; ")) as info:
        MultiToolSelector.load(tmp_path, tools=BASIC)
    assert "toolsel optimize --target descriptions" in str(info.value)
    assert "allow_tool_changes=True" in str(info.value)
    assert MultiToolSelector.load(tmp_path, tools=BASIC, allow_tool_changes=True).described.allow_changes


def test_a_selector_compiled_per_case_checks_each_catalog_it_is_given(tmp_path):
    save_compiled(described_selector(tools=None), tmp_path, Manifest(tool_set=None, model="m"))
    loaded = MultiToolSelector.load(tmp_path)  # no tools to check yet
    other = ToolRegistry("other", [Echo, Now])
    with dspy.context(lm=PromptSpy()), pytest.raises(ToolsChangedError, match=r"'other' holds \(its tools"):
        loaded.decide("say hi", tools=other)
    lm = PromptSpy()
    with dspy.context(lm=lm):
        loaded.decide("say hi", tools=BASIC)
        MultiToolSelector.load(tmp_path, allow_tool_changes=True).decide("say hi", tools=other)
    assert REWRITE in lm.prompts[0] and REWRITE in lm.prompts[1]  # shown for the tools the catalog shares


def test_a_manifest_with_rewrites_must_name_their_originals():
    with pytest.raises(ValueError, match="original_descriptions_sha256"):
        Manifest(tool_set=None, model="m", descriptions={"echo": REWRITE})


def test_a_described_selector_copies_and_pickles():
    selector = described_selector()
    with dspy.context(lm=PromptSpy()):
        selector.decide("say hi")  # fills the cache of shown catalogs
    for duplicate in (copy.deepcopy(selector), pickle.loads(pickle.dumps(selector.described)), selector.deepcopy()):
        overrides = getattr(duplicate, "described", duplicate)
        assert overrides.descriptions == {"echo": REWRITE}
        assert overrides.apply(BASIC.registry()).get("echo").description == REWRITE


def test_the_described_registry_follows_tools_registered_after_it_was_first_shown():
    overrides = DescriptionOverrides(descriptions={"echo": REWRITE}, original_sha256=descriptions_sha256(
        descriptions_of(BASIC.registry())), allow_changes=True)
    registry = BASIC.registry()
    assert overrides.apply(registry) is overrides.apply(registry)  # kept while the tools stay the same
    registry.register(Now)
    shown = overrides.apply(registry)
    assert shown.names() == sorted(["echo", "add_numbers", Now.NAME]) and shown.get("echo").description == REWRITE


def test_a_tool_set_passed_with_each_call_keeps_the_described_selectors_index(monkeypatch):
    from tool_selection.retrieval import BM25Retriever
    from tool_selection.spec import RetrievalSpec

    selector = MultiToolSelector(retrieval=RetrievalSpec(k=1, retriever="bm25"))
    selector.described = DescriptionOverrides.for_registry(BASIC.registry(), {"echo": REWRITE})
    fits, fit = [], BM25Retriever.fit
    monkeypatch.setattr(BM25Retriever, "fit", lambda self, registry, *rest: fits.append(registry) or
                        fit(self, registry, *rest))
    for request in ("say hi back", "add 2 and 3", "say it twice"):
        assert selector.shown_tools(request, tools=BASIC) in (["echo"], ["add_numbers"])
    assert len(fits) == 1  # each call's tool set is a new registry of the same described tools
    assert fits[0].get("echo").description == REWRITE


def test_a_description_edited_in_place_is_indexed_after_refit_retrieval():
    from tool_selection.spec import RetrievalSpec

    class Greet(Echo):
        """Echo under another name."""

        NAME = "greet"

    selector = MultiToolSelector(ToolSet(name="two", tools=(Greet, Add)), retrieval=RetrievalSpec(k=1,
                                                                                                    retriever="bm25"))
    assert selector.shown_tools("sum of two numbers") == ["add_numbers"]
    Greet.description = "Sum of two numbers, told as a greeting."
    assert selector.shown_tools("sum of two numbers greeting") == ["add_numbers"]  # the index still has the old text
    selector.refit_retrieval()
    assert selector.shown_tools("sum of two numbers greeting") == ["greet"]
