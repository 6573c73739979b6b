"""MLflow tracking: a run logged with its params, metrics, per-tag figures and results file reads back."""

import pandas as pd
import pytest

from evals.tracking import check_tracking_uri, git_commit, log_run, results_from_mlflow
from tool_selection.errors import ToolSelectionError
from tool_selection.run_config import RunConfig


def test_a_logged_run_reads_back(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    results = pd.DataFrame({"id": ["a", "b"], "full_match": [1.0, 0.0]})
    results.to_parquet(tmp_path / "results.parquet")
    by_tag = pd.DataFrame([{"tag": "all", "cases": 2, "accuracy": 0.5, "seconds_per_correct": float("inf")}])
    run_id = log_run(params={"suite": "s", "kind": "eval", "long": "x" * 900}, summary={"accuracy": 0.5,
                     "tool_f1": float("nan")}, by_tag=by_tag, artifacts=[tmp_path / "results.parquet"],
                     run=RunConfig(tracking_uri=uri))
    frame, params = results_from_mlflow(run_id, uri)
    assert frame.equals(results) and params["suite"] == "s" and len(params["long"]) == 500

    import mlflow

    metrics = mlflow.MlflowClient(uri).get_run(run_id).data.metrics
    assert metrics["accuracy"] == 0.5 and metrics["tag.all.accuracy"] == 0.5 and metrics["tag.all.cases"] == 2
    assert "tool_f1" not in metrics and "tag.all.seconds_per_correct" not in metrics  # NaN and inf are not logged


def test_a_tracking_uri_mlflow_cannot_use_is_refused_before_work():
    with pytest.raises(ToolSelectionError, match="MLflow cannot use the tracking URI 'bogus://x'"):
        check_tracking_uri("bogus://x")


def test_the_commit_is_a_short_hash_or_unknown():
    commit = git_commit()
    assert commit == "unknown" or len(commit.removesuffix("-dirty")) == 12


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_tracking_server_that_is_down_is_refused_before_work():
    uri = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(ToolSelectionError, match=f"The MLflow tracking server at {uri} does not answer .*--no-mlflow"):
        check_tracking_uri(uri)


def test_a_tracking_server_that_never_answers_is_refused_after_the_timeout():
    import socket

    with socket.socket() as silent:  # accepts connections (the backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(ToolSelectionError, match="does not answer .*waited at most 0.3 s"):
            check_tracking_uri(uri, timeout_s=0.3)


def test_a_tracking_server_that_answers_is_accepted():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b"OK")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        uri = f"http://127.0.0.1:{server.server_address[1]}"
        assert check_tracking_uri(uri) == uri
    finally:
        server.shutdown()
        server.server_close()


def test_the_commit_is_read_once_per_process(tmp_path, monkeypatch):
    import subprocess

    from evals.tracking import _commit_of

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "first"], check=True)
    monkeypatch.chdir(tmp_path)
    _commit_of.cache_clear()
    first = git_commit()
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "second"], check=True)
    assert git_commit() == first and len(first) == 12  # a commit made while a sweep runs is not what it ran
    _commit_of.cache_clear()
