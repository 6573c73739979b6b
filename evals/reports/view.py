"""``toolsel view``: the MLflow UI on the project's tracking store, bound to 127.0.0.1, opened at a run."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from evals.runs import check_run_ref
from tool_selection.errors import ToolSelectionError

__all__ = ["resolve_run", "run_address", "serve_ui"]

HOST = "127.0.0.1"


def resolve_run(ref: str | None, tracking_uri: str | None) -> tuple[str | None, str | None]:
    """(run id, tracking URI) of ``ref``: a run directory (its ``mlflow.json``, written when the run was logged)
    or an MLflow run id; the URI from the directory unless one is given."""
    if ref is None:
        return None, tracking_uri
    path = Path(ref)
    if not path.is_dir():
        check_run_ref(ref)
        return ref, tracking_uri
    from evals.evaluation import MLFLOW_FILE

    logged = path / MLFLOW_FILE
    if not logged.is_file():
        raise ToolSelectionError(f"{path} has no {MLFLOW_FILE}: it was run with --no-mlflow (or before runs "
                                 "recorded their MLflow id). Give an MLflow run id, or 'toolsel report "
                                 f"{path} --html FILE' for a page without MLflow.")
    record = json.loads(logged.read_text(encoding="utf-8"))
    return record["run_id"], tracking_uri or record.get("tracking_uri")


def run_address(base: str, uri: str, run_id: str | None) -> str:
    """The UI's address of a run's page (or of the experiments)."""
    if run_id is None:
        return f"{base}/#/experiments"
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        run = mlflow.MlflowClient(uri).get_run(run_id)
    except MlflowException as error:
        raise ToolSelectionError(f"No MLflow run {run_id!r} in {uri} ({str(error).splitlines()[0][:200]}). "
                                 "Give --tracking-uri the store the run was logged to.") from None
    return f"{base}/#/experiments/{run.info.experiment_id}/runs/{run_id}"


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start_ui(uri: str, port: int, wait_s: float) -> subprocess.Popen:
    """``mlflow ui`` on ``uri`` at 127.0.0.1:``port``, once it answers (within ``wait_s``)."""
    if not _port_free(port):
        raise ToolSelectionError(f"Port {port} on {HOST} is in use: give another with --port.")
    process = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", HOST,
                                "--port", str(port), "--workers", "1"],  # one reader: one worker starts sooner
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base, deadline = f"http://{HOST}:{port}", time.monotonic() + wait_s
    try:
        while not _answers(base):
            if process.poll() is not None:
                raise ToolSelectionError(f"The MLflow UI stopped as it started (exit {process.returncode}): "
                                         f"{(process.stderr.read() or '').strip()[-500:]}")
            if time.monotonic() > deadline:
                raise ToolSelectionError(f"The MLflow UI did not answer within {wait_s:g} s; give --wait more "
                                         "seconds.")
            time.sleep(0.5)
    except BaseException:  # a timeout, Ctrl-C or TERM while it starts: it stops too
        _stop(process)
        raise
    return process


def serve_ui(ref: str | None, *, tracking_uri: str | None = None, port: int = 5000, wait_s: float = 300) -> int:
    """Start the UI, print the run's address, and keep serving until interrupted."""
    run_id, uri = resolve_run(ref, tracking_uri)  # a reference that is no run stops before MLflow loads
    from evals.tracking import CASES_TABLE, check_tracking_uri

    uri = check_tracking_uri(uri)
    address = run_address(f"http://{HOST}:{port}", uri, run_id)  # an unknown run stops before the UI starts
    print(f"starting the MLflow UI on {uri} (it can take a minute) ...", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)  # a TERM stops the UI too, as Ctrl-C does
    try:
        process = start_ui(uri, port, wait_s)
    except KeyboardInterrupt:
        return 0
    print(f"MLflow UI: {address}", flush=True)
    if run_id is not None:
        print(f"  per-case table:     {address}/artifacts/{CASES_TABLE}\n"
              f"  a trace per case:   {address}/traces", flush=True)
    print("(Ctrl-C stops it)", flush=True)
    try:
        return process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        _stop(process)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
