import sys
import time
from pathlib import Path

import dspy
import pytest

FAKE_LLAMA_SERVER = Path(__file__).parent / "lm" / "fake_llama_server.py"


@pytest.fixture(autouse=True)
def reset_dspy_settings():
    """Each test starts with DSPy unconfigured, as DSPy's own test suite does."""
    with dspy.context(lm=None, adapter=None):
        yield


@pytest.fixture
def fake_llama_server(tmp_path, monkeypatch):
    """An executable that runs a stand-in llama-server (tests/lm/fake_llama_server.py), named in
    $TOOLSEL_LLAMA_SERVER, and a GGUF file spec for it to serve."""
    from tool_selection.lm.server_build import SERVER_BINARY_ENV

    binary = tmp_path / "llama-server"
    binary.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_LLAMA_SERVER} \"$@\"\n")
    binary.chmod(0o755)
    monkeypatch.setenv(SERVER_BINARY_ENV, str(binary))
    model = tmp_path / "tiny-model.gguf"
    model.write_bytes(b"GGUF")
    return f"local:{model}"


@pytest.fixture
def timed(request):
    """``timed(call, within_s=...)``: the call's result, after asserting it took less than ``within_s``; the time is
    printed for attack tests (run with -s to see them)."""
    def measure(call, *, within_s: float):
        started = time.monotonic()
        result = call()
        elapsed = time.monotonic() - started
        print(f"\n[attack] {request.node.name}: {elapsed * 1000:.1f} ms (bound {within_s * 1000:.0f} ms)")
        assert elapsed < within_s, f"took {elapsed:.3f} s"
        return result
    return measure
