"""A selector as one value: ``SelectorSpec`` validates once, builds the selector, describes it, and round-trips
through YAML and a compiled selector's manifest; ``RunConfig`` says how a run is carried out."""

import dspy
import pytest
from pydantic import ValidationError

from tests.core.tools_fixture import Add, Echo
from tool_selection import ToolSet
from tool_selection.compiled import Manifest, save_compiled, tool_fingerprint
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.selector import MultiToolSelector
from tool_selection.spec import GateSpec, RetrievalSpec, SelectorSpec, SpecError

TOOLS = ToolSet(name="fixture", tools=(Echo, Add))


def test_a_spec_is_frozen_and_validated_once_with_every_problem_named():
    spec = SelectorSpec(strategy="gate+native", gate=GateSpec(threshold=0.3))
    assert spec.gated and spec.base_strategy == "native"
    with pytest.raises(ValidationError):
        spec.strategy = "json"
    with pytest.raises(SpecError, match=r"strategy: Unknown selection strategy 'nativ' \(did you mean 'native'"):
        SelectorSpec.build(strategy="nativ")
    with pytest.raises(SpecError) as error:
        SelectorSpec.build(gate={"threshold": float("nan")}, retrieval={"k": 5, "rerank": 3},
                           undeclared_arguments="ignore")
    message = str(error.value)
    assert "gate.threshold: gate_threshold (--gate-threshold) is NaN" in message
    assert "retrieval: rerank=3 must exceed retrieve=5" in message and "undeclared_arguments: Input should be" in message


def test_describe_gives_the_params_runs_are_named_and_logged_by():
    assert SelectorSpec().describe() == {"program": "zero-shot", "strategy": "auto", "relevance": "auto"}
    spec = SelectorSpec(strategy="gate+json-cot", gate=GateSpec(model="m", threshold=0.2), relevance="none",
                        retrieval=RetrievalSpec(k=5, retriever="bm25", rerank=10), undeclared_arguments="drop",
                        program="programs/finance")
    assert spec.describe() == {"program": "programs/finance", "strategy": "gate+json-cot", "retrieve": 5,
                               "retriever": "bm25", "rerank": 10, "undeclared_arguments": "drop", "gate_model": "m",
                               "gate_threshold": 0.2}
    assert SelectorSpec.from_params(spec.describe()) == spec  # what a finished run's params say it was
    assert SelectorSpec.from_params({"suite": "s"}) == SelectorSpec(strategy="json-cot", relevance="none")


def test_a_spec_and_a_run_config_round_trip_through_yaml(tmp_path):
    spec = SelectorSpec(tools="finance", strategy="native", retrieval=RetrievalSpec(k=3), relevance_signals=("unlisted",))
    assert SelectorSpec.load_yaml(spec.dump_yaml(tmp_path / "spec.yaml")) == spec
    assert spec.to_yaml().splitlines()[0] == "tools: finance"  # only what departs from the defaults
    (tmp_path / "both.yaml").write_text("selector:\n  strategy: json\nrun:\n  threads: 4\n  limit: 2\n")
    assert SelectorSpec.load_yaml(tmp_path / "both.yaml").strategy == "json"
    run = RunConfig.load_yaml(tmp_path / "both.yaml")
    assert (run.threads, run.limit, run.mlflow) == (4, 2, True)
    (tmp_path / "bad.yaml").write_text("run:\n  threads: 0\n  colour: red\n")
    with pytest.raises(SpecError, match=r"bad.yaml: threads: Input should be greater than or equal to 1; colour: "
                                        r"Extra inputs are not permitted"):
        RunConfig.load_yaml(tmp_path / "bad.yaml")
    assert run.replace(threads=2).threads == 2 and run.threads == 4


def test_from_spec_builds_what_the_spec_says_and_to_spec_gives_it_back():
    spec = SelectorSpec(tools="finance", strategy="gate+json", gate=GateSpec(threshold=0.4), relevance="none",
                        retrieval=RetrievalSpec(k=2, retriever="bm25"), undeclared_arguments="drop")
    selector = MultiToolSelector.from_spec(spec)
    assert selector.tools.name == "finance" and selector.strategy_name == "gate+json"
    assert (selector.gate_threshold, selector.retrieve, selector.retriever_name) == (0.4, 2, "bm25")
    assert selector.undeclared_arguments == "drop" and selector.relevance is None
    assert selector.to_spec() == spec


def test_the_relevance_model_is_resolved_when_the_selector_is_built(monkeypatch, tmp_path):
    """``auto`` picks the model shipped for the model the selector runs with, at build time: configuring DSPy
    afterwards cannot leave the selector without it."""
    from tests.relevance.test_model import table
    from tool_selection.relevance import fit_relevance_model
    from tool_selection.relevance import model as relevance_model

    x, y = table()
    fit_relevance_model(x, y, ["unlisted", "grounded_args"]).save(tmp_path / "tiny.json")
    monkeypatch.setattr(relevance_model, "SHIPPED_DIR", tmp_path)
    with dspy.context(lm=None), pytest.raises(ToolSelectionError, match="relevance='auto' and cascade='auto' apply "
                                                                        "what ships for the model the selector "
                                                                        "runs with: pass model="):
        MultiToolSelector.from_spec(SelectorSpec())
    selector = MultiToolSelector.from_spec(SelectorSpec(), model="local:tiny")
    assert selector.relevance is not None and selector.relevance.model.signals == ("unlisted", "grounded_args")
    assert MultiToolSelector.from_spec(SelectorSpec(), model="local:other").relevance is None


def test_a_relevance_setting_given_to_the_constructor_resolves_as_a_specs(monkeypatch, tmp_path):
    """``MultiToolSelector(relevance="auto")`` takes the model shipped for the configured LM's model, as
    ``from_spec`` does; ``"none"`` is no stage (neither is read as a file's name)."""
    from tests.relevance.test_model import table
    from tool_selection.relevance import fit_relevance_model
    from tool_selection.relevance import model as relevance_model

    x, y = table()
    fit_relevance_model(x, y, ["unlisted", "grounded_args"]).save(tmp_path / "tiny.json")
    monkeypatch.setattr(relevance_model, "SHIPPED_DIR", tmp_path)
    with dspy.context(lm=dspy.LM("local:tiny")):
        selector = MultiToolSelector(TOOLS, relevance="auto")
    assert selector.relevance.model.signals == ("unlisted", "grounded_args") and selector.spec.relevance == "auto"
    none = MultiToolSelector(TOOLS, relevance="none")
    assert none.relevance is None and none.to_spec().relevance == "none"
    with dspy.context(lm=None), pytest.raises(ToolSelectionError, match="relevance='auto' and cascade='auto' apply"):
        MultiToolSelector(TOOLS, relevance="auto")


def test_a_selector_holds_its_spec_and_reads_its_settings_from_it():
    selector = MultiToolSelector(TOOLS, strategy=" gate+json ", gate_threshold=0.25,
                                 retrieval=RetrievalSpec(k=1, retriever="bm25"), undeclared_arguments="drop")
    assert selector.spec == selector.to_spec() == SelectorSpec(
        strategy="gate+json", gate=GateSpec(threshold=0.25), retrieval=RetrievalSpec(k=1, retriever="bm25"),
        undeclared_arguments="drop", relevance="none")
    assert (selector.strategy_name, selector.gate_threshold, selector.retrieve) == ("gate+json", 0.25, 1)


def test_a_gate_option_without_a_gate_is_refused():
    with pytest.raises(ToolSelectionError, match="apply to a gated strategy"):
        MultiToolSelector.from_spec(SelectorSpec(strategy="json", gate=GateSpec(threshold=0.5), relevance="none"))


def test_a_compiled_selector_stores_its_spec_and_loads_it_back(tmp_path):
    spec = SelectorSpec(strategy="json-cot", undeclared_arguments="drop", relevance="none")
    program = MultiToolSelector.from_spec(spec)
    program.tools = TOOLS.registry()
    save_compiled(program, tmp_path, Manifest(tools=tool_fingerprint(TOOLS.registry()), tool_set=None, model="m",
                                              strategy="json-cot", selector=program.to_spec()))
    loaded = MultiToolSelector.load(tmp_path, tools=TOOLS)
    assert loaded.manifest.selector == spec and loaded.undeclared_arguments == "drop"
    assert loaded.to_spec() == spec.model_copy(update={"program": str(tmp_path)})


def test_a_manifest_saved_before_specs_still_loads(tmp_path):
    program = MultiToolSelector(TOOLS, strategy="native")
    save_compiled(program, tmp_path, Manifest(tools=tool_fingerprint(TOOLS.registry()), tool_set=None, model="m",
                                              strategy="native"))
    manifest = (tmp_path / "manifest.json").read_text()
    (tmp_path / "manifest.json").write_text(manifest.replace('"selector": null', '"x": 0').replace(',\n  "x": 0', ""))
    assert "selector" not in (tmp_path / "manifest.json").read_text()
    loaded = MultiToolSelector.load(tmp_path, tools=TOOLS)
    assert loaded.strategy_name == "native" and loaded.manifest.selector is None
    assert loaded.manifest.selector_spec() == SelectorSpec(strategy="native")
