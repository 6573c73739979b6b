"""Where MLflow runs go: one default for the evaluation harness, optimization, benchmarks and served selectors."""

from __future__ import annotations

import os
from importlib.metadata import entry_points

from tool_selection.defaults import DEFAULT_TRACKING_URI, EXPERIMENT
from tool_selection.errors import ToolSelectionError

__all__ = ["DEFAULT_TRACKING_URI", "EXPERIMENT", "check_scheme", "tracking_uri"]

# the schemes of MLflow's own tracking stores (a test holds them equal to MLflow's registry); plugins add theirs
# as entry points in the group below
MLFLOW_SCHEMES = ("", "databricks", "databricks-uc", "file", "http", "https", "mssql", "mysql", "postgresql",
                  "sqlite", "uc")
PLUGIN_GROUP = "mlflow.tracking_store"


def tracking_uri(uri: str | None = None) -> str:
    """``uri``, else ``$MLFLOW_TRACKING_URI``, else a SQLite store in the working directory."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def check_scheme(uri: str | None = None) -> None:
    """Refuse, before MLflow loads, a tracking URI whose scheme no tracking store takes (MLflow's own, or a
    plugin's); ``evals.tracking.check_tracking_uri`` checks the rest once MLflow is loaded."""
    resolved = tracking_uri(uri)
    scheme = resolved.partition("://")[0].split("+")[0].lower() if "://" in resolved else ""
    if scheme in MLFLOW_SCHEMES or scheme in {point.name for point in entry_points(group=PLUGIN_GROUP)}:
        return
    raise ToolSelectionError(f"MLflow cannot use the tracking URI {resolved!r}: no tracking store takes "
                             f"'{scheme}://'. Give --tracking-uri (or MLFLOW_TRACKING_URI) a store such as "
                             "sqlite:///mlflow.db, or run with --no-mlflow.")
