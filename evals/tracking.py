"""MLflow tracking for evaluation runs: how each run was built (params), its metrics and its result files."""

from __future__ import annotations

import functools
import json
import math
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from evals.metrics import outcome
from evals.traces import TRACE_ID, link_traces
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig
from tool_selection.tracking import DEFAULT_TRACKING_URI, tracking_uri

__all__ = ["CASES_TABLE", "DEFAULT_TRACKING_URI", "case_table", "check_tracking_uri", "git_commit", "log_run", "results_from_mlflow",
           "tracking_uri"]

SERVER_CHECK_TIMEOUT_S = 5.0


def check_tracking_uri(uri: str | None, *, timeout_s: float = SERVER_CHECK_TIMEOUT_S) -> str:
    """The tracking URI, once MLflow accepts it and, for a tracking server (``http(s)://``), once the server
    answers within ``timeout_s``: checked before any work, so a typo or a server that is down does not cost a run
    (MLflow itself retries for minutes before it gives up)."""
    import mlflow
    from mlflow.exceptions import MlflowException

    resolved = tracking_uri(uri)
    if resolved.startswith(("http://", "https://")):
        _check_server(resolved, timeout_s)
    try:
        mlflow.MlflowClient(resolved)
    except (MlflowException, OSError, ValueError) as error:
        raise ToolSelectionError(f"MLflow cannot use the tracking URI {resolved!r}: {str(error).splitlines()[0][:200]} "
                                 "Give --tracking-uri (or MLFLOW_TRACKING_URI) a store such as sqlite:///mlflow.db, "
                                 "or run with --no-mlflow.") from None
    return resolved


def _check_server(uri: str, timeout_s: float) -> None:
    """Any HTTP answer from the server's health endpoint will do; no answer within ``timeout_s`` is an error."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout_s):
            return
    except urllib.error.HTTPError:
        return  # it answered: a server is there
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise ToolSelectionError(f"The MLflow tracking server at {uri} does not answer ({reason}; waited at most "
                                 f"{timeout_s:g} s). Start it (mlflow server --host 127.0.0.1 --port PORT), give "
                                 "--tracking-uri (or MLFLOW_TRACKING_URI) a local store such as sqlite:///mlflow.db, "
                                 "or run with --no-mlflow.") from None


def git_commit() -> str:
    """The commit the working directory's checkout was at when this process first asked (``-dirty`` with uncommitted
    changes to tracked files), or "unknown": read once, so that every run of a long sweep records the code the
    process imported, not a commit made while it ran."""
    return _commit_of(str(Path.cwd()))


@functools.cache
def _commit_of(directory: str) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=directory)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = out.stdout.strip() if out.returncode == 0 else "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                           cwd=directory)
    return f"{commit}-dirty" if commit != "unknown" and dirty.stdout.strip() else commit


def _metric_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", name)


def log_run(
    *,
    params: dict[str, Any],
    summary: dict[str, float],
    by_tag: pd.DataFrame | None = None,
    artifacts: list[Path] = (),
    run_name: str | None = None,
    extra_metrics: dict[str, float] | None = None,
    cases: pd.DataFrame | None = None,
    run: RunConfig | None = None,
) -> str:
    """Log one run to ``run``'s tracking URI and experiment (default: ``RunConfig()``'s); returns its MLflow run
    id. ``extra_metrics`` are logged with the summary's. ``cases``: per-case rows, logged as an MLflow table
    (``cases.json``), which the UI shows a case at a time (``case_table`` chooses the columns); the cases' traces
    (their ``trace_id``, ``evals.traces``) are linked to the run."""
    import mlflow

    run = run or RunConfig()
    mlflow.set_tracking_uri(tracking_uri(run.tracking_uri))
    mlflow.set_experiment(run.experiment)
    with mlflow.start_run(run_name=run_name) as logged:
        mlflow.log_params({k: str(v)[:500] for k, v in params.items()})
        metrics = {k: v for k, v in {**summary, **(extra_metrics or {})}.items()
                   if isinstance(v, int | float) and not math.isnan(v)}
        if by_tag is not None:  # every figure of the per-tag table (summarize_by_tag chooses them)
            for row in by_tag.to_dict("records"):
                for column, value in row.items():
                    if column != "tag" and isinstance(value, int | float) and math.isfinite(value):
                        metrics[f"tag.{row['tag']}.{column}"] = float(value)
        mlflow.log_metrics({_metric_key(k): float(v) for k, v in metrics.items()})
        for path in artifacts:
            if Path(path).exists():
                mlflow.log_artifact(str(path))
        if cases is not None and len(cases):
            mlflow.log_table(data=case_table(cases), artifact_file=CASES_TABLE)
            if TRACE_ID in cases:
                link_traces(logged.info.run_id, [t for t in cases[TRACE_ID] if isinstance(t, str)])
        mlflow.set_tags({"kind": params.get("kind", "eval")})
        return logged.info.run_id


CASES_TABLE = "cases.json"
CASE_COLUMNS = ("id", "split", "tags", "outcome", "request", "expected", "predicted", "full_match", "tool_exact",
                "args_correct", "parse_error", "reasoning", "raw_response", "error_message", "latency_s",
                "input_tokens", "output_tokens", TRACE_ID)


def case_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The per-case columns a reader looks at, one case a row: tags joined, the outcome spelled out
    (``evals.metrics.outcome``), long texts kept whole."""
    table = rows.copy()
    table["outcome"] = [outcome(row) for row in rows.to_dict("records")]
    if "tags" in table:
        table["tags"] = [", ".join(map(str, tags)) if not isinstance(tags, str | float) else str(tags)
                         for tags in table["tags"]]
    return table[[c for c in CASE_COLUMNS if c in table]].astype(object).where(table.notna(), None)


def results_from_mlflow(run_id: str, uri: str | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-case results and params of a logged run."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri(uri))
    client = mlflow.MlflowClient()
    run = client.get_run(run_id)
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run_id, "results.parquet", tmp)
        frame = pd.read_parquet(path)
    return frame, dict(run.data.params)


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
