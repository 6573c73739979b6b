"""Before a process first uses the local engine, prove that llama.cpp runs here: a smoke completion in a child.

A llama.cpp build that does not fit the CPU (AMX kernels the kernel does not grant, instructions the CPU lacks)
dies by a signal on its first matrix product, taking the whole Python process with it: a segmentation fault and
nothing else. So the first real use of a local model runs a short completion in a child process; if the child
dies by a signal, the caller gets one clear error naming the likely cause and the rebuild command instead. The
verdict is cached per installed build (the llama.cpp libraries' names, sizes and modification times), so every
later use costs a few ``stat`` calls.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tool_selection.errors import ToolSelectionError
from tool_selection.lm import engine_build

__all__ = ["EngineCheckError", "EngineVerdict", "check_engine", "engine_build_id", "require_working_engine"]

SMOKE_TIMEOUT_S = 300
_SMOKE_SCRIPT = """
import json, sys, time
import llama_cpp
start = time.perf_counter()
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, n_batch=64, verbose=False)
text = llm.create_completion("The capital of France is", max_tokens=4, temperature=0.0)["choices"][0]["text"]
print(json.dumps({"text": text, "seconds": time.perf_counter() - start}))
"""


class EngineCheckError(ToolSelectionError, RuntimeError):
    """The local engine cannot run on this machine (its smoke completion crashed, failed or hung)."""


@dataclass(frozen=True)
class EngineVerdict:
    """The outcome of one smoke completion: ``ok``, or how the child ended (``signal`` if a signal killed it)."""

    ok: bool
    build_id: str
    detail: str
    signal: str | None = None
    seconds: float = 0.0
    checked_at: float = 0.0
    cached: bool = False


def _llama_cpp_dir() -> Path | None:
    spec = importlib.util.find_spec("llama_cpp")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def engine_build_id() -> str | None:
    """An id of the installed llama.cpp build (its libraries' names, sizes, mtimes), or None if not installed."""
    package = _llama_cpp_dir()
    if package is None:
        return None
    libraries = sorted(p for p in (package / "lib").glob("*.so*") if p.is_file()) if (package / "lib").is_dir() else []
    identity = [str(package)] + [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in libraries]
    return hashlib.sha256("\n".join(identity).encode()).hexdigest()[:16]


def _verdict_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("tool-selection")) / "engine-checks"


def _cached(build_id: str) -> EngineVerdict | None:
    try:
        data = json.loads((_verdict_dir() / f"{build_id}.json").read_text())
        return EngineVerdict(**{**data, "cached": True})
    except (OSError, ValueError, TypeError):
        return None


def _remember(verdict: EngineVerdict) -> None:
    directory = _verdict_dir()
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{verdict.build_id}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({k: v for k, v in asdict(verdict).items() if k != "cached"}))
    os.replace(tmp, directory / f"{verdict.build_id}.json")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def smoke_test(model_path: str | os.PathLike, *, script: str = _SMOKE_SCRIPT,
               timeout: float = SMOKE_TIMEOUT_S) -> EngineVerdict:
    """Run the smoke completion on ``model_path`` in a child process now (no cache)."""
    build_id = engine_build_id() or "not-installed"
    start = time.perf_counter()
    try:
        child = subprocess.run([sys.executable, "-c", script, str(model_path)], capture_output=True, text=True,
                               timeout=timeout, env={**os.environ, "PYTHONFAULTHANDLER": "0"})
    except subprocess.TimeoutExpired:
        return EngineVerdict(False, build_id, f"the smoke completion did not finish within {timeout:.0f} s",
                             seconds=time.perf_counter() - start, checked_at=time.time())
    seconds = time.perf_counter() - start
    if child.returncode < 0:
        name = _signal_name(-child.returncode)
        return EngineVerdict(False, build_id, f"the child process was killed by {name}", signal=name,
                             seconds=seconds, checked_at=time.time())
    if child.returncode != 0:
        tail = (child.stderr or child.stdout).strip().splitlines()[-3:]
        return EngineVerdict(False, build_id, f"the child process failed (exit {child.returncode}): "
                             + " | ".join(tail), seconds=seconds, checked_at=time.time())
    return EngineVerdict(True, build_id, f"completed: {child.stdout.strip()}", seconds=seconds,
                         checked_at=time.time())


def check_engine(model_path: str | os.PathLike, *, recheck: bool = False) -> EngineVerdict:
    """The installed build's verdict: from the cache, else from a smoke completion on ``model_path`` (cached
    when it passed or a signal killed it; a failure of another kind, such as a bad model file, is not)."""
    build_id = engine_build_id()
    if build_id is None:
        return EngineVerdict(False, "not-installed", "llama-cpp-python is not installed")
    if not recheck and (cached := _cached(build_id)) is not None:
        return cached
    verdict = smoke_test(model_path)
    if verdict.ok or verdict.signal:
        _remember(verdict)
    return verdict


def _explain(verdict: EngineVerdict) -> str:
    installed = engine_build.installed_build()
    profile = installed.profile() if installed else "unknown"
    build = f"the installed llama-cpp-python is {profile}"
    if installed and installed.has_amx_kernels():
        build += ", with ggml's AMX kernels compiled in"
    if verdict.signal == "SIGILL":
        cause = (f"the llama.cpp build uses instructions this CPU does not have ({build}; a build for another "
                 "CPU, such as the avx512 or native profile made elsewhere)")
    else:
        cause = (f"a CPU-native llama.cpp build ({build}): on CPUs that advertise AMX, a kernel or sandbox that "
                 "does not grant AMX to the process crashes the first matrix product")
    return (f"The local engine crashed: {verdict.detail} during a smoke completion in a child process, so this "
            f"command stopped before doing any work (nothing was written). Likely cause: {cause}. Rebuild the "
            f"portable engine with `{engine_build.rebuild_command()}` in the repository (or `python -m "
            "tool_selection.lm.engine_build ensure` in your environment); `toolsel doctor` shows the "
            "details.")


def require_working_engine(model_path: str | os.PathLike) -> EngineVerdict:
    """``check_engine``, raising ``EngineCheckError`` with the cause and the fix unless the engine runs."""
    verdict = check_engine(model_path)
    if verdict.ok:
        return verdict
    if verdict.signal:
        raise EngineCheckError(_explain(verdict))
    raise EngineCheckError(f"The local engine's smoke completion on {model_path} did not pass: {verdict.detail}. "
                           "Run `toolsel doctor` for the details.")
