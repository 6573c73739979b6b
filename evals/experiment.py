"""One experiment, one value: ``Experiment`` holds what every kind of run is made of -- the suite, the split, the
model, the selector (``SelectorSpec``), how it runs (``RunConfig``) -- and a section for a kind that needs more
(``loop``: the tool-calling loop's turns and escalation; ``optimizer``: an optimization, ``OptimizeSettings``).

    experiment = Experiment(suite="finance", selector=SelectorSpec(strategy="native"), run=RunConfig(limit=20))
    experiment.describe()       # {"suite": "finance", "split": "test", "model": ..., "strategy": "native", ...}
    experiment.dump_yaml("finance.yaml"); Experiment.load_yaml("finance.yaml") == experiment
    experiment.evaluate()       # evals.evaluation.evaluate with these values

Every command builds it the same way, from one table of flags made from the fields (``evals.cli_experiment``,
``tool_selection.flags``): a new field of any section is a flag of every command that takes it, a sweep axis, a
key of ``describe()`` and of the saved YAML, with no other edit.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.optimize_settings import OptimizeSettings
from tool_selection.defaults import DEFAULT_MODEL, DEFAULT_SUITE
from tool_selection.flags import add_flags, given_fields
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec, YamlValue, _validated

if TYPE_CHECKING:
    from evals.evaluation import EvalResult

__all__ = ["Experiment", "LoopSection", "add_loop_flags", "loop_section"]

Split = Literal["train", "dev", "test", "all"]


class LoopSection(BaseModel):
    """How the tool-calling loop runs each task's turns (``toolsel eval loop``): a secondary model a stuck step
    escalates to, the first step and the finish of a turn, and solved tasks shown first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    secondary: str | None = Field(default=None, description="A larger model a stuck step escalates to (the loop's "
                                                             "stuck detector).")
    escalation: Literal["delegate", "guide"] = Field(default="delegate", description="What the secondary does for "
                                                                                     "a stuck step.")
    threshold: float | None = Field(default=None, description="Stuck score that escalates (default: the escalation "
                                    "policy's, 0.5: the loop's detector scores 0.7 and up when stuck).",
                                    json_schema_extra={"cli_type": "threshold"})
    first_step: Literal["auto", "required"] = Field(
        default="auto", description="'required' makes each turn's first decision a call (tool_choice; native "
                                    "strategies); auto: the model decides.")
    finish: Literal["answer", "tool"] = Field(
        default="answer", description="How a turn ends: an answer without a call, or 'tool': every decision is a "
                                      "required call and the model ends the turn by calling finish(answer) (native "
                                      "strategies).")
    trajectories: str | None = Field(
        default=None, description="Solved tasks shown before each task's conversation (the file or folder "
                                  "'toolsel optimize --suite SUITE' wrote for a loop suite or a BFCL multi-turn "
                                  "category).", json_schema_extra={"metavar": "PATH"})
    shown: int = Field(default=2, ge=0, le=16, description="How many of --trajectories open each task: those whose "
                                                           "tools the task has.", json_schema_extra={"metavar": "N"})
    trajectories_as: Literal["turns", "text"] = Field(
        default="turns", description="Show --trajectories as earlier turns of the conversation, or as examples in "
                                     "the system prompt.")


class Experiment(YamlValue):
    """Everything a run is (see the module docstring); frozen, so it can be shared, compared and recorded."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    yaml_section: ClassVar[str] = "experiment"

    suite: str = Field(default=DEFAULT_SUITE, description="Suite name, bfcl:CATEGORY[+CATEGORY], hf:FOLDER or "
                                                          "hf:NAME, or a .jsonl path.")
    split: Split = Field(default="test", description="Split.")
    model: str = Field(default=DEFAULT_MODEL, description="Model spec.")
    selector: SelectorSpec = Field(default_factory=SelectorSpec)
    run: RunConfig = Field(default_factory=RunConfig)
    loop: LoopSection | None = None
    optimizer: OptimizeSettings | None = None

    @classmethod
    def build(cls, **fields: Any) -> Experiment:
        """An experiment from fields, with every bad one named in one ``SpecError``."""
        return _validated(cls, fields)

    def describe(self) -> dict[str, Any]:
        """What a run records of this experiment: the suite, split and model, the selector as its params say it
        (``SelectorSpec.describe``), every run setting and loop setting that departs from its default."""
        described: dict[str, Any] = {"suite": self.suite, "split": self.split, "model": self.model,
                                     **self.selector.describe()}
        for section in (self.run, self.loop, self.optimizer):
            if section is not None:
                described.update(section.model_dump(mode="json", exclude_defaults=True))
        return described

    def evaluate(self, **options: Any) -> EvalResult:
        """``evals.evaluation.evaluate`` of this experiment (``options``: its other keywords, such as ``tools``)."""
        from evals.evaluation import evaluate

        return evaluate(self.suite, self.model, selector=self.selector, run=self.run,
                        split=None if self.split == "all" else self.split, **options)


def add_loop_flags(parser: argparse.ArgumentParser) -> None:
    """A flag per field of ``LoopSection``."""
    add_flags(parser.add_argument_group("the loop (a LoopSection)"), LoopSection)


def loop_section(args: argparse.Namespace) -> LoopSection:
    """The loop section the loop flags describe."""
    return _validated(LoopSection, given_fields(args, LoopSection))
