"""Relevance: does some listed tool do exactly what is asked? Signals, the model that combines them, and the stage
that applies it after a selection (see ``signals``, ``model`` and ``stage``)."""

from tool_selection.relevance.model import (
    DEFAULT_RELEVANCE,
    RelevanceModel,
    RelevanceModelError,
    fit_relevance_model,
    resolve_relevance,
    shipped_relevance_model,
    shipped_relevance_models,
)
from tool_selection.relevance.signals import (
    CHEAP_SIGNALS,
    LOGPROB_SIGNALS,
    SIGNALS,
    Evidence,
    UnknownSignalError,
    compute_signals,
)
from tool_selection.relevance.stage import SIGNAL_PREFIX, RelevanceStage

__all__ = [
    "CHEAP_SIGNALS",
    "DEFAULT_RELEVANCE",
    "LOGPROB_SIGNALS",
    "SIGNALS",
    "SIGNAL_PREFIX",
    "Evidence",
    "RelevanceModel",
    "RelevanceModelError",
    "RelevanceStage",
    "UnknownSignalError",
    "compute_signals",
    "fit_relevance_model",
    "resolve_relevance",
    "shipped_relevance_model",
    "shipped_relevance_models",
]
