"""Where MLflow runs go: one default for the evaluation harness, optimization, benchmarks and served selectors."""

from __future__ import annotations

import os

from tool_selection.defaults import DEFAULT_TRACKING_URI, EXPERIMENT

__all__ = ["DEFAULT_TRACKING_URI", "EXPERIMENT", "tracking_uri"]



def tracking_uri(uri: str | None = None) -> str:
    """``uri``, else ``$MLFLOW_TRACKING_URI``, else a SQLite store in the working directory."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
