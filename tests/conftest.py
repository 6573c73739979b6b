import sys
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
