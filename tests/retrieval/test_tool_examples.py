"""Example requests per tool in a retriever's index (``--retrieve-examples``): the file, the train-only builder, the
selector that indexes them, and the harness that refuses examples holding a request it scores."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from evals.evaluation import evaluate
from evals.suite import Suite, load_suite
from evals.tool_examples import examples_from_suites
from tests.retrieval.conftest import needs_bm25s
from tool_selection.cli import main as toolsel
from tool_selection.retrieval.examples import ToolExamples, ToolExamplesError, same_request
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import RetrievalSpec, SelectorSpec


def test_a_file_round_trips_with_its_fingerprint(tmp_path):
    examples = ToolExamples(requests={"get_weather": ("Will it rain in Oslo?",)}, source={"split": "train"})
    loaded = ToolExamples.load(examples.save(tmp_path / "examples.json"))
    assert loaded == examples and loaded.fingerprint == examples.fingerprint and len(loaded) == 1
    other = ToolExamples(requests={"get_weather": ("Is it sunny in Rome?",)})
    assert other.fingerprint != examples.fingerprint


@pytest.mark.parametrize(("content", "problem"), [
    (None, "No examples file at"),
    ("{not json", "is not a JSON examples file"),
    (json.dumps({"requests": {"get_weather": "Will it rain?"}}), "requests.get_weather"),
    (json.dumps({"requests": {"get_weather": ["  "]}}), "blank tool names or requests"),
    (json.dumps({"format": "something-else", "requests": {}}), "format"),
])
def test_a_bad_file_is_refused_naming_the_problem_and_the_fix(tmp_path, content, problem):
    path = tmp_path / "examples.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ToolExamplesError, match=problem) as error:
        ToolExamples.load(path)
    assert "toolsel suites SUITE --examples FILE" in str(error.value)


def test_among_compares_requests_case_and_spacing_aside():
    examples = ToolExamples(requests={"a": ("Will it  rain in Oslo?",), "b": ("Buy milk",)})
    assert examples.among(["will it rain in oslo?", "Will it snow?", "BUY MILK "]) == ["will it rain in oslo?",
                                                                                          "BUY MILK "]
    assert same_request(" A\tb ") == "a b"


def test_the_builder_reads_one_split_and_leaves_out_requests_another_split_asks():
    finance = load_suite("finance")
    examples = examples_from_suites([finance])
    requests = {text for texts in examples.requests.values() for text in texts}
    train = [case for case in finance if case.split == "train" and case.expected_calls]
    assert requests and requests <= {case.prompt for case in train}
    assert not requests & {case.prompt for case in finance if case.split != "train"}
    some = next(case for case in train if len(case.messages or []) <= 1)
    assert all(some.prompt in examples.requests[call.tool_name] for call in some.expected_calls)
    # a test case that asks a train case's request takes that request out of the examples
    test_case = next(case for case in finance if case.split == "test")
    asked_twice = test_case.model_copy(update={"id": "asked-twice", "messages": some.messages,
                                               "request": some.request})
    again = examples_from_suites([Suite("finance+", [*finance.cases, asked_twice])])
    assert some.prompt not in {text for texts in again.requests.values() for text in texts}
    assert again.source["left_out_asked_in_another_split"] == examples.source["left_out_asked_in_another_split"] + 1
    assert examples.source["split"] == "train" and examples.source["cases"] > 0


def test_the_suites_command_writes_a_file_the_selector_reads(tmp_path, capsys):
    path = tmp_path / "examples.json"
    assert toolsel(["suites", "finance", "--examples", str(path)]) == 0
    assert "example requests for" in capsys.readouterr().out
    assert ToolExamples.load(path).source["suites"] == ["finance"]


@needs_bm25s
def test_the_selector_indexes_the_examples_with_the_tools(tmp_path):
    from tool_selection import load_tool_set

    finance = load_tool_set("finance")
    request = "what did the greenback do against the quid"  # no word of the right tool's description
    path = ToolExamples(requests={"convert_currency": ("what did the greenback do against the quid today",)}).save(
        tmp_path / "examples.json")
    retrieved = {}
    for label, retrieval in (("plain", RetrievalSpec(k=1, retriever="bm25")),
                             ("examples", RetrievalSpec(k=1, retriever="bm25", examples=str(path)))):
        lm = DummyLM([{"reasoning": "r", "tool_calls": "[]"}], adapter=dspy.JSONAdapter())
        selector = MultiToolSelector(finance, retrieval=retrieval, strategy="json-cot")
        with dspy.context(lm=lm):
            extras = selector(request=request).row_extras
        retrieved[label] = extras["retrieved"]
        assert extras.get("retrieval_examples") == (ToolExamples.load(path).fingerprint if label == "examples" else None)
    assert retrieved["examples"] == ["convert_currency"] != retrieved["plain"]


def test_examples_without_retrieve_are_refused():
    with pytest.raises(ValueError, match=r"examples \(--retrieve-examples\) index"):
        SelectorSpec.build(retrieval={"examples": "examples.json"})


@needs_bm25s
def test_the_harness_refuses_examples_that_hold_a_request_it_scores(tmp_path):
    cases = load_suite("finance").split("test").limit(3)
    path = examples_from_suites([load_suite("finance")], split="test").save(tmp_path / "test-examples.json")
    spec = SelectorSpec(strategy="json-cot", relevance="none",
                        retrieval=RetrievalSpec(k=2, retriever="bm25", examples=str(path)))
    lm = DummyLM([{"reasoning": "r", "tool_calls": "[]"}] * 3, adapter=dspy.JSONAdapter())
    with pytest.raises(ToolExamplesError, match="among the example requests") as error:
        evaluate(cases, lm, selector=spec, run=RunConfig(mlflow=False, progress=False, run_dir=tmp_path / "run"))
    assert "--split train" in str(error.value) and cases.cases[0].id in str(error.value)


def test_the_harness_refuses_examples_made_for_another_catalog(tmp_path):
    cases = load_suite("finance").split("test").limit(2)
    path = ToolExamples(requests={"get_weather": ("Will it rain in Oslo?",)}).save(tmp_path / "weather.json")
    spec = SelectorSpec(strategy="json-cot", relevance="none",
                        retrieval=RetrievalSpec(k=2, retriever="bm25", examples=str(path)))
    with pytest.raises(ToolExamplesError, match="name none of the .* tools these cases list"):
        evaluate(cases, DummyLM([]), selector=spec, run=RunConfig(mlflow=False, progress=False,
                                                                  run_dir=tmp_path / "run"))
