"""Each stuck detector on crafted decisions: phrases, relevance, validation, log-probabilities, sampling."""

import json
import math

import dspy
import pytest
from dspy.clients.cache import Cache
from dspy.lm15 import Message, Response, TextPart, Usage
from dspy.utils.callback import BaseCallback

from tests.stuck.conftest import TOOLS, ScriptedLM, answer, weak_answers, weak_logprobs
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter, check_decision
from tool_selection.stuck import (
    Attempt,
    CombinedDetector,
    ConfidenceDetector,
    ConsistencyDetector,
    DetectorUnavailable,
    Generation,
    HeuristicDetector,
    LeastConfidenceDetector,
    ValidationDetector,
    capture_generation,
    make_detector,
    make_sampler,
)

WEATHER_OSLO = "What is the weather in Oslo?"


def decision(reasoning, *calls):
    return check_decision(reasoning, [ToolCall(tool_name=n, arguments=a) for n, a in calls], TOOLS)


def attempt(request, dec, **kwargs):
    return Attempt(request=request, decision=dec, tools=TOOLS, **kwargs)


# ------------------------------------------------------------------------------------------------ heuristic


def test_giving_up_scores_high_and_a_clean_relevant_call_scores_low():
    heuristic = HeuristicDetector()
    clean = heuristic(attempt(WEATHER_OSLO, decision("The user wants the weather in Oslo: get_weather for Oslo.",
                                                     ("get_weather", {"city": "Oslo"}))))
    stuck = heuristic(attempt(WEATHER_OSLO, decision("I'm not sure how to do this. I cannot tell which tool to use.")))
    assert clean.score < 0.1
    assert stuck.score > 0.7
    assert stuck.evidence["give_up_phrases"] == ["i'm not sure how to", "i cannot"]


def test_hedging_raises_the_score():
    heuristic = HeuristicDetector()
    plain = decision("The weather in Oslo comes from get_weather.", ("get_weather", {"city": "Oslo"}))
    hedged = decision("Maybe the weather in Oslo comes from get_weather, I think; perhaps.",
                      ("get_weather", {"city": "Oslo"}))
    assert heuristic(attempt(WEATHER_OSLO, hedged)).score > heuristic(attempt(WEATHER_OSLO, plain)).score + 0.2


def test_relevance_follows_the_request():
    heuristic = HeuristicDetector()
    dec = decision("The user wants the weather in Oslo: get_weather for Oslo.", ("get_weather", {"city": "Oslo"}))
    on_topic = heuristic(attempt(WEATHER_OSLO, dec))
    off_topic = heuristic(attempt("Convert 300 euros into Japanese yen", dec))
    partly = heuristic(attempt("What is the weather in Bergen?", dec))
    assert on_topic.evidence["relevance"] == 1.0
    assert off_topic.evidence["relevance"] == 0.0
    assert 0 < partly.evidence["relevance"] < 1
    assert on_topic.score < partly.score < off_topic.score


def test_actionable_content_and_length():
    heuristic = HeuristicDetector()
    reasoned = decision("No available tool tells jokes, so no call fits this request.")
    bare = decision("")
    missing_args = decision("Weather in Oslo.", ("get_weather", {}))
    unparsed = MultiToolDecision(parse_error="garbled")
    assert heuristic.actionable(reasoned, TOOLS) == 1.0
    assert heuristic.actionable(bare, TOOLS) == 0.0
    assert heuristic.actionable(missing_args, TOOLS) == 0.0
    assert heuristic.actionable(unparsed, TOOLS) == 0.0
    assert heuristic.length(bare) == 0.0 and heuristic.length(reasoned) == 1.0
    assert heuristic.length(MultiToolDecision(reasoning="word " * 300)) == pytest.approx(0.5)
    assert heuristic(attempt("Tell me a joke", unparsed)).score == 1.0


def test_a_reasoned_abstention_is_not_giving_up_but_contradicting_a_call_is():
    heuristic = HeuristicDetector()
    abstains = heuristic(attempt("Tell me a joke", decision("No listed tool can tell a joke, so no call fits.")))
    contradicts = heuristic(attempt(WEATHER_OSLO, decision("None of the tools gives the weather in Oslo.",
                                                           ("get_weather", {"city": "Oslo"}))))
    gives_up = heuristic(attempt("Tell me a joke", decision("I'm unable to tell which tool tells a joke.")))
    assert abstains.evidence["give_up_phrases"] == [] and not abstains.evidence["contradicts_calls"]
    assert contradicts.evidence["contradicts_calls"] and contradicts.score > 0.5
    assert abstains.score < gives_up.score


# ------------------------------------------------------------------------------------------------ validation


def test_validation_flags_unknown_tools_invalid_arguments_and_parse_errors():
    validation = ValidationDetector()
    assert validation(attempt(WEATHER_OSLO, decision("ok", ("get_weather", {"city": "Oslo"})))).score == 0.0
    assert validation(attempt(WEATHER_OSLO, decision("abstain"))).score == 0.0
    unknown = validation(attempt(WEATHER_OSLO, decision("x", ("get_forecast", {"city": "Oslo"}))))
    invalid = validation(attempt(WEATHER_OSLO, decision("x", ("get_weather", {"town": "Oslo"}))))
    unparsed = validation(attempt(WEATHER_OSLO, MultiToolDecision(parse_error="not JSON")))
    assert unknown.score == invalid.score == unparsed.score == 1.0
    assert "unknown_tool" in unknown.evidence["problems"][0]
    assert "invalid_arguments" in invalid.evidence["problems"][0]
    assert unparsed.evidence["problems"] == ["parse_error: not JSON"]


# ------------------------------------------------------------------------------------------------ confidence


def tokens_for(text, low_pieces, low=-2.0, high=-0.01, split=None):
    """Tokenize ``text`` on the given pieces (kept as tokens) and give those pieces a low log-probability."""
    pieces, rest = [], text
    for piece in split or low_pieces:
        head, sep, rest = rest.partition(piece)
        pieces += [(head, high, None), (piece, low if piece in low_pieces else high, None)]
    pieces.append((rest, high, None))
    return [(t, lp, b) for t, lp, b in pieces if t]


def test_confidence_uses_only_the_tool_name_tokens():
    text = json.dumps({"reasoning": "weather", "tool_calls": [{"tool_name": "get_weather",
                                                                "arguments": {"city": "Oslo"}}]})
    generation = Generation(text, tokens_for(text, ["get_weather"]))
    dec = decision("weather", ("get_weather", {"city": "Oslo"}))
    signal = ConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=generation))
    assert signal.score == pytest.approx(1 - math.exp(-2.0))
    assert signal.evidence["target"] == "tool_names" and signal.evidence["tokens"] == ["get_weather"]
    sure = Generation(text, tokens_for(text, [], split=["get_weather"]))
    assert ConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=sure)).score == pytest.approx(1 - math.exp(-0.01))


def test_confidence_of_an_abstention_reads_the_empty_list_even_in_a_json_string():
    text = '{"reasoning": "a [] in the reasoning is not it", "tool_calls": "[]"}'
    tokens = tokens_for(text, ["[]"], split=["[]", "[]"])  # the first [] (in the reasoning) keeps a high logprob
    tokens = [(t, -0.01, b) if i < 3 else (t, lp, b) for i, (t, lp, b) in enumerate(tokens)]
    signal = ConfidenceDetector()(attempt("Tell me a joke", decision("a [] in the reasoning is not it"),
                                          generation=Generation(text, tokens)))
    assert signal.evidence["target"] == "empty_list"
    assert signal.score == pytest.approx(1 - math.exp(-2.0))


def test_confidence_aligns_byte_tokens_and_escaped_names():
    text = '{"reasoning": "météo à Oslo", "tool_calls": "[{\\"tool_name\\": \\"get_weather\\", \\"arguments\\": {}}]"}'
    raw = text.encode()
    cut = raw.index("é".encode()) + 1  # a token boundary inside a two-byte character
    name = raw.index(b"get_weather")
    chunks = [raw[:cut], raw[cut:name], raw[name:name + 11], raw[name + 11:]]
    tokens = [(c.decode("utf-8", "replace"), -3.0 if c == b"get_weather" else -0.01, c) for c in chunks]
    dec = decision("météo à Oslo", ("get_weather", {"city": "Oslo"}))
    signal = ConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=Generation(text, tokens)))
    assert signal.evidence["alignment"] == "bytes" and signal.evidence["target"] == "tool_names"
    assert signal.score == pytest.approx(1 - math.exp(-3.0))


def test_least_confidence_reads_the_weakest_token_of_the_calls_not_of_the_reasoning():
    text = json.dumps({"reasoning": "maybe weather", "tool_calls": [{"tool_name": "get_weather",
                                                                      "arguments": {"city": "Oslo"}}]})
    dec = decision("maybe weather", ("get_weather", {"city": "Oslo"}))
    doubtful_city = Generation(text, tokens_for(text, ["Oslo"], split=["maybe", "get_weather", "Oslo"]))
    doubtful_reasoning = Generation(text, tokens_for(text, ["maybe"], split=["maybe", "get_weather", "Oslo"]))
    signal = LeastConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=doubtful_city))
    assert signal.score == pytest.approx(1 - math.exp(-2.0)) and signal.evidence["weakest_token"] == "Oslo"
    assert signal.evidence["target"] == "tool_calls"
    # the mean over the name misses an uncertain argument value; the reasoning's doubt is not the decision's
    assert ConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=doubtful_city)).score < 0.05
    assert LeastConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=doubtful_reasoning)).score < 0.05
    with pytest.raises(DetectorUnavailable, match="confidence_min detector"):
        LeastConfidenceDetector()(attempt(WEATHER_OSLO, dec))


@pytest.mark.parametrize("opening", ["<tool_call>\n", "```json\n"])
def test_least_confidence_of_a_native_answer_starts_at_its_first_call(opening):
    closing = "\n</tool_call>" if opening.startswith("<") else "\n```"
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Oslo"}})
    text = f"I am not sure, maybe the weather.\n{opening}{call}{closing}"
    dec = decision("", ("get_weather", {"city": "Oslo"}))
    doubtful_prose = Generation(text, tokens_for(text, ["maybe"], split=["maybe", "get_weather"]))
    doubtful_name = Generation(text, tokens_for(text, ["get_weather"], split=["maybe", "get_weather"]))
    assert LeastConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=doubtful_prose)).score < 0.05
    signal = LeastConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=doubtful_name))
    assert signal.evidence["target"] == "tool_calls" and signal.evidence["weakest_token"] == "get_weather"
    prose = "No listed tool can tell jokes."
    abstention = LeastConfidenceDetector()(attempt("Tell me a joke", decision(prose),
                                                   generation=Generation(prose, tokens_for(prose, []))))
    assert abstention.evidence["target"] == "whole_answer"


def test_confidence_falls_back_to_the_whole_answer_and_needs_logprobs():
    dec = decision("weather", ("get_weather", {"city": "Oslo"}))
    odd = Generation("get_weather(Oslo)", [("get_weather(Oslo)", -0.5, None)])
    assert ConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=odd)).evidence["target"] == "whole_answer"
    with pytest.raises(DetectorUnavailable, match="logprobs=True"):
        ConfidenceDetector()(attempt(WEATHER_OSLO, dec, generation=Generation("text")))
    with pytest.raises(DetectorUnavailable):
        ConfidenceDetector()(attempt(WEATHER_OSLO, dec))


def test_logprobs_reach_the_detector_through_the_selector():
    lm = ScriptedLM(weak_answers(), logprobs=weak_logprobs()).copy(logprobs=True)
    selector = MultiToolSelector(strategy="json-cot")
    scores = {}
    for city in ("Oslo", "Rome"):
        request = f"What is the weather in {city}?"
        with dspy.context(lm=lm, adapter=ToolSelectionAdapter()), capture_generation() as captured:
            dec = selector.decide(request, tools=TOOLS)
        generation = captured.generation
        assert generation.has_logprobs and "".join(t for t, _, _ in generation.tokens) == generation.text
        scores[city] = ConfidenceDetector()(attempt(request, dec, generation=generation))
    assert scores["Oslo"].score == pytest.approx(1 - math.exp(-0.02))
    assert scores["Rome"].score == pytest.approx(1 - math.exp(-1.6))
    assert scores["Rome"].evidence["tokens"] == ["get_time"]


# ------------------------------------------------------------------------------------------------ consistency


class RolloutRecorder(BaseCallback):
    def __init__(self):
        self.seen = []

    def on_lm_start(self, call_id, instance, inputs):
        self.seen.append((instance.kwargs.get("rollout_id"), instance.kwargs.get("temperature")))


def consistency_of(samples):
    lm = ScriptedLM({"Oslo": answer("w", ("get_weather", {"city": "Oslo"}))}, samples={"Oslo": samples})
    selector, recorder = MultiToolSelector(strategy="json-cot"), RolloutRecorder()
    dec = decision("w", ("get_weather", {"city": "Oslo"}))
    with dspy.context(lm=lm, adapter=ToolSelectionAdapter(), callbacks=[recorder]):
        sampler = make_sampler(lambda r, t: selector(request=r, tools=t), WEATHER_OSLO, TOOLS)
        signal = ConsistencyDetector(k=3, temperature=0.8)(attempt(WEATHER_OSLO, dec, sampler=sampler))
    return signal, recorder.seen


def test_consistency_from_samples_that_agree_or_disagree():
    weather, clock = answer("w", ("get_weather", {"city": "Oslo"})), answer("t", ("get_time", {"city": "Oslo"}))
    agree, seen = consistency_of([weather])
    assert agree.score == 0.0 and agree.evidence["agrees_with_decision"]
    assert seen == [(1, 0.8), (2, 0.8), (3, 0.8)]  # one rollout per sample, sampled
    assert agree.evidence["input_tokens"] > 0 and agree.evidence["output_tokens"] > 0
    split, _ = consistency_of([weather, clock, weather])
    assert split.score == pytest.approx(1 / 3) and split.evidence["modal"] == ["get_weather"]
    scattered, _ = consistency_of([weather, clock, answer("none")])
    assert scattered.score == pytest.approx(2 / 3)


class CountingEngine:
    """A provider engine that answers differently on every call."""

    def __init__(self):
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        text = json.dumps({"reasoning": f"sample {self.calls}",
                           "tool_calls": [] if self.calls % 2 else [{"tool_name": "get_weather",
                                                                     "arguments": {"city": "Oslo"}}]})
        return Response(id=None, model="x", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=5, output_tokens=5, total_tokens=10))


def test_rollout_ids_keep_samples_apart_in_the_cache(monkeypatch):
    monkeypatch.setattr(dspy, "cache", Cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=None))
    engine = CountingEngine()
    lm = dspy.LM("openai/cache-probe", engine=engine, cache=True, temperature=0.0)
    selector = MultiToolSelector(strategy="json-cot")
    with dspy.context(lm=lm, adapter=ToolSelectionAdapter()):
        sampler = make_sampler(lambda r, t: selector(request=r, tools=t), WEATHER_OSLO, TOOLS)
        first = ConsistencyDetector(k=3)(attempt(WEATHER_OSLO, decision("x"), sampler=sampler))
        again = ConsistencyDetector(k=3)(attempt(WEATHER_OSLO, decision("x"), sampler=sampler))
    assert engine.calls == 3  # three distinct samples, then all three from the cache
    assert first.score == again.score == pytest.approx(1 / 3)


def test_consistency_needs_a_sampler_and_sane_settings():
    with pytest.raises(DetectorUnavailable, match="sampler"):
        ConsistencyDetector()(attempt(WEATHER_OSLO, decision("x")))
    with pytest.raises(ValueError, match="k >= 2"):
        ConsistencyDetector(k=1)
    with pytest.raises(ValueError, match="temperature"):
        ConsistencyDetector(temperature=0.0)


# ------------------------------------------------------------------------------------------------ combined


def test_combined_takes_the_max_or_a_weighted_mean_and_skips_unavailable_parts():
    stuck = attempt(WEATHER_OSLO, decision("Perhaps?", ("get_forecast", {"city": "Oslo"})))
    heuristic = HeuristicDetector()(stuck).score
    by_max = CombinedDetector([HeuristicDetector(), ValidationDetector(), ConfidenceDetector()])(stuck)
    assert by_max.score == 1.0 and "confidence" in by_max.evidence["unavailable"]
    by_mean = CombinedDetector([HeuristicDetector(), ValidationDetector()], mode="mean", weights=[3, 1])(stuck)
    assert by_mean.score == pytest.approx((3 * heuristic + 1.0) / 4)
    with pytest.raises(DetectorUnavailable):
        CombinedDetector([ConfidenceDetector()])(stuck)
    with pytest.raises(ValueError, match="one non-negative weight per component"):
        CombinedDetector([ValidationDetector()], weights=[1, 2])


def test_make_detector_names_the_choices():
    assert make_detector("combined", components=["validation", "heuristic"], mode="mean").mode == "mean"
    with pytest.raises(ToolSelectionError, match="Unknown stuck detector 'gut'.*heuristic, validation"):
        make_detector("gut")
    with pytest.raises(ToolSelectionError, match="Unknown combined component"):
        make_detector("combined", components=["combined"])
