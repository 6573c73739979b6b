"""A selector that sees only the top-k retrieved tools, and the harness scoring the retrieval."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM
from pydantic import ValidationError

pytest.importorskip("bm25s", reason="the retrieval extra is not installed")

from evals.runner import Evaluator
from evals.suite import load_suite
from tool_selection import load_tool_set
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import RetrievalSpec


def test_only_the_retrieved_tools_reach_the_prompt():
    finance = load_tool_set("finance")
    lm = DummyLM([{"reasoning": "r", "tool_calls": json.dumps([{"tool_name": "convert_currency", "arguments": {
        "amount": 100, "from_currency": "USD", "to_currency": "EUR"}}])}], adapter=dspy.JSONAdapter())
    selector = MultiToolSelector(finance, retrieval=RetrievalSpec(k=2, retriever="bm25"), strategy="json-cot")
    with dspy.context(lm=lm):
        prediction = selector(request="Convert 100 US dollars to euros at today's exchange rate")
    retrieved = prediction.row_extras["retrieved"]
    assert len(retrieved) == 2 and "convert_currency" in retrieved
    prompt = " ".join(m["content"] for m in lm.history[-1]["messages"])
    assert sum(f"{name}:" in prompt for name in finance.names()) == 2


def test_the_harness_reports_retrieval_recall(tmp_path):
    cases = load_suite("finance").split("test").limit(3)
    lm = DummyLM([{"reasoning": "r", "tool_calls": "[]"}] * 3, adapter=dspy.JSONAdapter())
    selector = MultiToolSelector(retrieval=RetrievalSpec(k=1, retriever="bm25"), strategy="json-cot")
    result = Evaluator(suite=cases, progress=False)(selector, lm=lm)
    recall = result.results["retrieval_recall"]
    assert recall.notna().any() and ((recall.dropna() >= 0) & (recall.dropna() <= 1)).all()
    assert "retrieval_recall" in result.summary


def test_retrieve_must_be_positive():
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        MultiToolSelector(retrieval=RetrievalSpec(k=0), strategy="json-cot")


def test_the_index_is_fitted_again_only_when_the_registry_changes(monkeypatch):
    from tests.core.tools_fixture import Echo
    from tool_selection import ToolRegistry

    registry = ToolRegistry("test", load_tool_set("finance").registry().tools())
    selector = MultiToolSelector(retrieval=RetrievalSpec(k=1, retriever="bm25"), strategy="json-cot")
    selector._shown_by_retrieval(registry, "Convert 100 US dollars to euros", {})
    fits = []
    fit = type(selector._retriever).fit
    monkeypatch.setattr(type(selector._retriever), "fit", lambda self, *args, **kwargs: fits.append(1)
                        or fit(self, *args, **kwargs), raising=True)
    extras = {}
    selector._shown_by_retrieval(registry, "Convert 100 US dollars to euros", extras)
    assert fits == [] and extras["retrieval_seconds"] >= 0
    registry.register(Echo)
    selector._shown_by_retrieval(registry, "Echo this text back", {})
    assert fits == [1]
    registry.unregister("echo")
    _, ranked = selector._shown_by_retrieval(registry, "Echo this text back to me", {})
    assert ranked != ["echo"] and fits == [1, 1]  # an unregistered tool is gone at once
    registry.register(Echo)  # the tools of the last fit but one: fitted again, found at once
    _, ranked = selector._shown_by_retrieval(registry, "Echo this text back to me", {})
    assert ranked == ["echo"] and fits == [1, 1, 1]


def test_shown_tools_is_the_retrieval_step_alone_and_asks_no_model():
    finance = load_tool_set("finance")
    selector = MultiToolSelector(finance, retrieval=RetrievalSpec(k=2, retriever="bm25"), strategy="json-cot")
    with dspy.context(lm=DummyLM([])):  # any call to the model would fail: DummyLM has no answers
        shown = selector.shown_tools("Convert 100 US dollars to euros at today's exchange rate")
    assert len(shown) == 2 and "convert_currency" in shown
    lm = DummyLM([{"reasoning": "r", "tool_calls": "[]"}], adapter=dspy.JSONAdapter())
    with dspy.context(lm=lm):
        prediction = selector(request="Convert 100 US dollars to euros at today's exchange rate")
    assert prediction.row_extras["retrieved"] == shown


def test_shown_tools_without_retrieval_is_every_tool_of_the_listing():
    finance = load_tool_set("finance")
    selector = MultiToolSelector(strategy="json-cot")
    assert selector.shown_tools("anything", finance) == finance.registry().names()
    with pytest.raises(ToolSelectionError, match="no tools"):
        selector.shown_tools("anything")


def test_a_tool_set_passed_with_each_call_is_fitted_once(monkeypatch):
    from tool_selection import ToolSet

    finance = load_tool_set("finance")
    selector = MultiToolSelector(retrieval=RetrievalSpec(k=1, retriever="bm25"), strategy="json-cot")
    selector.shown_tools("Convert 100 US dollars to euros", finance)
    fits = []
    fit = type(selector._retriever).fit
    monkeypatch.setattr(type(selector._retriever), "fit", lambda self, *args, **kwargs: fits.append(1)
                        or fit(self, *args, **kwargs), raising=True)
    for _ in range(3):  # each call makes a new registry of the same tools
        assert selector.shown_tools("Convert 100 US dollars to euros", finance) == ["convert_currency"]
    assert fits == []
    fewer = ToolSet(name="finance", tools=[tool for tool in finance.tools if tool.NAME != "convert_currency"])
    assert selector.shown_tools("Convert 100 US dollars to euros", fewer) != ["convert_currency"]
    assert fits == [1]  # other tools: fitted again
