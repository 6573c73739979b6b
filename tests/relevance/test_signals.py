"""Relevance signals, each read from a scripted answer: first-token call odds, the names' log-probabilities,
unlisted calls, retrieval scores and the verification question."""

import math

import pytest

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.relevance import SIGNALS, Evidence, UnknownSignalError, compute_signals
from tool_selection.relevance.signals import (
    AGREEMENT_SAMPLES,
    AGREEMENT_TEMPERATURE,
    VERIFY_QUESTION,
    call_open_score,
    check_signals,
)

WEATHER = {"name": "get_weather", "description": "Current weather conditions for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
STOCKS = {"name": "get_stock_price", "description": "Latest trading price of a stock.",
          "parameters": {"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"]}}
TOOLS = from_openai([WEATHER, STOCKS], name="weather-stocks")


def token(text, logprob, top=()):
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()),
            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}


def output(tokens, text=None, tool_calls=None):
    return {"text": text, "tool_calls": tool_calls, "logprobs": {"content": tokens}}


def call(name, **arguments):
    return MultiToolDecision(tool_calls=[ToolCall(tool_name=name, arguments=arguments)])


def test_call_open_reads_the_first_tokens_alternatives():
    sure = token('{"', -0.05, [('{"', -0.05), ("None", -3.0)])
    unsure = token("None", -0.2, [("None", -0.2), ("```", -2.5), ("<tool_call>", -4.0)])
    assert call_open_score(sure) > 2.5
    opening = math.exp(-2.5) + math.exp(-4.0)
    assert call_open_score(unsure) == pytest.approx(math.log(opening / (1 - opening)))


def test_name_logprobs_are_those_of_the_names_tokens_only():
    answer = [token('{"', -0.1), token("name", -0.01), token('":', -0.01), token(' "', -0.01), token("get", -2.0),
              token("_weather", -0.5), token('",', -0.01), token(' "arguments": {"city": "Oslo"}}', -0.01)]
    evidence = Evidence(request="Weather in Oslo?", registry=TOOLS, decision=call("get_weather", city="Oslo"),
                        lm_output=output(answer, text=None))
    assert evidence.text.startswith('{"name": "get_weather"')  # spelled by the tokens: the engine kept no text
    values = compute_signals(evidence, ["name_logprob", "name_logprob_min"])
    assert values["name_logprob"] == pytest.approx(-1.25)
    assert values["name_logprob_min"] == pytest.approx(-2.0)


def test_signals_with_nothing_to_read_are_nan():
    evidence = Evidence(request="Tell me a joke", registry=TOOLS, decision=MultiToolDecision(), lm_output="No.")
    values = compute_signals(evidence, ["call_open", "name_logprob", "unlisted", "verify"])
    assert all(math.isnan(v) for v in values.values())


def test_unlisted_is_one_when_every_call_names_an_unknown_function():
    unlisted = Evidence(request="Tell me a joke", registry=TOOLS, decision=call("tell_joke"))
    listed = Evidence(request="Weather?", registry=TOOLS, decision=call("get_weather", city="Oslo"))
    assert compute_signals(unlisted, ["unlisted"])["unlisted"] == 1.0
    assert compute_signals(listed, ["unlisted"])["unlisted"] == 0.0


def test_the_verification_question_follows_the_answer_in_its_conversation(make_lm):
    lm, llama = make_lm(["Yes"], logprobs=True, top_logprobs=20)
    inputs = {"messages": [{"role": "system", "content": "You choose functions."},
                           {"role": "user", "content": "Weather in Oslo?"}],
              "tools": [{"type": "function", "function": WEATHER}]}
    evidence = Evidence(request="Weather in Oslo?", registry=TOOLS, decision=call("get_weather", city="Oslo"),
                        lm_inputs=inputs, lm_output={"text": '<tool_call>{"name": "get_weather"}</tool_call>'}, lm=lm)
    score = compute_signals(evidence, ["verify"])["verify"]
    assert score > 0  # "Yes" is the answer's most probable first token
    sent = llama.calls[-1]
    assert sent["messages"][:2] == inputs["messages"]
    assert sent["messages"][2] == {"role": "assistant", "content": '<tool_call>{"name": "get_weather"}</tool_call>'}
    assert sent["messages"][3]["content"] == VERIFY_QUESTION.format(calls='get_weather(city="Oslo")')
    assert sent["tools"] == inputs["tools"] and sent["max_tokens"] == 2
    assert evidence.cost["input_tokens"] > 0


def test_agreement_is_the_share_of_sampled_answers_calling_the_same_functions(make_lm):
    weather = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    stocks = '<tool_call>\n{"name": "get_stock_price", "arguments": {"symbol": "OSL"}}\n</tool_call>'
    lm, llama = make_lm([weather, "No function fits.", weather, stocks])
    inputs = {"messages": [{"role": "user", "content": "Weather in Oslo?"}],
              "tools": [{"type": "function", "function": WEATHER}, {"type": "function", "function": STOCKS}]}
    evidence = Evidence(request="Weather in Oslo?", registry=TOOLS, decision=call("get_weather", city="Oslo"),
                        lm_inputs=inputs, lm=lm)
    assert compute_signals(evidence, ["agreement"])["agreement"] == 2 / AGREEMENT_SAMPLES
    assert len(llama.calls) == AGREEMENT_SAMPLES  # the cache does not answer a sample with an earlier one
    assert {c["temperature"] for c in llama.calls} == {AGREEMENT_TEMPERATURE}
    assert len({c["seed"] for c in llama.calls}) == AGREEMENT_SAMPLES
    assert all(c["messages"] == inputs["messages"] for c in llama.calls)
    assert evidence.cost["output_tokens"] > 0


def test_agreement_needs_a_native_call_to_sample_again(make_lm):
    lm, llama = make_lm([])
    no_tools = Evidence(request="Weather in Oslo?", registry=TOOLS, decision=call("get_weather", city="Oslo"),
                        lm_inputs={"messages": [{"role": "user", "content": "Weather in Oslo?"}]}, lm=lm)
    no_call = Evidence(request="Tell me a joke", registry=TOOLS, decision=MultiToolDecision(),
                       lm_inputs={"messages": [{"role": "user", "content": "Joke?"}], "tools": [WEATHER]}, lm=lm)
    assert math.isnan(compute_signals(no_tools, ["agreement"])["agreement"])
    assert math.isnan(compute_signals(no_call, ["agreement"])["agreement"])
    assert not llama.calls


def test_retrieval_signals_rank_the_request_against_the_tools():
    pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
    on_topic = Evidence(request="What is the weather like in Oslo today?", registry=TOOLS,
                        decision=call("get_weather", city="Oslo"))
    off_topic = Evidence(request="Bake me a chocolate cake recipe", registry=TOOLS,
                         decision=call("get_stock_price", symbol="CAKE"))
    names = ["dense_best", "dense_chosen", "bm25_best"]
    near, far = compute_signals(on_topic, names), compute_signals(off_topic, names)
    assert near["dense_best"] > far["dense_best"] and near["dense_chosen"] > far["dense_chosen"]
    assert near["bm25_best"] > far["bm25_best"] == 0.0


def test_unknown_signals_are_refused_with_the_known_ones():
    with pytest.raises(UnknownSignalError, match="'dense_bets' \\(did you mean dense_best"):
        check_signals(["dense_bets"])
    assert set(check_signals(list(SIGNALS))) == set(SIGNALS)


def test_grounded_args_is_the_share_of_argument_values_the_request_spells_out():
    def grounded(request, **arguments):
        evidence = Evidence(request=request, registry=TOOLS, decision=call("get_weather", **arguments))
        return compute_signals(evidence, ["grounded_args"])["grounded_args"]

    assert grounded("What's the weather in New York today?", city="new-york") == 1.0
    assert grounded("Draw me a circle", city="London", days=5) == 0.0
    assert grounded("Weather for 3 days in Oslo", city="Oslo", days=3, units="metric") == pytest.approx(2 / 3)
    assert math.isnan(grounded("Weather please"))
