"""Several machines, one MLflow: runs logged by separate processes to a tracking server (SQL database backend,
proxied artifact store) read back whole from a third. PostgreSQL when the machine has it and psycopg is installed
(the ``tracking-server`` extra), SQLite otherwise."""

import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from evals.tracking import results_from_mlflow

MLFLOW = Path(sys.executable).with_name("mlflow")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(url: str, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{process.args[0]} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer in {seconds} s")


def _postgres_available() -> bool:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return False
    if os.geteuid() == 0:  # as root the server runs as the postgres user (see _as_postgres_user)
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return False
        if not shutil.which("runuser"):
            return False
    return all(shutil.which(tool) for tool in ("initdb", "pg_ctl", "createdb"))


def _as_postgres_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: a root test runs its server as the ``postgres`` user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture
def backend_store(tmp_path):
    if not _postgres_available():
        yield f"sqlite:///{tmp_path / 'mlflow.db'}"
        return
    data = Path(tempfile.mkdtemp(prefix="toolsel-pg-"))  # not under pytest's root-only folder: the server's user
    if os.geteuid() == 0:                                 # must reach it
        shutil.chown(data, "postgres")
    port = _free_port()
    subprocess.run(_as_postgres_user(["initdb", "-D", str(data), "-U", "postgres", "--auth=trust"]), check=True,
                   capture_output=True)
    subprocess.run(_as_postgres_user(["pg_ctl", "-D", str(data), "-w", "-l", str(data / "log"), "-o",
                                      f"-p {port} -k {data} -c listen_addresses=127.0.0.1", "start"]),
                   check=True, capture_output=True)
    try:
        subprocess.run(_as_postgres_user(["createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                                          "mlflow"]), check=True, capture_output=True)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/mlflow"
    finally:
        subprocess.run(_as_postgres_user(["pg_ctl", "-D", str(data), "-m", "fast", "stop"]), capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def tracking_server(tmp_path, backend_store):
    port = _free_port()
    server = subprocess.Popen(
        [str(MLFLOW), "server", "--backend-store-uri", backend_store, "--artifacts-destination",
         str(tmp_path / "artifacts"), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})  # see README, Evaluate
    try:
        _wait_for(f"http://127.0.0.1:{port}/health", server)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


LOG_FROM_ANOTHER_MACHINE = """
import sys
from pathlib import Path
import pandas as pd
from evals.tracking import log_run
from tool_selection.run_config import RunConfig
uri, name, folder = sys.argv[1:]
path = Path(folder) / "results.parquet"
pd.DataFrame({"id": [name + "-1", name + "-2"], "full_match": [1.0, 0.0]}).to_parquet(path)
print(log_run(params={"suite": name, "kind": "eval"}, summary={"accuracy": 0.5}, artifacts=[path], run=RunConfig(tracking_uri=uri)))
"""


def test_runs_from_separate_machines_land_in_one_tracking_server(tmp_path, tracking_server):
    run_ids = {}
    for machine in ("machine-a", "machine-b"):  # separate processes with separate folders share only the URI
        folder = tmp_path / machine
        folder.mkdir()
        done = subprocess.run([sys.executable, "-c", LOG_FROM_ANOTHER_MACHINE, tracking_server, machine,
                               str(folder)], capture_output=True, text=True, timeout=300,
                              cwd=Path(__file__).resolve().parents[2])
        assert done.returncode == 0, done.stderr[-2000:]
        run_ids[machine] = done.stdout.strip().splitlines()[-1]
        shutil.rmtree(folder)  # the artifact must now live in the server's store, not on "that machine"

    for machine, run_id in run_ids.items():
        frame, params = results_from_mlflow(run_id, tracking_server)
        assert params["suite"] == machine
        pd.testing.assert_frame_equal(frame, pd.DataFrame({"id": [f"{machine}-1", f"{machine}-2"],
                                                           "full_match": [1.0, 0.0]}))
    assert any((tmp_path / "artifacts").rglob("results.parquet"))
