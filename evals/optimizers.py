"""The optimizers by name: one ``Registry`` of ``Optimizer`` entries (the built-in DSPy optimizers below, those
added with ``register_optimizer`` and the ``tool_selection.optimizers`` entry-point group), each built for an
``OptimizerSetup``: a budget, the student and teacher models, threads and where it may log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from evals.optimization_metrics import feedback_metric, selection_metric
from tool_selection.errors import ToolSelectionError
from tool_selection.named_registry import Registry

__all__ = ["BUDGETS", "OPTIMIZERS", "Optimizer", "OptimizerSetup", "UnknownOptimizerError", "build_optimizer",
           "get_optimizer", "optimizer_names", "register_optimizer"]


# Few-shot sizes and search widths per budget, chosen for CPU-bound local models.
BUDGETS: dict[str, dict[str, int]] = {
    "light": {"demos": 2, "labeled": 2, "candidates": 3},
    "medium": {"demos": 4, "labeled": 4, "candidates": 6},
    "heavy": {"demos": 6, "labeled": 8, "candidates": 12},
}


@dataclass(frozen=True)
class OptimizerSetup:
    """What an optimizer is built for: the budget, the student and teacher LMs, threads and where it may log."""

    budget: str
    student_lm: dspy.BaseLM
    teacher_lm: dspy.BaseLM | None = None
    threads: int = 1
    log_dir: Path | None = None
    max_metric_calls: int | None = None  # GEPA's budget in metric calls, in place of the budget's own

    @property
    def sizes(self) -> dict[str, int]:
        return BUDGETS[self.budget]

    @property
    def teacher_settings(self) -> dict[str, Any]:
        return {"lm": self.teacher_lm} if self.teacher_lm is not None else {}


OptimizerBuilder = Callable[[OptimizerSetup], tuple[Any, dict[str, Any]]]


@dataclass(frozen=True)
class Optimizer:
    """A DSPy optimizer by name: ``build`` makes it for a setup and returns it with the arguments it was given
    (recorded in the manifest); ``uses_dev``: it selects among candidates on dev (``compile(..., valset=dev)``);
    ``stages``: what it does, in order, as ``toolsel optimize`` announces it (DSPy shows each stage's progress)."""

    name: str
    build: OptimizerBuilder
    uses_dev: bool = True
    stages: str = ""


class UnknownOptimizerError(ToolSelectionError, ValueError):
    """An optimizer name that no optimizer is registered under."""


def _check_optimizer(entry: Any) -> None:
    if not isinstance(entry, Optimizer):
        raise TypeError(f"an optimizer entry is an Optimizer(name, build, uses_dev), got {entry!r}")


OPTIMIZERS: Registry[Optimizer] = Registry("optimizer", group="tool_selection.optimizers", check=_check_optimizer,
                                           error=UnknownOptimizerError)
"""The optimizers by name: the built-in ones below, those registered with ``register_optimizer``, and the
``Optimizer`` objects of the ``tool_selection.optimizers`` entry-point group."""


def register_optimizer(name: str, *, uses_dev: bool = True,
                       stages: str = "") -> Callable[[OptimizerBuilder], OptimizerBuilder]:
    """Decorator: make a builder ``(OptimizerSetup) -> (optimizer, arguments)`` available as optimizer ``name``
    (``toolsel optimize --optimizer NAME``, ``optimize(optimizer=NAME)``); returns the builder."""

    def register(build: OptimizerBuilder) -> OptimizerBuilder:
        OPTIMIZERS.add(name, Optimizer(name, build, uses_dev, stages))
        return build

    return register


def optimizer_names() -> list[str]:
    """Every registered optimizer name."""
    return OPTIMIZERS.names()


def get_optimizer(name: str) -> Optimizer:
    """The optimizer registered as ``name``; an unknown name is an error listing the known ones."""
    return OPTIMIZERS.get(name)


@register_optimizer("bootstrap", uses_dev=False, stages="bootstrapping demonstrations from the train cases")
def _bootstrap(setup: OptimizerSetup) -> tuple[Any, dict[str, Any]]:
    args = {"max_bootstrapped_demos": setup.sizes["demos"], "max_labeled_demos": setup.sizes["labeled"]}
    return dspy.BootstrapFewShot(metric=selection_metric, teacher_settings=setup.teacher_settings, **args), args


@register_optimizer("random-search", stages="trials: each bootstraps a candidate set of demonstrations and "
                                         "scores it on dev")
def _random_search(setup: OptimizerSetup) -> tuple[Any, dict[str, Any]]:
    args = {"max_bootstrapped_demos": setup.sizes["demos"], "max_labeled_demos": setup.sizes["labeled"],
            "num_candidate_programs": setup.sizes["candidates"], "num_threads": setup.threads}
    return dspy.BootstrapFewShotWithRandomSearch(metric=selection_metric, teacher_settings=setup.teacher_settings,
                                                 **args), args


@register_optimizer("mipro", stages="bootstrapping demonstrations, proposing instructions, then trials: "
                                 "candidates scored on dev minibatches, the best on all of dev")
def _mipro(setup: OptimizerSetup) -> tuple[Any, dict[str, Any]]:
    sizes, budget, threads = setup.sizes, setup.budget, setup.threads
    args = {"auto": budget, "max_bootstrapped_demos": sizes["demos"], "max_labeled_demos": sizes["labeled"],
            "num_threads": threads}
    optimizer = dspy.MIPROv2(metric=selection_metric, prompt_model=setup.teacher_lm or setup.student_lm,
                             task_model=setup.student_lm, teacher_settings=setup.teacher_settings, auto=budget,
                             num_threads=threads, verbose=False, max_bootstrapped_demos=sizes["demos"],
                             max_labeled_demos=sizes["labeled"],
                             log_dir=str(setup.log_dir) if setup.log_dir else None)
    return optimizer, args


@register_optimizer("gepa", stages="trials: each runs a candidate on a train minibatch, proposes a new "
                                "instruction from its failures, and scores it on dev if it does better")
def _gepa(setup: OptimizerSetup) -> tuple[Any, dict[str, Any]]:
    log_dir = str(setup.log_dir) if setup.log_dir else None
    budget = ({"max_metric_calls": setup.max_metric_calls} if setup.max_metric_calls is not None
              else {"auto": setup.budget})
    args = {**budget, "num_threads": setup.threads, "log_dir": log_dir}
    optimizer = dspy.GEPA(metric=feedback_metric, **budget, reflection_lm=setup.teacher_lm or setup.student_lm,
                          num_threads=setup.threads, log_dir=log_dir, track_stats=True)
    return optimizer, args


def build_optimizer(name: str, budget: str, *, student_lm: dspy.BaseLM, teacher_lm: dspy.BaseLM | None,
                    threads: int, log_dir: Path | None, max_metric_calls: int | None = None
                    ) -> tuple[Any, dict[str, Any]]:
    """The DSPy optimizer and the arguments it was given. The teacher (default: the student) bootstraps
    demonstrations, proposes MIPRO's instructions and is GEPA's reflection model; ``max_metric_calls`` caps GEPA's
    search instead of its budget."""
    setup = OptimizerSetup(budget=budget, student_lm=student_lm, teacher_lm=teacher_lm, threads=threads,
                           log_dir=log_dir, max_metric_calls=max_metric_calls)
    return get_optimizer(name).build(setup)
