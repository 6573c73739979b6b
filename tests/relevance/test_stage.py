"""The relevance stage inside a selector: signals recorded on every decision, calls dropped below the threshold."""

import json

import dspy

from tool_selection.interop import from_openai
from tool_selection.relevance import RelevanceModel, RelevanceStage
from tool_selection.relevance.stage import OVERRULED_CALLS
from tool_selection.selector import MultiToolSelector

WEATHER = {"name": "get_weather", "description": "Current weather conditions for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
TOOLS = from_openai([WEATHER], name="weather")
UNLISTED_MEANS_NO = RelevanceModel(signals=("unlisted",), means=(0.0,), scales=(1.0,), coefficients=(-5.0,),
                                   intercept=2.0, threshold=0.5)


def decide(make_lm, answers, stage):
    lm, llama = make_lm(answers, cache=False)
    selector = MultiToolSelector(TOOLS, strategy="native", relevance=stage)
    with dspy.context(lm=lm):
        prediction = selector(request="What is the weather in Oslo?")
    return prediction, llama


def test_signals_are_recorded_and_the_answer_asked_with_log_probabilities(make_lm):
    stage = RelevanceStage(signals=["call_open", "unlisted", "verify"])
    prediction, llama = decide(make_lm, ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n'
                                         '</tool_call>', "Yes"], stage)
    assert prediction.decision.tool_names == ["get_weather"]
    extras = prediction.row_extras
    assert extras["rel_unlisted"] == 0.0 and extras["rel_verify"] > 0 and "rel_call_open" in extras
    assert "relevance_p" not in extras  # no model: recorded only
    assert extras["rel_call_open"] == extras["rel_call_open"]  # not NaN: the selection was asked for logprobs
    assert len(llama.calls) == 2  # the selection, then the question
    selection, question = llama.calls
    assert question["tools"] == selection["tools"]  # the same system turn, so the KV cache holds the prompt
    assert question["messages"][:len(selection["messages"])] == selection["messages"]
    assert extras["relevance_input_tokens"] > 0


def test_a_model_drops_the_calls_it_judges_irrelevant(make_lm):
    stage = RelevanceStage(UNLISTED_MEANS_NO)
    dropped, _ = decide(make_lm, ['<tool_call>\n{"name": "tell_joke", "arguments": {}}\n</tool_call>'], stage)
    assert dropped.decision.tool_calls == [] and dropped.row_extras["relevance_overruled"] == 1.0
    assert "tell_joke" in dropped.decision.reasoning and dropped.row_extras["relevance_p"] < 0.5
    assert json.loads(dropped.row_extras[OVERRULED_CALLS]) == [{"tool_name": "tell_joke", "arguments": {}}]
    kept, _ = decide(make_lm, ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'],
                     stage)
    assert kept.decision.tool_names == ["get_weather"] and kept.row_extras["relevance_overruled"] == 0.0
    assert OVERRULED_CALLS not in kept.row_extras


def test_an_abstention_is_left_as_it_is(make_lm):
    prediction, llama = decide(make_lm, ["None of the available functions can do this."],
                               RelevanceStage(UNLISTED_MEANS_NO, signals=["verify"]))
    assert prediction.decision.tool_calls == [] and prediction.row_extras["relevance_overruled"] == 0.0
    assert len(llama.calls) == 1  # nothing to verify


def test_a_stage_is_built_from_a_saved_model(tmp_path):
    path = UNLISTED_MEANS_NO.save(tmp_path / "relevance.json")
    selector = MultiToolSelector(TOOLS, relevance=path)
    assert selector.relevance.model == UNLISTED_MEANS_NO and selector.relevance.signals == ("unlisted",)
    assert "unlisted" in selector.relevance.describe()
