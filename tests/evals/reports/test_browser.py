"""Results in a real browser, headless Chromium (Debian's package): the HTML report loads from a file, runs its
script (the case table fills in) and draws a page that is not blank; ``toolsel view`` serves a run's per-case table
and its traces in the MLflow UI."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tool_selection.cli import main

CHROMIUM = next((path for path in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if path), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install "
                                                         "chromium; 'make test' installs it where it can)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,1600"]
RENDER = ["--virtual-time-budget=10000"]  # time for the MLflow UI's React app to fetch and draw
REPO = Path(__file__).parents[3]


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, *args], capture_output=True, text=True, timeout=180)


def test_the_html_report_renders_its_cases_in_chromium(strategy_runs, tmp_path):
    page, shot = tmp_path / "report.html", tmp_path / "shot.png"
    assert main(["report", str(strategy_runs), "--html", str(page)]) == 0

    dom = _chromium("--dump-dom", page.as_uri()).stdout
    assert dom.count('<tr data-outcome="') == 210  # the script ran and filled the case table
    assert "210 of 210 cases" in dom

    _chromium(f"--screenshot={shot}", page.as_uri())
    _assert_drawn(shot)


def _assert_drawn(shot: Path) -> None:
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1280)
    assert pixels.std() > 0.05 and (pixels.mean(axis=2) < 0.5).mean() > 0.005  # text and lines, not a blank page


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _addresses(view: subprocess.Popen, timeout_s: float) -> dict[str, str]:
    """The addresses 'toolsel view' prints once the UI answers (label -> URL)."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in view.stdout], daemon=True).start()
    addresses, deadline = {}, time.monotonic() + timeout_s
    while "a trace per case" not in addresses:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
        except queue.Empty:
            pytest.fail(f"toolsel view printed no addresses within {timeout_s:g} s")
        label, _, address = (part.strip() for part in line.partition(": "))
        if address.startswith("http://127.0.0.1:"):
            addresses[label] = address
    return addresses


def test_toolsel_view_shows_a_runs_cases_and_traces_in_chromium(suite_path, tmp_path, monkeypatch):
    from evals.evaluation import evaluate
    from tests.evals.test_runner import ANSWERS, CountingLM
    from tool_selection.run_config import RunConfig
    from tool_selection.selector import ToolSelectionAdapter
    from tool_selection.spec import SelectorSpec

    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    evaluate(str(suite_path), CountingLM(ANSWERS, adapter=ToolSelectionAdapter()), split=None,
             selector=SelectorSpec(strategy="json-cot", relevance="none"),
             run=RunConfig(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", progress=False, run_dir=run_dir))

    port = _free_port()
    view = subprocess.Popen([sys.executable, "-m", "tool_selection.cli", "view", str(run_dir), "--port", str(port)],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        addresses = _addresses(view, timeout_s=240)
        assert addresses["MLflow UI"].startswith(f"http://127.0.0.1:{port}/#/experiments/")

        shot = tmp_path / "cases.png"
        dom = _chromium(*RENDER, f"--screenshot={shot}", "--dump-dom", addresses["per-case table"]).stdout
        assert all(case_id in dom for case_id in ("w-0", "w-5", "none-1", "multi-1"))  # the per-case table
        assert "What is the weather in Rome?" in dom and "parse failure" in dom
        _assert_drawn(shot)

        dom = _chromium(*RENDER, "--dump-dom", addresses["a trace per case"]).stdout
        assert "8 of 8" in dom and "What is the weather in Baku?" in dom  # a trace per case, each with its request
    finally:
        view.send_signal(signal.SIGTERM)  # 'toolsel view' stops the UI as it ends
        assert view.wait(timeout=60) == 0
    with pytest.raises(ConnectionRefusedError):  # the UI is gone
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
