"""Logging a discussion or a debate to MLflow: how it was configured (params), what it measured (metrics, from
``summary``), and the transcript or state file itself (an artifact)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from tool_selection.errors import ToolSelectionError
from tool_selection.tracking import EXPERIMENT, tracking_uri

__all__ = ["log_conversation"]


def log_conversation(*, kind: str, params: dict[str, Any], metrics: dict[str, float], artifact: Path | None,
                     run_name: str, uri: str | None = None, experiment: str = EXPERIMENT) -> str:
    """Log one conversation run; returns its MLflow run id. A tracking store MLflow cannot open is an error that
    names the fix."""
    import mlflow
    from mlflow.exceptions import MlflowException

    resolved = tracking_uri(uri)
    try:
        mlflow.set_tracking_uri(resolved)
        mlflow.set_experiment(experiment)
    except (MlflowException, OSError, ValueError) as error:
        raise ToolSelectionError(f"MLflow cannot use the tracking URI {resolved!r}: {str(error).splitlines()[0][:200]} "
                                 "Give --tracking-uri (or MLFLOW_TRACKING_URI) a store such as sqlite:///mlflow.db, "
                                 "or run with --no-mlflow.") from None
    with mlflow.start_run(run_name=run_name) as run:
        mlflow.set_tags({"kind": kind})
        mlflow.log_params({key: str(value)[:500] for key, value in params.items()})
        mlflow.log_metrics({re.sub(r"[^A-Za-z0-9_\-./ ]", "_", key): float(value) for key, value in metrics.items()
                            if isinstance(value, int | float) and math.isfinite(value)})
        if artifact is not None and artifact.exists():
            mlflow.log_artifact(str(artifact))
        return run.info.run_id
