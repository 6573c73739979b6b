"""One experiment, one table of flags: a field added to the selector's spec is a flag of every command, a sweep
axis, a key of describe() and of the saved manifest, with no other edit."""

from __future__ import annotations

import argparse
import json

import pytest
from pydantic import Field

from evals import cli_experiment
from evals.cli_experiment import experiment, selector_spec
from evals.experiment import Experiment, LoopSection
from tool_selection.cli import build_parser
from tool_selection.flags import flat_fields
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec, SpecError


class ScratchSpec(SelectorSpec):
    """A selector spec with one knob more, as a contributor would add it."""

    call_budget: int | None = Field(default=None, ge=1, le=8, description="At most N calls per decision.",
                                    json_schema_extra={"metavar": "N"})


class ScratchExperiment(Experiment):
    selector: ScratchSpec = Field(default_factory=ScratchSpec)


@pytest.fixture
def scratch(monkeypatch):
    monkeypatch.setattr(cli_experiment, "EXPERIMENT_TYPE", ScratchExperiment)


def test_a_new_spec_field_is_a_flag_of_eval_and_optimize_and_a_key_of_describe(scratch):
    parser = build_parser()
    chosen = experiment(parser.parse_args(["eval", "--call-budget", "2", "--strategy", "native", "--limit", "3"]))
    assert isinstance(chosen, ScratchExperiment) and chosen.selector.call_budget == 2
    assert chosen.describe()["call_budget"] == 2 and chosen.describe()["limit"] == 3
    assert "call_budget: 2" in chosen.to_yaml()
    assert selector_spec(parser.parse_args(["optimize", "--call-budget", "3"])).call_budget == 3
    assert selector_spec(parser.parse_args(["eval", "loop", "--call-budget", "4"])).call_budget == 4
    assert "--call-budget N" in parser._subparsers._group_actions[0].choices["eval"].format_help()
    with pytest.raises(SystemExit):  # its bounds are the flag's
        parser.parse_args(["eval", "--call-budget", "9"])


def test_a_new_spec_field_is_a_sweep_axis(scratch):
    from evals.sweep_cli import add_arguments, sweep_plan

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    plan = sweep_plan(parser.parse_args(["--call-budget", "1,2", "--limit", "1", "--baseline", "call_budget=2"]))
    cells = plan.cells()
    assert [cell.spec.call_budget for cell in cells] == [1, 2] and plan.baseline == {"call_budget": 2}
    assert "call_budget=1" in cells[0].settings and cells[0].folder != cells[1].folder


def test_a_new_spec_field_is_in_the_saved_manifest():
    from tool_selection.compiled import Manifest

    manifest = Manifest(tool_set=None, model="m", selector=ScratchSpec(strategy="native", call_budget=2))
    assert json.loads(manifest.model_dump_json())["selector"]["call_budget"] == 2


def test_flat_names_are_one_table():
    fields = flat_fields(SelectorSpec)
    assert fields["retrieve"].path == ("retrieval", "k") and fields["gate_threshold"].path == ("gate", "threshold")
    assert fields["rerank"].flag == "--rerank" and "relevance_signals" in fields
    assert set(flat_fields(RunConfig)) >= {"tracking_uri", "max_tokens", "limit", "sample", "seed"}


def test_describe_records_what_departs_from_the_defaults_and_round_trips(tmp_path):
    chosen = Experiment(suite="finance", selector=SelectorSpec(strategy="gate+native", retrieval={"k": 3}),
                        run=RunConfig(limit=5, mlflow=False), loop=LoopSection(finish="tool"))
    described = chosen.describe()
    assert described["retrieve"] == 3 and described["gate_threshold"] is None and described["finish"] == "tool"
    assert "threads" not in described and described["mlflow"] is False
    assert Experiment.load_yaml(chosen.dump_yaml(tmp_path / "experiment.yaml")) == chosen
    assert SelectorSpec.from_params(described) == chosen.selector


def test_a_bad_experiment_names_every_bad_field():
    with pytest.raises(SpecError) as caught:
        Experiment.build(split="validation", run={"limit": 0}, selector={"strategy": "natve"})
    message = str(caught.value)
    assert "split" in message and "limit" in message and "natve" in message
