"""The relevance model: relevance signals combined into a calibrated probability that some listed tool fits.

A logistic regression over standardised signals (scikit-learn fits it; applying it needs only its coefficients,
so a saved model is a small JSON file, never a pickle). It is fitted on the rows of train splits only, and its
threshold is chosen on dev with a balanced objective (``choose_threshold``): the mean of accuracy on the cases that
need a call and on those that need none, so that refusing everything cannot win.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import model_validator

from tool_selection.defaults import AUTO_RELEVANCE, DEFAULT_RELEVANCE, INVARIANT_RELEVANCE, NO_RELEVANCE
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance.logistic import LogisticModel, fit_logistic, shipped_names

__all__ = ["DEFAULT_RELEVANCE", "RelevanceModel", "RelevanceModelError", "fit_relevance_model", "resolve_relevance",
           "shipped_relevance_model", "shipped_relevance_models"]

SHIPPED_DIR = Path(__file__).parent / "models"  # <model name>.json, fitted by 'toolsel bench relevance --save'
INVARIANT_DIR = SHIPPED_DIR / "invariant"  # the same models, bm25_anchored in bm25_best's place


class RelevanceModelError(ToolSelectionError, ValueError):
    """A relevance model that cannot be fitted, read or applied."""


class RelevanceModel(LogisticModel):
    """``probability(signals)``: P(some listed tool does what is asked); below ``threshold`` the selector abstains.

    ``other_language``: the model that reads a request the ``other_language`` signal marks as written in another
    language than the tools' documents, fitted without the signals that compare words (``fit_other_language``).
    Its intercept is moved so that ``threshold`` decides for both, so a probability it gives is a score on this
    model's scale (the same side of the threshold as its own), and ``--relevance-threshold`` moves both."""

    what: ClassVar[str] = "relevance model"
    write_fix: ClassVar[str] = "Write one with RelevanceModel.save or 'toolsel bench relevance --save'."
    error: ClassVar[type[Exception]] = RelevanceModelError

    other_language: RelevanceModel | None = None

    @model_validator(mode="after")
    def _one_level(self) -> Self:
        inner = self.other_language
        if inner is not None and (inner.other_language is not None or "other_language" in inner.signals
                                  or WORD_SIGNALS & set(inner.signals)):
            raise ValueError(f"other_language reads the requests in another language: it cannot have one of its own "
                             f"or weigh other_language or a signal that compares words ({', '.join(sorted(WORD_SIGNALS))})")
        return self

    @property
    def reads(self) -> tuple[str, ...]:
        if self.other_language is None:
            return self.signals
        return tuple(dict.fromkeys([*self.signals, *self.other_language.signals, "other_language"]))

    def probability(self, values: Mapping[str, float]) -> float:
        if self.other_language is not None and values.get("other_language") == 1.0:
            return self.other_language.probability(values)
        return super().probability(values)

    @classmethod
    def load_fix(cls) -> str:
        return "give a relevance model file, auto, invariant or none."


def shipped_relevance_models() -> list[str]:
    """The model names a relevance model ships for."""
    return shipped_names(SHIPPED_DIR)


def shipped_relevance_model(model: str) -> RelevanceModel | None:
    """The relevance model shipped for ``model`` (a spec such as ``local:qwen2.5-coder-0.5b``, or its name), or
    None: each is fitted on that model's own signals, so it is never applied to another model."""
    return RelevanceModel.shipped(SHIPPED_DIR, model)


_RETRIEVAL_PACKAGES = ("bm25s", "tokenizers", "safetensors")
WORD_SIGNALS = frozenset({"bm25_best", "bm25_background", "bm25_anchored", "dense_best", "dense_chosen"})
"""The signals that compare the request's words with the tools' (BM25, the English MiniLM embedder)."""


def missing_retrieval_packages(signals: Sequence[str]) -> list[str]:
    """The retrieval extra's packages that are not installed, where ``signals`` read retrieval scores or the
    request's language (else [])."""
    packages = [*(_RETRIEVAL_PACKAGES if WORD_SIGNALS & set(signals) else ()),
                *(("py3langid",) if "other_language" in signals else ())]
    return [name for name in packages if importlib.util.find_spec(name) is None]


def resolve_relevance(relevance: RelevanceModel | str | Path | None, model: str | None, *,
                      own: RelevanceModel | None = None) -> RelevanceModel | None:
    """The relevance model a setting names, the one place ``auto``, ``invariant`` and ``none`` are read.
    ``auto``: the model of ``own`` (a compiled selector's stage's model) if there is one, else the one shipped for
    ``model`` (None: the configured LM's) if there is one and the retrieval extra its signals read is installed (else
    a warning and none); ``invariant``: the one shipped for ``model`` whose probability stays put when unrelated
    tools are listed beside (an error where none ships); ``none`` or None: no relevance model; else a relevance
    model or the path of one."""
    if relevance is None or isinstance(relevance, RelevanceModel):
        return relevance
    if str(relevance) == NO_RELEVANCE:
        return None
    if str(relevance) == AUTO_RELEVANCE and own is not None:  # a compiled selector's own comes first
        return own
    if str(relevance) in (AUTO_RELEVANCE, INVARIANT_RELEVANCE):
        invariant = str(relevance) == INVARIANT_RELEVANCE
        model = configured_model() if model is None else model
        shipped = RelevanceModel.shipped(INVARIANT_DIR if invariant else SHIPPED_DIR, model)
        if shipped is None and invariant:
            raise RelevanceModelError(f"No invariant relevance model ships for {model}; they ship for "
                                      f"{', '.join(shipped_names(INVARIANT_DIR))}. Pass --relevance auto, none or "
                                      "a file from 'toolsel bench relevance --save'.")
        missing = missing_retrieval_packages(shipped.reads) if shipped is not None else []
        if missing:
            warnings.warn(f"The relevance model shipped for {model} reads retrieval scores, and {', '.join(missing)} "
                          "is not installed: running without it. Install it with pip install "
                          "'tool-selection[retrieval]', or pass --relevance none to silence this.", stacklevel=2)
            return None
        return shipped
    return RelevanceModel.load(relevance)


def configured_model() -> str:
    """The configured LM's model, which ``auto`` picks a shipped relevance model (or router) for when none is
    named."""
    import dspy

    if dspy.settings.lm is None:
        raise ToolSelectionError("relevance='auto' and cascade='auto' apply what ships for the model the selector "
                                 "runs with: pass model= to MultiToolSelector.from_spec, configure the LM first "
                                 "(dspy.configure), or set them to 'none' or a file.")
    return str(getattr(dspy.settings.lm, "model", ""))


def fit_relevance_model(table: Any, labels: Sequence[int], signals: Sequence[str], *, C: float = 1.0,
                        trained_on: dict[str, Any] | None = None) -> RelevanceModel:
    """A logistic regression of ``labels`` (1 = some tool fits) on ``signals`` columns of ``table``.

    Each signal is standardised with its training mean and spread; a missing value counts as the mean (it then
    adds nothing). Classes are weighted to balance, so a training set with few relevant rows does not push the
    model towards always answering one way."""
    if len(set(int(label) for label in labels)) < 2:
        raise RelevanceModelError("Fitting a relevance model needs rows of both kinds: cases that need a call and "
                                  "cases that need none.")
    fields = fit_logistic(table, labels, signals, C=C, balanced=True)
    return RelevanceModel(**fields, trained_on={**(trained_on or {}), "rows": len(labels),
                                                "relevant": int(sum(int(label) for label in labels))})
