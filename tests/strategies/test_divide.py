"""Divide and conquer over the retrieved tools: a decision per group of candidates, then one among the chosen."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM
from pydantic import ValidationError

from tool_selection import load_tool_set
from tool_selection.decision import CallProblem, MultiToolDecision, ToolCall
from tool_selection.divide import decide_in_groups, groups_of, well_formed_tools
from tool_selection.spec import RetrievalSpec
from tool_selection.strategies.base import decided

RATE = ToolCall(tool_name="get_exchange_rate", arguments={"base": "EUR", "quote": "USD"})
PRICE = ToolCall(tool_name="get_stock_price", arguments={"ticker": "ACME"})


@pytest.fixture
def finance():
    return load_tool_set("finance").registry()


def scripted(answers: dict[int, MultiToolDecision], seen: list[list[str]]):
    """A ``decide`` that answers its n-th call with ``answers[n]`` (else no call) and records the tools it saw."""
    def decide(tools):
        seen.append(tools.names())
        return decided(answers.get(len(seen), MultiToolDecision()))
    return decide


def test_groups_follow_the_retrievers_rank():
    assert groups_of(["a", "b", "c", "d", "e"], 2) == [["a", "b"], ["c", "d"], ["e"]]
    with pytest.raises(ValueError, match="at least one tool"):
        groups_of(["a"], 0)


def test_a_call_its_schema_refuses_does_not_make_a_finalist():
    problem = CallProblem(kind="invalid_arguments", tool_name="get_stock_price", call_index=1, detail="no ticker")
    decision = MultiToolDecision(tool_calls=[RATE, PRICE, RATE], problems=[problem])
    assert well_formed_tools(decision) == ["get_exchange_rate"]
    assert well_formed_tools(MultiToolDecision(parse_error="unreadable")) == []


def test_the_final_decision_sees_only_what_the_groups_chose(finance):
    ranked = finance.names()[:6]
    seen: list[list[str]] = []
    final = MultiToolDecision(tool_calls=[PRICE, RATE])
    answers = {1: MultiToolDecision(tool_calls=[PRICE]), 3: MultiToolDecision(tool_calls=[RATE]), 4: final}
    prediction, columns = decide_in_groups(scripted(answers, seen), finance, ranked, 2)
    assert seen[:3] == [sorted(ranked[0:2]), sorted(ranked[2:4]), sorted(ranked[4:6])]
    assert seen[3] == sorted(["get_stock_price", "get_exchange_rate"])
    assert prediction.decision == final
    assert columns == {"groups": 3.0, "finalists": 2.0, "groups_calling": 2.0}


def test_no_group_calling_is_no_call_without_a_final_decision(finance):
    seen: list[list[str]] = []
    prediction, columns = decide_in_groups(scripted({}, seen), finance, finance.names()[:4], 2)
    assert len(seen) == 2 and prediction.decision.abstained
    assert columns["finalists"] == 0.0


def test_only_a_malformed_call_is_returned_as_made(finance):
    problem = CallProblem(kind="invalid_arguments", tool_name="get_stock_price", call_index=0, detail="no ticker")
    faulty = MultiToolDecision(tool_calls=[PRICE], problems=[problem])
    seen: list[list[str]] = []
    prediction, _ = decide_in_groups(scripted({2: faulty}, seen), finance, finance.names()[:4], 2)
    assert len(seen) == 2 and prediction.decision == faulty


def test_the_selector_decides_in_groups_then_among_the_chosen(finance):
    pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
    from tool_selection.selector import MultiToolSelector

    call = {"tool_name": "convert_currency", "arguments": {"amount": 100, "from_currency": "USD", "to_currency": "EUR"}}
    answer = {"reasoning": "r", "tool_calls": json.dumps([call])}
    lm = DummyLM([answer, {"reasoning": "r", "tool_calls": "[]"}, answer], adapter=dspy.JSONAdapter())
    selector = MultiToolSelector(finance, retrieval=RetrievalSpec(k=4, groups=2, retriever="bm25"),
                                 strategy="json-cot", relevance="none")
    with dspy.context(lm=lm):
        prediction = selector(request="Convert 100 US dollars to euros")
    prompts = [" ".join(m["content"] for m in entry["messages"]) for entry in lm.history]
    assert len(prompts) == 3 and prediction.decision.tool_calls == [ToolCall(**call)]
    assert [sum(f"{name}:" in prompt for name in finance.names()) for prompt in prompts] == [2, 2, 1]
    assert prediction.row_extras["retrieved"][0] == "convert_currency"
    assert prediction.row_extras["groups_calling"] == 1.0


@pytest.mark.parametrize(("settings", "message"), [
    ({"k": 4, "groups": 4}, "must be below retrieve=4"),
    ({"groups": 2}, r"groups \(--groups\) divide the retriever's candidates"),
])
def test_groups_need_a_deeper_retrieval(settings, message):
    with pytest.raises(ValidationError, match=message):
        RetrievalSpec(**settings)
