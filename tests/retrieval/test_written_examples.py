"""Example requests a model writes for every tool (``tool_selection.retrieval.written``): what is kept of an answer,
resuming a file, the catalog check on use, the command, and the scale benchmark's written rows."""

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.benchmarks.scale import retrieval_table
from evals.suite import Suite, load_suite
from tests.retrieval.conftest import FUNCTIONS, function, needs_bm25s
from tool_selection import load_tool_set
from tool_selection.cli import main as toolsel
from tool_selection.interop import from_openai
from tool_selection.retrieval import document_hash, tool_documents
from tool_selection.retrieval.examples import ToolExamples, ToolExamplesError
from tool_selection.retrieval.written import WRITER_VERSION, write_examples
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import RetrievalSpec


def answers(*triples):
    return DummyLM([dict(zip(("first", "second", "third"), triple, strict=True)) for triple in triples])


def test_each_tool_gets_its_distinct_requests_without_copies_of_the_demonstrations(tmp_path):
    registry = from_openai(FUNCTIONS[:2], name="two")  # get_stock_price, get_weather (sorted)
    lm = answers(("Price of ACME?", "price of  ACME?", "How is HOOLI trading?"),
                 ("Rain in Oslo?", "How warm is it in Osaka today?", "Wind in Lima?"))
    written = write_examples(registry, lm, path=tmp_path / "written.json")
    assert written.requests == {"get_stock_price": ("Price of ACME?", "How is HOOLI trading?"),
                                "get_weather": ("Rain in Oslo?", "Wind in Lima?")}
    assert written.documents == {tool.NAME: document_hash(tool) for tool in registry.tools()}
    assert written.source["writer"] == {"version": WRITER_VERSION, "model": "dummy"}
    assert written.source["requests"] == 4 and written.source["seconds"] >= 0
    assert ToolExamples.load(tmp_path / "written.json") == written
    assert "Price of ACME?" in tool_documents(registry, written.requests)["get_stock_price"]


def test_a_malformed_answer_costs_that_tool_its_examples_not_the_run(tmp_path):
    registry = from_openai(FUNCTIONS[:2], name="two")
    junk = {"nothing": "useful"}  # twice: the chat format's answer, then the JSON format's it falls back to
    lm = DummyLM([junk, junk, {"first": "Rain in Oslo?", "second": "Sun in Rome?", "third": "Hail?"}])
    written = write_examples(registry, lm)
    assert set(written.requests) == {"get_weather"} and set(written.documents) == {"get_stock_price", "get_weather"}


def test_resuming_writes_only_the_tools_that_are_new_or_changed(tmp_path):
    path = tmp_path / "written.json"
    write_examples(from_openai(FUNCTIONS[:2], name="two"), answers(("a?", "b?", "c?"), ("d?", "e?", "f?")),
                   path=path)
    changed = [function("get_weather", "Weather warnings for a region.", region="Region name."), FUNCTIONS[2]]
    registry = from_openai([FUNCTIONS[1], *changed], name="three")  # stock price kept; weather changed; translate new
    resumed = write_examples(registry, answers(("g?", "h?", "i?"), ("j?", "k?", "l?")), path=path)
    assert resumed.requests == {"get_stock_price": ("a?", "b?", "c?"), "get_weather": ("g?", "h?", "i?"),
                                "translate_text": ("j?", "k?", "l?")}
    assert ToolExamples.load(path) == resumed


def test_a_run_that_stops_keeps_the_tools_it_finished(tmp_path):
    path = tmp_path / "written.json"
    registry = from_openai(FUNCTIONS[:2], name="two")

    def stop_at_the_second(done, total, name):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_examples(registry, answers(("a?", "b?", "c?"), ("d?", "e?", "f?")), path=path,
                       progress=stop_at_the_second)
    kept = ToolExamples.load(path)  # the second tool was written when the run stopped: kept too
    assert kept.requests == {"get_stock_price": ("a?", "b?", "c?"), "get_weather": ("d?", "e?", "f?")}


def test_resuming_refuses_a_file_another_writer_or_model_made(tmp_path):
    path = ToolExamples(requests={"get_weather": ("Rain in Oslo?",)}).save(tmp_path / "asked.json")
    with pytest.raises(ToolExamplesError, match="written by people, not a model"):
        write_examples(from_openai(FUNCTIONS[:1], name="one"), answers(), path=path)


def test_written_examples_refuse_another_catalog_and_changed_tools():
    registry = from_openai(FUNCTIONS[:2], name="two")
    written = ToolExamples(requests={"get_weather": ("Rain in Oslo?",)},
                           documents={tool.NAME: document_hash(tool) for tool in registry.tools()})
    written.check_catalog(registry)
    written.check_catalog(from_openai(FUNCTIONS[1:], name="more"))  # a larger catalog: the new tools have none
    with pytest.raises(ToolExamplesError, match="none of which is among the 3 tools listed"):
        written.check_catalog(from_openai(FUNCTIONS[2:], name="other"))
    changed = from_openai([function("get_weather", "Weather warnings for a region.", region="Region.")], name="c")
    with pytest.raises(ToolExamplesError, match=r"1 tool changed .*\(get_weather\).*toolsel tools examples"):
        written.check_catalog(changed)
    ToolExamples(requests=written.requests).check_catalog(changed)  # requests people asked carry no documents


def test_combined_examples_keep_each_tools_own_first():
    asked = ToolExamples(requests={"a": ("one", "two")})
    written = ToolExamples(requests={"a": ("two", "three"), "b": ("four",)}, documents={"a": "x", "b": "y"})
    both = asked.combined(written)
    assert both.requests == {"a": ("one", "two", "three"), "b": ("four",)} and both.documents == written.documents


@needs_bm25s
def test_the_selector_refuses_examples_written_for_an_earlier_description(tmp_path):
    original = from_openai(FUNCTIONS, name="five")
    path = ToolExamples(requests={"get_weather": ("Rain in Oslo?",)},
                        documents={tool.NAME: document_hash(tool) for tool in original.tools()}).save(tmp_path / "w.json")
    changed = from_openai([function("get_weather", "Weather warnings.", region="Region."), *FUNCTIONS[1:]], name="c")
    for registry, refused in ((original, False), (changed, True)):
        selector = MultiToolSelector(registry, retrieval=RetrievalSpec(k=2, retriever="bm25", examples=str(path)),
                                     strategy="json-cot", relevance="none")
        with dspy.context(lm=DummyLM([{"reasoning": "r", "tool_calls": "[]"}], adapter=dspy.JSONAdapter())):
            if refused:
                with pytest.raises(ToolExamplesError, match="changed since the examples were written"):
                    selector(request="Will it rain in Oslo?")
            else:
                assert selector(request="Will it rain in Oslo?").row_extras["retrieved"][0] == "get_weather"


def test_the_command_writes_for_the_tool_sets_named(tmp_path, monkeypatch, capsys):
    import tool_selection.lm

    lm = answers(*[(f"request {n}a?", f"request {n}b?", f"request {n}c?") for n in range(30)])
    monkeypatch.setattr(tool_selection.lm, "get_lm", lambda model, **settings: lm)
    path = tmp_path / "finance.json"
    assert toolsel(["tools", "examples", "--set", "finance", "--out", str(path)]) == 0
    written = ToolExamples.load(path)
    assert len(written.documents) == 10 and len(written) == 30
    assert f"--retrieve-examples {path}" in capsys.readouterr().out


@needs_bm25s
def test_the_retrieval_table_adds_written_rows_and_refuses_a_scored_request():
    needing = [case for case in load_suite("finance").split("test").cases if case.expected_calls][:4]
    documents = {tool.NAME: document_hash(tool) for tool in load_tool_set("finance").tools}
    written = ToolExamples(requests={"convert_currency": ("Swap my dollars for yen?",)}, documents=documents)
    asked = ToolExamples(requests={"get_stock_price": ("What is ACME at?",)})
    table = retrieval_table(Suite("few", needing), sizes=[200], ks=[1, 5], retrievers=["bm25"], examples=asked,
                            written=written)
    assert list(table["retriever"]) == ["bm25", "bm25+examples", "bm25+written", "bm25+examples+written"]
    leaked = ToolExamples(requests={"convert_currency": (needing[0].prompt,)}, documents=documents)
    with pytest.raises(ToolExamplesError, match="among the example requests"):
        retrieval_table(Suite("few", needing), sizes=[200], ks=[1], retrievers=["bm25"], written=leaked)
