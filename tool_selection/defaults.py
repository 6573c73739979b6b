"""What the toolkit uses unless told otherwise, in one place: the command line, the harness, the benchmarks and the
Python API read their defaults from here (no imports, so reading one costs nothing)."""

from __future__ import annotations

__all__ = [
    "AUTO_CASCADE",
    "AUTO_RELEVANCE",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MAX_TOOL_CALLS",
    "DEFAULT_MODEL",
    "DEFAULT_MODEL_NAME",
    "DEFAULT_RELEVANCE",
    "DEFAULT_SECONDARY_MODEL",
    "DEFAULT_STRATEGY",
    "DEFAULT_SUITE",
    "DEFAULT_TRACKING_URI",
    "EXPERIMENT",
    "INVARIANT_RELEVANCE",
    "MAX_CONTEXT",
    "MAX_GENERATED_TOKENS",
    "MAX_SLOTS",
    "MAX_THREADS",
    "NO_CASCADE",
    "NO_RELEVANCE",
]

DEFAULT_MODEL_NAME = "qwen2.5-coder-0.5b"
"""The embedded catalog model the quick start pulls, the doctor smoke-tests and every command runs by default."""

DEFAULT_MODEL = f"local:{DEFAULT_MODEL_NAME}"
"""The default model as a model spec."""

DEFAULT_SECONDARY_MODEL = "local:qwen2.5-coder-1.5b"
"""The larger model a stuck step goes to in the collaboration examples and reports."""

DEFAULT_STRATEGY = "auto"
"""What a selector uses unless told: the model's own tool-calling format, with each call decoded under the tools'
grammar where the model runs in-process, and further calls opened for it while the request holds a value no call
uses (``native-strict-cover``: ``native-strict``'s single calls, the most accurate on BFCL and the domain suites
with the local models, and the several calls a request asks for), else as the provider returns it (``native``). README, Results: selection strategies."""

AUTO_RELEVANCE = "auto"
"""The relevance setting that applies a compiled selector's own relevance model, else the one shipped for the model."""

INVARIANT_RELEVANCE = "invariant"
"""The relevance setting that applies the model shipped for the selector's model with ``bm25_anchored`` in place of
``bm25_best`` (the listed tools' word weights seen beside background ones): its probability stays put when unrelated
tools are listed beside, where the default's rises; it catches fewer of BFCL's irrelevant requests, which list one
function each (the relevance pages)."""

NO_RELEVANCE = "none"
"""The relevance setting without a relevance stage."""

DEFAULT_RELEVANCE = AUTO_RELEVANCE
"""The relevance model the harness applies: measured to help the models a relevance model ships for (see the
relevance results page), and nothing for the others."""

NO_CASCADE = "none"
"""The cascade setting where the selector's model alone decides."""

AUTO_CASCADE = "auto"
"""The cascade setting that escalates with the router shipped for the selector's model (to the model it names)."""

DEFAULT_SUITE = "treasure_hunt"
"""The suite ``toolsel eval`` and ``toolsel eval optimize`` run without ``--suite``."""

DEFAULT_MAX_TOKENS = 512
"""Tokens one decision may generate unless told (``--max-tokens``): every LM the toolkit builds starts here."""

DEFAULT_MAX_TOOL_CALLS = 10
"""Tool calls one turn of the tool-calling loop may make (failed calls count)."""

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
"""Where MLflow runs go without ``--tracking-uri`` or ``$MLFLOW_TRACKING_URI``."""

EXPERIMENT = "tool-selection"
"""The MLflow experiment runs are logged to."""

MAX_THREADS = 256
"""Most cases in flight at once: past this, threads only queue on a provider's rate limit or a local model's cores."""

MAX_SLOTS = 64
"""Most llama-server slots (``--serve N``); each holds a context of its own."""

MAX_GENERATED_TOKENS = 32_768
"""Most tokens one decision may generate: the longest context of any model the toolkit ships."""

MAX_CONTEXT = 131_072
"""Largest context (``--n-ctx``) a local model may be loaded with."""
