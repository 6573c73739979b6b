"""The learned stuck detector: a router fitted on a primary model's own relevance signals to predict that its
decision is wrong, stored as data beside the code (``routers/<primary>.json``) and read per decision.

    router = shipped_router("local:qwen2.5-coder-0.5b")    # names its secondary: local:qwen2.5-coder-1.5b
    detector = LearnedDetector(router)                     # or make_detector("learned", router="ROUTER_JSON")
    detector(Attempt(request, decision, features={"call_open": 3.1, ...})).score   # P(the primary is wrong)

The signals are those the relevance stage records for every decision (``rel_<signal>`` columns), so the detector
costs nothing beyond them; a router may also read the stage's own verdict (``STAGE_INPUTS``: its probability that a
call is wanted, and whether it dropped the calls), which needs the stage's relevance model. A router is fitted on
rows other than test and its threshold chosen on rows it was not fitted on by
``python -m evals.benchmarks.learned_router --save``, which also reports it on test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import field_validator

from tool_selection.defaults import AUTO_CASCADE, NO_CASCADE
from tool_selection.errors import ToolSelectionError
from tool_selection.lm.specs import ModelSpec
from tool_selection.relevance.logistic import LogisticModel, fit_logistic, model_file_stem, shipped_names
from tool_selection.relevance.model import missing_retrieval_packages
from tool_selection.relevance.signals import check_signals
from tool_selection.relevance.stage import recorded_signals
from tool_selection.stuck.base import Attempt, DetectorUnavailable, StuckDetector, StuckSignal
from tool_selection.stuck.registry import DetectorConfigError, DetectorOptions, register_detector

__all__ = ["STAGE_INPUTS", "LearnedDetector", "RouterModel", "RouterModelError", "fit_router", "resolve_router",
           "router_inputs", "shipped_router", "shipped_routers"]

ROUTERS_DIR = Path(__file__).parent / "routers"  # <primary model name>.json
STAGE_INPUTS = ("relevance_p", "relevance_overruled")  # the relevance stage's verdict, as its row columns name it
SAVE_COMMAND = "python -m evals.benchmarks.learned_router --save"


class RouterModelError(ToolSelectionError, ValueError):
    """A router that cannot be fitted, read or applied to a model."""


class RouterModel(LogisticModel):
    """P(the ``primary`` model's decision is wrong) from its relevance signals; at or above ``threshold`` the
    request escalates to ``secondary``. ``missing``: what a signal without a value (no call made) adds."""

    what: ClassVar[str] = "router"
    write_fix: ClassVar[str] = f"Write one with RouterModel.save or '{SAVE_COMMAND}'."
    error: ClassVar[type[Exception]] = RouterModelError

    missing: tuple[float, ...]
    primary: str
    secondary: str

    @field_validator("primary", "secondary")
    @classmethod
    def _model_spec(cls, value: str) -> str:
        return str(ModelSpec.parse(value))

    def missing_weights(self) -> tuple[float, ...]:
        return self.missing

    @classmethod
    def check_inputs(cls, names: Sequence[str]) -> tuple[str, ...]:
        signals = [name for name in names if name not in STAGE_INPUTS]
        if signals or not names:
            check_signals(signals)
        return tuple(names)

    @property
    def relevance_signals(self) -> tuple[str, ...]:
        """The relevance signals it reads (what the stage must compute)."""
        return tuple(name for name in self.signals if name not in STAGE_INPUTS)

    @property
    def reads_stage(self) -> bool:
        """Whether it reads the relevance stage's verdict, which only a stage with a relevance model gives."""
        return any(name in STAGE_INPUTS for name in self.signals)

    def check_stage(self, has_relevance_model: bool) -> None:
        """Refuses a selector without a relevance model where the router reads the stage's verdict."""
        if self.reads_stage and not has_relevance_model:
            raise RouterModelError(f"The router {self.fingerprint} reads the relevance stage's verdict "
                                   f"({', '.join(STAGE_INPUTS)}), and this selector runs without a relevance model: "
                                   "run with relevance auto (the default), or give a router fitted on the signals "
                                   "alone.")

    @classmethod
    def load_fix(cls) -> str:
        return "give a router file, auto or none."


def fit_router(table: Any, wrong: Sequence[int], signals: Sequence[str], *, primary: str, secondary: str,
               C: float = 1.0, trained_on: dict[str, Any] | None = None) -> RouterModel:
    """A router fitted on ``table``'s ``signals`` (columns named as the signal or ``rel_<signal>``) to predict
    ``wrong`` (1 = the primary's decision was wrong); its threshold is set afterwards (``with_threshold``)."""
    if len({int(label) for label in wrong}) < 2:
        raise RouterModelError("Fitting a router needs rows where the primary was right and rows where it was wrong: "
                               "pool more suites into the train rows.")
    fields = fit_logistic(table, wrong, signals, C=C, missing_weights=True, check=RouterModel.check_inputs)
    return RouterModel(**fields, primary=primary, secondary=secondary,
                       trained_on={**(trained_on or {}), "rows": len(wrong), "wrong": int(sum(map(int, wrong)))})


def router_inputs(extras: Mapping[str, Any] | None) -> dict[str, float]:
    """What a router reads from a decision's row: its relevance signals (``rel_<signal>``) and the relevance
    stage's verdict (``STAGE_INPUTS``), by name."""
    extras = extras or {}
    stage = {name: extras[name] for name in STAGE_INPUTS if isinstance(extras.get(name), int | float)}
    return {**recorded_signals(extras), **stage}


def shipped_routers() -> list[str]:
    """The primary models a router ships for."""
    return shipped_names(ROUTERS_DIR)


def shipped_router(model: str) -> RouterModel | None:
    """The router shipped for the primary ``model`` (a spec or its name), or None."""
    return RouterModel.shipped(ROUTERS_DIR, model)


def resolve_router(setting: RouterModel | str | Path | None, model: str) -> RouterModel | None:
    """The router a cascade setting names for the primary ``model``: ``auto`` the shipped one (an error naming the
    shipped ones where there is none), ``none`` or None no router, else a router or the path of one. A router is
    fitted on its primary's signals: given for another model, it is refused."""
    if setting is None or str(setting) == NO_CASCADE:
        return None
    if isinstance(setting, RouterModel):
        router = setting
    elif str(setting) == AUTO_CASCADE:
        router = shipped_router(model)
        if router is None:
            shipped = ", ".join(shipped_routers()) or "none"
            raise RouterModelError(f"No router ships for {model} (routers ship for: {shipped}): give a router file "
                                   f"(fitted on that model's rows, '{SAVE_COMMAND}'), or cascade 'none'.")
    else:
        router = RouterModel.load(setting)
    if model_file_stem(router.primary) != model_file_stem(model):
        raise RouterModelError(f"The router was fitted on the decisions of {router.primary}, and the selector runs "
                               f"{model}: fit one on {model}'s rows, or run {router.primary}.")
    missing = missing_retrieval_packages(router.signals)
    if missing:
        raise RouterModelError(f"The router reads retrieval scores, and {', '.join(missing)} is not installed: "
                               "install it with pip install 'tool-selection[retrieval]', or run without a cascade.")
    return router


def _router_option(value: str) -> RouterModel:
    """A router named by a detector option: a file, or the model a router ships for."""
    return shipped_router(value) if model_file_stem(value) in shipped_routers() else RouterModel.load(value)


@register_detector
class LearnedDetector(StuckDetector):
    """The router's P(the primary is wrong), read from the relevance signals the selection recorded
    (``Attempt.features``); unavailable where none of them was recorded."""

    name = "learned"
    needs_logprobs = True  # most signals read the answer's token log-probabilities
    needs_model_file = True

    def __init__(self, router: RouterModel):
        self.router = router

    @classmethod
    def from_options(cls, options: DetectorOptions) -> LearnedDetector:
        if not options.router:
            raise DetectorConfigError("The learned detector reads a router: give router (a router file, or the model "
                                      f"a router ships for: {', '.join(shipped_routers()) or 'none ship'}).")
        try:
            return cls(_router_option(options.router))
        except RouterModelError as error:
            raise DetectorConfigError(str(error)) from None

    def detect(self, attempt: Attempt) -> StuckSignal:
        present = {name: attempt.features[name] for name in self.router.signals if name in attempt.features}
        if not present:
            raise DetectorUnavailable(f"The learned detector reads the relevance signals {', '.join(self.router.signals)}"
                                      " and the selection recorded none: give the selector relevance_signals.")
        probability = self.router.probability(present)
        return self._signal(probability, router=self.router.fingerprint, wrong=probability)
