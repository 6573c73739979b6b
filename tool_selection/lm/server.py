"""Served models: a local GGUF model behind llama.cpp's OpenAI-compatible ``llama-server``, on loopback.

One server holds the model once and decodes up to ``parallel`` requests together (continuous batching), so
``toolsel eval --threads N`` against it runs N cases at a time through one copy of the weights. The toolkit starts
and stops it::

    with ModelServer("local:qwen2.5-coder-0.5b", parallel=4) as server:
        lm = server.lm()                       # a dspy.LM speaking to it (native tool calls included)

or ``toolsel serve model qwen2.5-coder-0.5b --parallel 4``, then ``--model served:http://127.0.0.1:PORT``.
The server renders the GGUF's own chat template (``--jinja``), so the native strategy's tools reach the model in
its own format, as in-process.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from tool_selection.defaults import DEFAULT_MAX_TOKENS, DEFAULT_MODEL
from tool_selection.errors import ToolSelectionError
from tool_selection.lm.specs import SERVED_PREFIX, LocalEngineOptions, ModelSpec

__all__ = ["SERVED_PREFIX", "ModelServer", "ServedLM", "ServerError", "ServerOptions", "served_lm"]


class ServerError(ToolSelectionError, RuntimeError):
    """A model server could not be built, started or reached, or it died."""


class ServedLM(dspy.LM):
    """A ``dspy.LM`` for a llama-server of this toolkit's: started with ``--jinja``, it renders the model's own
    tool-calling format and parses its calls, which LiteLLM cannot know for a model name it has never seen."""

    @property
    def supports_function_calling(self) -> bool:
        return True


def served_lm(base_url: str, *, temperature: float = 0.0, max_tokens: int = DEFAULT_MAX_TOKENS, cache: bool = True,
              timeout_s: float = 5.0, **kwargs) -> ServedLM:
    """A ``ServedLM`` for the llama-server at ``base_url`` (``http://HOST:PORT``), named after the model it serves.
    A server that does not answer is a ``ServerError`` now, not at the first call."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/v1/models", timeout=timeout_s) as reply:
            models = json.load(reply).get("data") or []
    except (OSError, ValueError) as error:
        raise ServerError(f"No model server answers at {root} ({error}). Start one with "
                          "'toolsel serve model NAME --port PORT', or check the address.") from None
    if not models:
        raise ServerError(f"The server at {root} serves no model.")
    kwargs.setdefault("num_retries", 0)
    return ServedLM(f"openai/{models[0]['id']}", api_base=f"{root}/v1", api_key="not-needed",
                    temperature=temperature, max_tokens=max_tokens, cache=cache, **kwargs)


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _die_with_parent() -> None:
    """In the child: ask Linux to stop the server when the process that started it dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass(frozen=True)
class ServerOptions:
    """How llama-server is launched: where it listens (``host``, loopback; ``port``, default a free one), which
    program runs (``binary``; default ``$TOOLSEL_LLAMA_SERVER`` or the toolkit's build, which ``build=True`` makes
    if it is missing), how long it may take to come up (``start_timeout_s``) and any further flags (``extra_args``)."""

    host: str = "127.0.0.1"
    port: int | None = None
    binary: str | os.PathLike | None = None
    build: bool = False
    start_timeout_s: float = 300.0
    extra_args: tuple[str, ...] = ()


class ModelServer:
    """llama-server serving one local model (``local:NAME`` or ``local:/path.gguf``) on loopback.

    ``parallel``: slots decoded together; each has the model's context. ``local``: how the model is loaded
    (``LocalEngineOptions``: ``n_ctx``, default the catalog's; ``n_threads``, default every core; ``model_dir``).
    ``options``: how the server is launched (``ServerOptions``: host, port, binary, build, start timeout).
    """

    def __init__(self, spec: str | ModelSpec = DEFAULT_MODEL, *, parallel: int = 1, local: LocalEngineOptions | None = None,
                 options: ServerOptions | None = None):
        if parallel < 1:
            raise ServerError(f"parallel must be at least 1, got {parallel}.")
        self.spec = ModelSpec.of(spec)
        if not self.spec.is_local:
            raise ServerError(f"Only local models are served (local:NAME or local:/path.gguf), not {str(spec)!r}.")
        self.local, self.options = local or LocalEngineOptions(), options or ServerOptions()
        self.parallel, self.host, self.port = parallel, self.options.host, self.options.port
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None

    # --- what it serves -----------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise ServerError("The server has not been started.")
        return f"http://{self.host}:{self.port}"

    @property
    def model_spec(self) -> str:
        """The model spec that reaches this server from anywhere a spec is taken (``--model``)."""
        return SERVED_PREFIX + self.base_url

    def lm(self, **kwargs: Any) -> ServedLM:
        return served_lm(self.base_url, **kwargs)

    # --- lifecycle ----------------------------------------------------------------------------------------------
    def command(self) -> list[str]:
        from tool_selection.lm.assemble import ensure_model
        from tool_selection.lm.catalog import load_catalog
        from tool_selection.lm.engine import default_threads

        if self.spec.kind == "catalog":
            entry = load_catalog().local_model(self.spec.target)
            path, n_ctx, alias = ensure_model(entry, self.local.model_dir), self.local.n_ctx or entry.n_ctx, entry.name
        else:
            path, n_ctx, alias = Path(self.spec.target), self.local.n_ctx or 4096, Path(self.spec.target).stem
        if not path.is_file():
            raise ServerError(f"GGUF file {path} does not exist.")
        threads = str(self.local.n_threads or default_threads())
        return [str(self._binary()), "--model", str(path), "--alias", alias, "--host", self.host,
                "--port", str(self.port), "--ctx-size", str(n_ctx * self.parallel), "--parallel", str(self.parallel),
                "--threads", str(threads), "--threads-batch", str(threads), "--jinja", "--no-warmup",
                *self.options.extra_args]

    def _binary(self) -> Path:
        from tool_selection.lm.server_build import build_server, find_server, server_plan

        binary = Path(self.options.binary).expanduser() if self.options.binary else find_server()
        if binary is None and self.options.build:
            binary = build_server(server_plan())
        if binary is None or not binary.is_file():
            raise ServerError("llama-server is not built. Build it once (about ten minutes on two cores) with "
                              "'python -m tool_selection.lm.server_build build' (or 'make server'), or point "
                              "TOOLSEL_LLAMA_SERVER at a llama-server of your own.")
        return binary

    def start(self) -> ModelServer:
        if self.process is not None:
            return self
        self.port = self.port or _free_port(self.host)
        command = self.command()
        handle, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        self.log_path = Path(name)
        with os.fdopen(handle, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        deadline = time.monotonic() + self.options.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                status, tail = self.process.returncode, self.log_tail()
                self.stop()
                raise ServerError(f"llama-server exited with status {status} while starting:\n{tail}")
            if self.healthy():
                return self
            time.sleep(0.25)
        tail = self.log_tail()
        self.stop()
        raise ServerError(f"llama-server did not come up within {self.options.start_timeout_s:.0f} s:\n{tail}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/health", timeout=2) as reply:
                return reply.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def check_alive(self) -> None:
        """Raise ``ServerError`` with the server's last log lines if it has died."""
        if self.process is not None and self.process.poll() is not None:
            raise ServerError(f"llama-server died (status {self.process.returncode}):\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.is_file():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url if self.port else "not started"
        return f"ModelServer({str(self.spec)!r}, parallel={self.parallel}, {where})"
