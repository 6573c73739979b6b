"""ModelServer's lifecycle and the served: model spec, against a stand-in llama-server (fake_llama_server.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import dspy
import pytest

from tool_selection.lm import LocalEngineOptions, ModelSpec, ModelSpecError, ServedLM, ServerError, get_lm
from tool_selection.lm.server import ModelServer, ServerOptions, served_lm
from tool_selection.lm.server_build import SERVER_BINARY_ENV, server_plan
from tool_selection.selector import MultiToolSelector


def test_served_spec_parses_and_rejects_a_bare_name():
    spec = ModelSpec.parse("served:http://127.0.0.1:8080/")
    assert (spec.kind, spec.target, str(spec)) == ("served", "http://127.0.0.1:8080", "served:http://127.0.0.1:8080")
    assert not spec.is_local
    with pytest.raises(ModelSpecError, match="served:http://HOST:PORT"):
        ModelSpec.parse("served:qwen2.5-coder-0.5b")


def test_server_starts_with_parallel_slots_and_stops(fake_llama_server):
    server = ModelServer(fake_llama_server, parallel=3, local=LocalEngineOptions(n_ctx=1024, n_threads=2))
    with server:
        assert server.healthy()
        command = server.command()
        assert command[command.index("--parallel") + 1] == "3"
        assert command[command.index("--ctx-size") + 1] == str(3 * 1024)  # each slot gets the model's context
        assert "--jinja" in command  # the model's own chat template renders the tools
        lm = server.lm()
        assert isinstance(lm, ServedLM) and lm.model == "openai/tiny-model" and lm.supports_function_calling
        assert server.model_spec == f"served:{server.base_url}"
        process = server.process
    assert server.process is None and process.poll() is not None


def test_served_spec_reaches_the_server_and_native_calls_come_back(fake_llama_server):
    from tool_sets.finance import TOOL_SET

    with ModelServer(fake_llama_server) as server:
        lm = get_lm(server.model_spec, cache=False)
        selector = MultiToolSelector(TOOL_SET, strategy="native")
        selector.check_lm(lm)  # served models speak native tool calls
        with dspy.context(lm=lm):
            decision = selector(request="Convert 100 USD to EUR").decision
    assert [call.tool_name for call in decision.tool_calls] == ["convert_currency"]
    assert decision.parse_error is None


def test_a_server_that_exits_at_start_is_a_clear_error(fake_llama_server, monkeypatch):
    monkeypatch.setenv("FAKE_SERVER_MODE", "crash")
    with pytest.raises(ServerError, match="exited with status 1 while starting(.|\n)*cannot load model"):
        ModelServer(fake_llama_server).start()


def test_a_server_that_never_comes_up_is_stopped_and_reported(fake_llama_server, monkeypatch):
    monkeypatch.setenv("FAKE_SERVER_MODE", "slow")
    server = ModelServer(fake_llama_server, options=ServerOptions(start_timeout_s=1.5))
    with pytest.raises(ServerError, match="did not come up within 2 s"):
        server.start()
    assert server.process is None


def test_a_missing_binary_names_the_build_command(fake_llama_server, monkeypatch, tmp_path):
    monkeypatch.delenv(SERVER_BINARY_ENV, raising=False)
    monkeypatch.setenv("TOOLSEL_WHEEL_DIR", str(tmp_path / "wheels"))
    with pytest.raises(ServerError, match="server_build build"):
        ModelServer(fake_llama_server).start()


def test_only_local_models_are_served_and_parallel_is_positive():
    with pytest.raises(ServerError, match="Only local models"):
        ModelServer("openai/gpt-4o-mini")
    with pytest.raises(ServerError, match="at least 1"):
        ModelServer("local:qwen2.5-coder-0.5b", parallel=0)


def test_no_server_at_an_address_is_a_clear_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ServerError, match=f"No model server answers at http://127.0.0.1:{port}"):
        served_lm(f"http://127.0.0.1:{port}", timeout_s=1)


def test_server_builds_are_keyed_by_profile(tmp_path):
    portable, avx512 = server_plan("portable", wheel_dir=tmp_path), server_plan("avx512", wheel_dir=tmp_path)
    assert portable.folder != avx512.folder
    assert "-DGGML_NATIVE=OFF" in portable.cmake_args and "-DLLAMA_BUILD_SERVER=ON" in portable.cmake_args
    assert not portable.built()


def test_serve_model_command_serves_until_terminated(fake_llama_server):
    toolsel = Path(sys.executable).with_name("toolsel")
    process = subprocess.Popen([str(toolsel), "serve", "model", fake_llama_server, "--parallel", "2"], stdout=subprocess.PIPE,
                               text=True, env=os.environ.copy())
    try:
        line = process.stdout.readline()
        assert "with 2 parallel slot(s) at http://127.0.0.1:" in line
        url = line.rsplit(" at ", 1)[1].strip()
        with urllib.request.urlopen(f"{url}/health", timeout=5) as reply:
            assert reply.status == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/health", timeout=2)
