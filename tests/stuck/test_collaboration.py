"""The collaboration protocol: staying, delegating, guiding, retrying; usage and cost; config validation."""

import re

import dspy
import pytest

import tool_selection.collaboration.protocol as protocol_module
from evals.runner import Evaluator
from evals.suite import load_suite
from tests.stuck.conftest import TOOLS, ScriptedLM, answer, relative_cost, strong_answers, weak_answers
from tool_selection.collaboration import (
    CollaborationConfigError,
    EscalationPolicy,
    ModelCollaborationProtocol,
    build_protocols,
    load_collaboration_config,
)
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector, ToolSelectionAdapter
from tool_selection.strict_files import FileFormatError

EXAMPLE = """
collaboration:
  enabled: true
  pairs:
    - primary: local:qwen2.5-coder-0.5b
      secondary: local:qwen2.5-coder-1.5b
      detector: confidence
      threshold: 0.6
      strategy: delegate
      max_retries: 2
"""


def protocol(weak, strong, **policy):
    """A protocol over the two scripted models whose ``EscalationPolicy`` has the fields ``policy`` gives."""
    escalation = EscalationPolicy(**{"detector": "validation", "threshold": 0.5, **policy})
    return ModelCollaborationProtocol(weak, strong, escalation=escalation, cost_fn=relative_cost,
                                      selector=MultiToolSelector(strategy="json-cot"))


def run(proto, request):
    with dspy.context(adapter=ToolSelectionAdapter()):
        return proto(request=request, tools=TOOLS)


def test_below_the_threshold_the_primary_answers(weak_lm, strong_lm):
    prediction = run(protocol(weak_lm, strong_lm), "What is the weather in Oslo?")
    record = prediction.collaboration
    assert prediction.decision.tool_names == ["get_weather"]
    assert record.path == "primary" and not record.escalated and record.tries == 1
    assert record.primary.calls == 1 and record.primary.input_tokens > 0 and record.primary.output_tokens > 0
    assert record.secondary.calls == 0 and record.secondary.cost == 0.0 and not strong_lm.calls
    assert record.primary.cost == pytest.approx(relative_cost("test/weak", record.primary.input_tokens,
                                                              record.primary.output_tokens))


def test_above_the_threshold_the_secondary_decides(weak_lm, strong_lm):
    prediction = run(protocol(weak_lm, strong_lm), "What is the weather in Kyiv?")  # weak: unknown tool
    record = prediction.collaboration
    assert record.path == "secondary" and record.escalated
    assert prediction.decision.tool_names == ["get_weather"] and prediction.decision.valid
    assert record.signals[0].score == 1.0 and "unknown_tool" in record.signals[0].evidence["problems"][0]
    assert record.primary.input_tokens > 0 and record.secondary.input_tokens > 0
    assert record.cost == pytest.approx(record.primary.cost + record.secondary.cost)
    assert record.secondary.cost > record.primary.cost  # the fake catalog prices the strong model 10x
    extras = prediction.row_extras
    assert extras["collab_path"] == "secondary" and extras["collab_escalated"] == 1.0
    assert extras["secondary_output_tokens"] == record.secondary.output_tokens


def test_guide_strategy_makes_the_primary_decide_again_with_guidance(weak_lm, strong_lm):
    proto = protocol(weak_lm, strong_lm, detector="heuristic", strategy="guide")
    prediction = run(proto, "What is the weather in Rome?")  # weak gives up and picks the clock
    record = prediction.collaboration
    assert record.path == "guided" and record.escalated
    assert record.guidance == "Call get_weather with the city named in the request."
    assert prediction.decision.tool_names == ["get_weather"]
    assert "Guidance from a more capable model: Call get_weather" in weak_lm.calls[-1]
    assert "Stuck detector heuristic scored it" in strong_lm.calls[-1]
    assert record.primary.calls == 2 and record.secondary.calls == 1


def test_max_retries_are_respected_before_escalating(weak_lm, strong_lm):
    proto = protocol(weak_lm, strong_lm, max_retries=2, temperature=0.9)
    record = run(proto, "What is the weather in Kyiv?").collaboration
    assert record.tries == 3 and len(record.signals) == 3 and record.path == "secondary"
    assert len(weak_lm.calls) == 3 and len(strong_lm.calls) == 1
    assert record.primary.calls == 3


def test_a_retry_that_gets_unstuck_stays_with_the_primary(strong_lm):
    fixed = answer("Weather in Kyiv: get_weather.", ("get_weather", {"city": "Kyiv"}))
    weak = ScriptedLM(weak_answers(), name="test/weak", samples={"Kyiv": [fixed]})  # sampled retries answer well
    record = run(protocol(weak, strong_lm, max_retries=2), "What is the weather in Kyiv?").collaboration
    assert record.path == "primary" and record.tries == 2 and [s.score for s in record.signals] == [1.0, 0.0]
    assert not strong_lm.calls


def test_consistency_samples_count_as_primary_usage(strong_lm):
    weak = ScriptedLM(weak_answers(), name="test/weak")
    plain = run(protocol(weak, strong_lm, detector="validation"), "What is the weather in Oslo?").collaboration
    sampled = run(protocol(weak, strong_lm, detector="consistency"), "What is the weather in Oslo?").collaboration
    assert sampled.path == "primary"
    assert sampled.primary.output_tokens == pytest.approx(4 * plain.primary.output_tokens)  # decision + 3 samples


def test_protocol_runs_under_the_harness_and_records_paths(suite_path, weak_lm, strong_lm):
    suite = load_suite(suite_path).split("test")
    result = Evaluator(suite=suite, progress=False)(protocol(weak_lm, strong_lm))  # in the protocol's default adapter
    rows = result.results.set_index("id")
    assert set(rows["collab_path"]) == {"primary", "secondary"}
    assert rows.loc["w-hanoi", "collab_path"] == "secondary" and rows.loc["w-hanoi", "full_match"] == 1.0
    assert rows.loc["w-paris", "collab_path"] == "primary"
    escalated = rows.loc["w-hanoi"]
    assert escalated["input_tokens"] == escalated["primary_input_tokens"] + escalated["secondary_input_tokens"]


def test_protocols_from_a_yaml_config(tmp_path, monkeypatch, weak_lm, strong_lm):
    path = tmp_path / "collab.yaml"
    path.write_text(EXAMPLE)
    config = load_collaboration_config(path)
    pair = config.pairs[0]
    assert (pair.primary, pair.detector, pair.threshold, pair.strategy, pair.max_retries) == (
        "local:qwen2.5-coder-0.5b", "confidence", 0.6, "delegate", 2)
    models = {pair.primary: weak_lm, pair.secondary: strong_lm}
    monkeypatch.setattr(protocol_module, "resolve_lm", lambda spec, logprobs, **_: models[spec].copy(logprobs=logprobs))
    (proto,) = build_protocols(config, cost_fn=relative_cost)
    assert proto.threshold == 0.6 and proto.max_retries == 2 and proto.detector.name == "confidence"
    assert proto.selector.strategy_name == pair.selection_strategy == "auto"  # the selector's default
    chat = load_collaboration_config({"collaboration": {"pairs": [{**pair.model_dump(), "selection_strategy": "chat-cot"}]}})
    assert build_protocols(chat, cost_fn=relative_cost)[0].selector.strategy_name == "chat-cot"
    assert proto.primary_lm.kwargs["logprobs"] is True  # the confidence detector asks the primary for logprobs
    assert build_protocols(load_collaboration_config({"collaboration": {"enabled": False}})) == []


@pytest.mark.parametrize("change, message", [
    ({"detector": "vibes"}, "pairs.0.detector: Unknown stuck detector 'vibes'; choose one of: heuristic, validation"),
    ({"threshold": 1.5}, "pairs.0.threshold: threshold must be within [0, 1]"),
    ({"threshold": -0.1}, "threshold must be within [0, 1]"),
    ({"primary": "local:"}, "pairs.0.primary: Model spec 'local:' names no model"),
    ({"secondary": "gpt 4o"}, "pairs.0.secondary: Model spec 'gpt 4o' contains whitespace"),
    ({"secondary": "local:qwen2.5-coder-0.5b"}, "primary and secondary are the same model"),
    ({"strategy": "vote"}, "pairs.0.strategy: Input should be 'delegate' or 'guide'"),
    ({"max_retries": -1}, "pairs.0.max_retries"),
    ({"selection_strategy": "nativ"}, "pairs.0.selection_strategy: Unknown selection strategy 'nativ'"),
    ({"treshold": 0.5}, "pairs.0.treshold: Extra inputs are not permitted"),
    ({"components": ["validation", "astrology"]}, "components must be a non-empty list"),
])
def test_config_errors_name_the_field_and_the_fix(change, message):
    pair = {"primary": "local:qwen2.5-coder-0.5b", "secondary": "local:qwen2.5-coder-1.5b", **change}
    with pytest.raises(CollaborationConfigError, match=re.escape(message)) as error:
        load_collaboration_config({"collaboration": {"pairs": [pair]}})
    assert str(error.value).startswith("collaboration config: collaboration.pairs.0")


@pytest.mark.parametrize("spec, parsed", [
    ("local:/models/small.gguf", "local:/models/small.gguf"),  # the README's form for any GGUF file
    (" local:Qwen2.5-Coder-0.5B ", "local:qwen2.5-coder-0.5b"),
    ("openai/gpt-4o-mini", "openai/gpt-4o-mini"),
])
def test_config_model_specs_are_parsed_by_model_spec(spec, parsed):
    pair = {"primary": spec, "secondary": "local:qwen2.5-coder-1.5b"}
    assert load_collaboration_config({"collaboration": {"pairs": [pair]}}).pairs[0].primary == parsed


def test_config_refuses_an_unknown_catalog_model_with_model_specs_error():
    pair = {"primary": "local:qwen-typo", "secondary": "local:qwen2.5-coder-1.5b"}
    message = ("collaboration config: collaboration.pairs.0.primary: Unknown embedded model 'qwen-typo' in spec "
               "'local:qwen-typo'. Known: qwen2.5-coder-0.5b")
    with pytest.raises(CollaborationConfigError, match=re.escape(message)):
        load_collaboration_config({"collaboration": {"pairs": [pair]}})


def test_config_file_errors(tmp_path):
    with pytest.raises(CollaborationConfigError, match="does not exist"):
        load_collaboration_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("collaboration: [unclosed")
    with pytest.raises(FileFormatError, match="bad.yaml, line 1: is not valid YAML"):
        load_collaboration_config(bad)
    bad.write_text("pairs: []")
    with pytest.raises(CollaborationConfigError, match="top-level 'collaboration' section"):
        load_collaboration_config(bad)
    with pytest.raises(CollaborationConfigError, match="enabled but lists no pairs"):
        load_collaboration_config({"collaboration": {"enabled": True, "pairs": []}})


def test_protocol_arguments_are_checked(weak_lm, strong_lm):
    with pytest.raises(CollaborationConfigError, match="threshold must be within"):
        protocol(weak_lm, strong_lm, threshold=2)
    with pytest.raises(CollaborationConfigError, match="strategy must be"):
        protocol(weak_lm, strong_lm, strategy="vote")

    def no_price(spec, i, o):
        raise KeyError(spec)

    with pytest.raises(ToolSelectionError, match="No cost for model 'test/weak'.*cost_fn"):
        ModelCollaborationProtocol(weak_lm, strong_lm, cost_fn=no_price)


def test_secondary_answers_are_used_verbatim_when_delegating(weak_lm):
    strong = ScriptedLM({**strong_answers(), "Kyiv": answer("Both.", ("get_weather", {"city": "Kyiv"}),
                                                                ("get_time", {"city": "Kyiv"}))}, name="test/strong")
    prediction = run(protocol(weak_lm, strong), "What is the weather in Kyiv?")
    assert sorted(prediction.decision.tool_names) == ["get_time", "get_weather"]
