"""How llama-cpp-python is built for the local engine, so that it runs on the CPU it lands on.

pip's default build of llama-cpp-python compiles llama.cpp with ``GGML_NATIVE=ON`` (``-march=native``): on a CPU
that advertises AMX it compiles ggml's AMX kernels, and where the kernel does not grant AMX to the process (VMs,
sandboxes) the first matrix product faults. And pip reuses a wheel it built earlier whatever ``CMAKE_ARGS`` says.

So the set-up builds the wheel itself, from a pinned sdist, with a named build *profile*, into a wheelhouse keyed
by everything the build depends on (version, CMake arguments, machine, Python), and installs that wheel:

- ``portable`` (default): x86-64 with AVX2/FMA/F16C/BMI2, no AVX-512, no AMX; on ARM and other machines the
  compiler's baseline for the architecture (``GGML_NATIVE=OFF``). Runs on any CPU of the architecture that
  has those features, wherever the wheel was built.
- ``avx512``: portable plus AVX-512 (F, VNNI, BF16, VBMI), still no AMX. Faster where AVX-512 exists;
  dies with SIGILL on CPUs without it (many AMD and client Intel CPUs), hence opt-in.
- ``native``: ``GGML_NATIVE=ON``, llama.cpp's own default, tuned to the building CPU (its key includes that
  CPU's flags, so a shared wheelhouse never hands it to another CPU). Opt-in; may crash where AMX is denied.

pip records where an installed wheel came from (``direct_url.json``), so the installed build is known without
running it: ``ensure`` reinstalls whenever the installed llama-cpp-python is not this profile's wheel (a venv
set up by an older ``make`` included). This file uses only the standard library: the set-up runs it by path
(``python tool_selection/lm/engine_build.py ensure``) before the project's dependencies are installed.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = [
    "DEFAULT_PROFILE",
    "LLAMA_CPP_PYTHON_VERSION",
    "PROFILES",
    "PROFILE_ENV",
    "BuildPlan",
    "InstalledBuild",
    "cpu_flags",
    "installed_build",
    "plan",
    "rebuild_command",
]

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
PROFILE_ENV = "TOOLSEL_ENGINE_BUILD"
WHEEL_DIR_ENV = "TOOLSEL_WHEEL_DIR"
DEFAULT_PROFILE = "portable"
PROFILES = ("portable", "avx512", "native")

_COMMON = ("-DLLAVA_BUILD=OFF",)  # the multimodal library: unused here, a fifth of the build time
_NO_AMX = ("-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF")
_X86_BASE = ("-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
             "-DGGML_BMI2=ON")
_X86_AVX512 = ("-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX512_BF16=ON", "-DGGML_AVX512_VBMI=ON")
_X86 = frozenset({"x86_64", "amd64"})
# CPU flags that decide which build runs (x86 /proc/cpuinfo "flags"; ARM "Features")
RELEVANT_FLAGS = ("avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16",
                  "avx512vbmi", "amx_tile", "amx_int8", "amx_bf16", "asimd", "asimddp", "sve", "sve2", "i8mm")


class EngineBuildError(Exception):
    """The engine cannot be built or installed as asked."""


def _machine() -> str:
    return platform.machine().lower()


def cpu_flags() -> set[str]:
    """This CPU's feature flags as Linux reports them (empty where /proc/cpuinfo is not available)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def cmake_args(profile: str) -> tuple[str, ...]:
    """The CMake arguments of a build profile on this machine's architecture."""
    if profile not in PROFILES:
        raise EngineBuildError(f"Unknown engine build profile {profile!r}; known: {', '.join(PROFILES)}.")
    if profile == "native":
        return ("-DGGML_NATIVE=ON", *_COMMON)
    if _machine() not in _X86:
        if profile == "avx512":
            raise EngineBuildError(f"The avx512 profile is for x86-64; this machine is {_machine()}. "
                                   "Use the portable profile.")
        return ("-DGGML_NATIVE=OFF", *_COMMON)
    if profile == "avx512":
        return (*_X86_BASE, *_X86_AVX512, *_NO_AMX, *_COMMON)
    return (*_X86_BASE, "-DGGML_AVX512=OFF", *_NO_AMX, *_COMMON)


def default_wheel_dir() -> Path:
    """``TOOLSEL_WHEEL_DIR``, else ``wheels`` in the user cache directory (where the models are kept too)."""
    configured = os.environ.get(WHEEL_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(cache) / "tool-selection" / "wheels"


def build_key(profile: str, identity: dict) -> str:
    """A short hash of what a build depends on, this machine's architecture included; a native build's includes
    this CPU's flags too, so that it is never reused on another CPU."""
    identity = {**identity, "machine": _machine()}
    if profile == "native":
        identity["cpu_flags"] = sorted(cpu_flags())
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class BuildPlan:
    """One build of llama-cpp-python: its profile, CMake arguments, and the wheelhouse folder keyed by them."""

    profile: str
    version: str
    cmake_args: tuple[str, ...]
    key: str
    wheel_dir: Path

    @property
    def folder(self) -> Path:
        return self.wheel_dir / f"llama-cpp-python-{self.version}-{self.profile}-{self.key}"

    def wheel(self) -> Path | None:
        wheels = sorted(self.folder.glob("llama_cpp_python-*.whl")) if self.folder.is_dir() else []
        return wheels[-1] if wheels else None


def plan(profile: str | None = None, *, wheel_dir: str | os.PathLike | None = None) -> BuildPlan:
    """The build for ``profile`` (default: ``$TOOLSEL_ENGINE_BUILD`` or portable) on this machine."""
    profile = (profile or os.environ.get(PROFILE_ENV, "").strip() or DEFAULT_PROFILE).lower()
    args = cmake_args(profile)
    key = build_key(profile, {"version": LLAMA_CPP_PYTHON_VERSION, "cmake_args": args,
                              "python": sys.implementation.cache_tag, "platform": sys.platform})
    return BuildPlan(profile, LLAMA_CPP_PYTHON_VERSION, args, key,
                     Path(wheel_dir).expanduser() if wheel_dir else default_wheel_dir())


@dataclass(frozen=True)
class InstalledBuild:
    """The llama-cpp-python this interpreter has, and where its wheel came from."""

    version: str
    source: str | None  # the wheel file pip installed it from, None for an index or sdist install
    package_dir: Path | None

    @property
    def wheelhouse_folder(self) -> str | None:
        return Path(self.source).parent.name if self.source else None

    def matches(self, build: BuildPlan) -> bool:
        return self.version == build.version and self.wheelhouse_folder == build.folder.name

    def profile(self) -> str:
        """The profile it was built with, or a description of where it came from instead."""
        folder = self.wheelhouse_folder or ""
        for name in PROFILES:
            if folder.startswith(f"llama-cpp-python-{self.version}-{name}-"):
                return name
        return "pip's default (CPU-native) build" if self.source is None else f"a wheel from {self.source}"

    def has_amx_kernels(self) -> bool:
        """Whether ggml's AMX kernels are compiled into the CPU backend (what crashes where AMX is denied)."""
        lib = self.package_dir / "lib" if self.package_dir else None
        if lib is None or not lib.is_dir():
            return False
        return any(b"ggml_backend_amx" in path.read_bytes() for path in lib.glob("libggml-cpu*.so*"))


def installed_build() -> InstalledBuild | None:
    """The installed llama-cpp-python, read from its metadata (nothing is loaded), or None."""
    try:
        dist = importlib.metadata.distribution("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return None
    source = None
    direct_url = dist.read_text("direct_url.json")
    if direct_url:
        url = json.loads(direct_url).get("url", "")
        if url.startswith("file://") and url.endswith(".whl"):
            source = unquote(urlparse(url).path)
    package = dist.locate_file("llama_cpp")
    return InstalledBuild(dist.version, source, Path(package) if Path(package).is_dir() else None)


def rebuild_command(profile: str | None = None, *, rebuild: bool = False) -> str:
    """The command that installs a profile's build (building it if the wheelhouse lacks it, or ``rebuild``)."""
    profile = profile or DEFAULT_PROFILE
    return ("make engine" + ("" if profile == DEFAULT_PROFILE else f" ENGINE={profile}")
            + (" REBUILD=1" if rebuild else ""))


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    command = [sys.executable, "-m", "pip", *args]
    print("+ " + " ".join(command), file=sys.stderr, flush=True)
    if subprocess.run(command, env=env).returncode != 0:
        raise EngineBuildError(f"pip failed: {' '.join(command)}")


def build_wheel(build: BuildPlan) -> Path:
    """Build the wheel from the pinned sdist (never from pip's cache) into the plan's wheelhouse folder."""
    env = {**os.environ, "CMAKE_ARGS": " ".join(build.cmake_args), "FORCE_CMAKE": "1",
           "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 1)}
    print(f"Building llama-cpp-python {build.version} ({build.profile}: {' '.join(build.cmake_args)}); "
          "a few minutes on two cores.", file=sys.stderr, flush=True)
    build.wheel_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build.wheel_dir, prefix=".building-") as scratch:
        done = Path(scratch, "done")
        done.mkdir()
        _pip("wheel", "--no-deps", "--no-cache-dir", "--no-binary", "llama-cpp-python", "--wheel-dir", str(done),
             f"llama-cpp-python=={build.version}", env=env)
        if not list(done.glob("llama_cpp_python-*.whl")):
            raise EngineBuildError(f"pip built no llama-cpp-python wheel in {done}.")
        if build.folder.exists():
            shutil.rmtree(build.folder)
        os.replace(done, build.folder)  # the folder appears only once its wheel is whole
    return build.wheel()


def ensure(build: BuildPlan, *, rebuild: bool = False) -> str:
    """Make this interpreter's llama-cpp-python the plan's wheel: build it if the wheelhouse lacks it (or
    ``rebuild``), reinstall if another build is installed. Returns what was done."""
    installed = installed_build()
    if installed and installed.matches(build) and not rebuild:
        return f"llama-cpp-python {build.version} ({build.profile} build) is installed"
    wheel = None if rebuild else build.wheel()
    if wheel is None:
        wheel = build_wheel(build)
    if installed is not None:
        _pip("uninstall", "--yes", "--quiet", "llama-cpp-python")
    _pip("install", "--quiet", str(wheel))
    return f"installed llama-cpp-python {build.version} ({build.profile} build) from {wheel}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="engine_build", description="Build and install llama-cpp-python for the local engine "
                                         "(see this file's docstring for the profiles).")
    parser.add_argument("command", choices=["ensure", "build", "show"],
                        help="ensure: install this profile's build (building it once); build: only put it in the "
                             "wheelhouse; show: what would be built, and what is installed")
    parser.add_argument("--profile", choices=PROFILES,
                        help=f"Build profile (default: ${PROFILE_ENV} or {DEFAULT_PROFILE}).")
    parser.add_argument("--rebuild", action="store_true", help="Build again even if the wheelhouse has the wheel.")
    parser.add_argument("--wheel-dir", help=f"Wheelhouse (default: ${WHEEL_DIR_ENV} or the user cache directory).")
    args = parser.parse_args(argv)
    try:
        build = plan(args.profile, wheel_dir=args.wheel_dir)
        if args.command == "show":
            installed = installed_build()
            print(json.dumps({"profile": build.profile, "version": build.version, "cmake_args": build.cmake_args,
                              "wheelhouse": str(build.folder), "built": build.wheel() is not None,
                              "installed": installed.profile() if installed else None,
                              "installed_matches": bool(installed and installed.matches(build))}, indent=2))
            return 0
        if args.command == "build":
            wheel = build.wheel() if not args.rebuild else None
            print(wheel or build_wheel(build))
            return 0
        print(ensure(build, rebuild=args.rebuild), file=sys.stderr)
        return 0
    except EngineBuildError as error:
        print(f"engine_build: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
