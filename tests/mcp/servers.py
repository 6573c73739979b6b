"""Real MCP server processes on loopback, always terminated: the toolsel server and a server that changes."""

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SERVE = [sys.executable, "-m", "tool_selection.mcp", "serve"]
TREASURE_STDIO = [*SERVE, "treasure_hunt", "--page-size", "5"]
CHANGING_STDIO = [sys.executable, str(Path(__file__).with_name("changing_server.py"))]
STARTUP_SECONDS = 30  # generous: the machine may be busy with a benchmark


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def http_server(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``argv`` (an HTTP MCP server on ``port``, in ``env`` when given) until the block ends; yields its URL
    once it accepts."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"MCP server exited with {process.returncode}: {log.read().decode()[-2000:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"MCP server did not listen on port {port} within {STARTUP_SECONDS}s")
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
