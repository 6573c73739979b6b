"""The learned stuck detector's router (stored as data, checked on load) and the live cascade it drives, with
scripted models: the primary's decision, the router's verdict on its relevance signals, the secondary's decision."""

import json

import dspy
import pytest

from tool_selection.interop import from_openai
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import SelectorSpec
from tool_selection.stuck import Attempt, DetectorConfigError, DetectorUnavailable, make_detector
from tool_selection.stuck.learned import (
    LearnedDetector,
    RouterModel,
    RouterModelError,
    resolve_router,
    shipped_router,
    shipped_routers,
)

PRIMARY, SECONDARY = "local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b"
WEATHER = {"name": "get_weather", "description": "Current weather conditions for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
TOOLS = from_openai([WEATHER], name="weather")
# wrong when the call's values are not in the request (grounded_args 0: P 0.99; 1: P 0.007); a decision without a
# call (the signal missing) escalates too
UNGROUNDED_IS_WRONG = RouterModel(signals=("grounded_args",), means=(0.5,), scales=(0.5,), coefficients=(-5.0,),
                                  intercept=0.0, missing=(3.0,), threshold=0.5, primary=PRIMARY, secondary=SECONDARY)

NATIVE_TEMPLATE = {"tokenizer.chat_template": "{% for tool in tools %}{{ tool }}{% endfor %}"}


def call(city: str) -> str:
    return f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "{city}"}}}}\n</tool_call>'


def test_a_router_loads_back_and_a_broken_one_is_refused_naming_the_problem(tmp_path):
    path = UNGROUNDED_IS_WRONG.save(tmp_path / "router.json")
    assert RouterModel.load(path) == UNGROUNDED_IS_WRONG
    data = json.loads(path.read_text())
    for broken, message in ((dict(data, format=2), "not a router file"),
                            (dict(data, missing=[1.0, 2.0]), "one entry per signal"),
                            (dict(data, scales=[0.0]), "scales positive"),
                            (dict(data, secondary="local:nonesuch"), "Unknown embedded model"),
                            (dict(data, signals=["telepathy"]), "telepathy"),
                            (dict(data, extra_code="import os"), "extra_code")):
        path.write_text(json.dumps(broken))
        with pytest.raises(RouterModelError, match=message):
            RouterModel.load(path)
    with pytest.raises(RouterModelError, match="Cannot read the router .*give a router file, auto or none"):
        RouterModel.load(tmp_path / "absent.json")


def test_the_shipped_router_is_the_0_5b_models_and_is_refused_for_another_model(tmp_path):
    assert shipped_routers() == ["qwen2.5-coder-0.5b"]
    router = shipped_router(PRIMARY)
    assert router.secondary == SECONDARY and set(router.trained_on["suites"]) >= {"bfcl_multiple", "bfcl_irrelevance"}
    assert router.trained_on["split"] == "train+dev" and 0 < router.threshold < 1 and router.dev["secondary_accuracy"]
    assert router.reads_stage and router.dev["chosen_on"] == "train + dev, out of fold"
    assert resolve_router("auto", PRIMARY) == router and resolve_router("none", PRIMARY) is None
    with pytest.raises(RouterModelError, match="No router ships for local:qwen2.5-coder-1.5b"):
        resolve_router("auto", SECONDARY)
    path = UNGROUNDED_IS_WRONG.save(tmp_path / "r.json")
    with pytest.raises(RouterModelError, match="fitted on the decisions of local:qwen2.5-coder-0.5b"):
        resolve_router(str(path), "openai/gpt-4o-mini")


def test_the_learned_detector_reads_the_selections_signals_and_needs_them(tmp_path):
    detector = LearnedDetector(UNGROUNDED_IS_WRONG)
    decision_request = dict(request="Weather in Oslo?", decision=None)
    grounded = detector(Attempt(**decision_request, features={"grounded_args": 1.0}))
    invented = detector(Attempt(**decision_request, features={"grounded_args": 0.0}))
    assert grounded.score < 0.01 < 0.99 < invented.score and invented.evidence["router"]
    with pytest.raises(DetectorUnavailable, match="give the selector relevance_signals"):
        detector(Attempt(**decision_request))
    with pytest.raises(DetectorConfigError, match="give router"):
        make_detector("learned")
    path = UNGROUNDED_IS_WRONG.save(tmp_path / "router.json")
    assert make_detector("learned", router=str(path)).router == UNGROUNDED_IS_WRONG
    assert make_detector("learned", router="qwen2.5-coder-0.5b").router == shipped_router(PRIMARY)


def cascade(make_lm, tmp_path, primary_answers, secondary_answers):
    """A selector with the test router, the primary and secondary scripted; its prediction and both scripts."""
    router = UNGROUNDED_IS_WRONG.save(tmp_path / "router.json")
    primary_lm, primary = make_lm(primary_answers, cache=False)
    secondary_lm, secondary = make_lm(secondary_answers, cache=False)
    secondary.metadata = NATIVE_TEMPLATE  # the secondary's strategy is checked against its model when built
    spec = SelectorSpec(strategy="native", relevance="none", cascade=str(router))
    selector = MultiToolSelector.from_spec(spec, model=PRIMARY, secondary_lm=secondary_lm)
    with dspy.context(lm=primary_lm):
        prediction = selector(request="What is the weather in Oslo?", tools=TOOLS)
    return prediction, primary, secondary


def test_a_decision_the_router_judges_wrong_is_made_again_by_the_secondary(make_lm, tmp_path):
    prediction, primary, secondary = cascade(make_lm, tmp_path, [call("Paris")], [call("Oslo")])
    assert prediction.decision.tool_calls[0].arguments == {"city": "Oslo"}
    extras = prediction.row_extras
    assert extras["cascade_decided_by"] == "secondary" and extras["cascade_escalated"] == 1.0
    assert extras["cascade_wrong_p"] > 0.99 and extras["rel_grounded_args"] == 0.0  # the primary's, kept
    assert extras["cascade_primary_calls"] == '["get_weather"]'
    assert extras["cascade_secondary_seconds"] > 0 and extras["cascade_secondary_input_tokens"] > 0
    assert len(primary.calls) == 1 and len(secondary.calls) == 1


def test_a_decision_the_router_trusts_costs_the_secondary_nothing(make_lm, tmp_path):
    prediction, _, secondary = cascade(make_lm, tmp_path, [call("Oslo")], [call("Bergen")])
    assert prediction.decision.tool_calls[0].arguments == {"city": "Oslo"}
    extras = prediction.row_extras
    assert extras["cascade_decided_by"] == "primary" and extras["cascade_wrong_p"] < 0.01
    assert extras["cascade_secondary_seconds"] == 0.0 and secondary.calls == []


def test_a_router_may_read_the_relevance_stages_verdict_and_nothing_unknown():
    from tool_selection.cascade import Cascade
    from tool_selection.decision import MultiToolDecision
    from tool_selection.stuck.learned import router_inputs

    trusts_kept_calls = RouterModel(signals=("relevance_overruled", "grounded_args"), means=(0.5, 0.5),
                                    scales=(0.5, 0.5), coefficients=(-5.0, 0.0), intercept=0.0, missing=(0.0, 0.0),
                                    threshold=0.5, primary=PRIMARY, secondary=SECONDARY)
    assert trusts_kept_calls.reads_stage and trusts_kept_calls.relevance_signals == ("grounded_args",)
    with pytest.raises(ValueError, match="telepathy"):
        RouterModel.check_inputs(["relevance_p", "telepathy"])
    extras = {"rel_grounded_args": 1.0, "relevance_p": 0.1, "relevance_overruled": 1.0, "relevance_seconds": 0.2}
    assert router_inputs(extras) == {"grounded_args": 1.0, "relevance_p": 0.1, "relevance_overruled": 1.0}
    asked = []
    cascade = Cascade(router=trusts_kept_calls, lm=None,
                      decide=lambda **kwargs: asked.append(kwargs) or dspy.Prediction(decision=MultiToolDecision()))
    for overruled, escalated in ((1.0, 0.0), (0.0, 1.0)):  # a dropped call is trusted, a kept one escalated
        row = {**extras, "relevance_overruled": overruled}
        prediction = dspy.Prediction(decision=MultiToolDecision(), row_extras=row)
        assert cascade.after(prediction, "r", TOOLS, 1.0).row_extras["cascade_escalated"] == escalated
    assert len(asked) == 1


def test_a_cascade_is_refused_where_no_router_ships_and_recorded_in_the_spec(make_lm, tmp_path):
    with pytest.raises(RouterModelError, match="No router ships for local:qwen2.5-coder-1.5b"):
        MultiToolSelector.from_spec(SelectorSpec(relevance="none", cascade="auto"), model=SECONDARY)
    secondary_lm, secondary = make_lm([], cache=False)
    secondary.metadata = NATIVE_TEMPLATE
    with pytest.raises(RouterModelError, match="reads the relevance stage's verdict .*run with relevance auto"):
        MultiToolSelector.from_spec(SelectorSpec(strategy="native", relevance="none", cascade="auto"),
                                    model=PRIMARY, secondary_lm=secondary_lm)
    selector = MultiToolSelector.from_spec(SelectorSpec(strategy="native", cascade="auto"),
                                           model=PRIMARY, secondary_lm=secondary_lm)
    assert selector.to_spec().describe()["cascade"] == "auto" and selector.relevance.model is not None
    router = shipped_router(PRIMARY)
    assert set(router.relevance_signals) <= set(selector.relevance.signals)  # recorded for the router
    signals_only = UNGROUNDED_IS_WRONG.save(tmp_path / "router.json")  # reads no verdict: relevance none will do
    selector = MultiToolSelector.from_spec(SelectorSpec(strategy="native", relevance="none", cascade=str(signals_only)),
                                           model=PRIMARY, secondary_lm=secondary_lm)
    assert selector.relevance.model is None and "grounded_args" in selector.relevance.signals


def test_a_cascade_runs_summary_says_how_much_it_escalated_and_what_each_model_spent():
    import pandas as pd

    from evals.eval_report import cascade_line
    from evals.metrics import summarize

    rows = pd.DataFrame({"full_match": [1.0, 0.0, 1.0, 1.0], "cascade_escalated": [0.0, 1.0, 0.0, 1.0],
                         "cascade_primary_seconds": [1.0, 2.0, 1.0, 2.0],
                         "cascade_secondary_seconds": [0.0, 4.0, 0.0, 6.0]})
    assert summarize(rows)["escalation_rate"] == 0.5
    line = cascade_line("cascade to local:qwen2.5-coder-1.5b (router abc at P(wrong) >= 0.500)", rows)
    assert line.endswith("escalated 2 of 4 decisions (50.0%); seconds per case: primary 1.50, secondary 2.50 "
                         "(5.00 per escalated decision)")


def test_optimizing_a_cascade_is_refused_with_the_fix():
    from evals.optimization import optimize
    from tool_selection.errors import ToolSelectionError

    with pytest.raises(ToolSelectionError, match="optimize without it, then evaluate the compiled program"):
        optimize("treasure_hunt", "local:qwen2.5-coder-0.5b", selector=SelectorSpec(cascade="auto"))
