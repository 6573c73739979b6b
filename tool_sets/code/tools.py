"""The code tools: run a Python, JavaScript (node) or bash program and return what it printed.

Each call runs in a fresh temporary directory through ``tool_sets._sandbox.process``: a wall-clock timeout,
CPU, memory, process and file-size limits, output cut at a bound, a minimal environment (no inherited API
keys), stdin closed, and the process group killed at the end. Where Linux namespaces can be created, the program
also sees no other process (so not this one's environment or memory), has no network unless ``allow_network``,
cannot change its limits, and cannot write to the host's files: it works in a copy of its folder inside one private
tmpfs of ``max_total_file_bytes`` that also holds its ``/tmp``, ``/var/tmp`` and ``/dev/shm``. Nothing is read back
from the folder (only what the program prints), so the copy loses nothing and a run leaves no file behind.
``tool_sets._sandbox.process.isolation()`` says whether namespaces can be created. Reading is not confined: a
program can read what the toolkit's user can read, but for a short list of secrets (``process.HIDDEN_PATHS``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from tool_selection import BaseTool, register_tool
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets._sandbox.process import Limits, run_limited

__all__ = ["TOOLS", "CodeTool", "RunBash", "RunJavaScript", "RunPython"]

MAX_CODE_CHARS = 20_000


class CodeTool(BaseTool, abstract=True):
    """Base of the code tools: the interpreter and the limits every run is held to."""

    category = "code"
    LANGUAGE: ClassVar[str]
    FILE_NAME: ClassVar[str]
    OPTIONS: ClassVar[tuple[str, ...]] = ()
    RESERVES_ADDRESS_SPACE: ClassVar[bool] = False  # node reserves gigabytes, so RLIMIT_DATA bounds it instead

    executable: str | None = Field(description="The interpreter; None when it is not installed.")
    timeout_s: float = Field(default=5.0, gt=0, description="Wall-clock limit of one run, in seconds.")
    cpu_s: float = Field(default=5.0, gt=0, description="CPU-time limit of each process, in seconds.")
    memory_mb: int = Field(default=512, ge=16, description="Memory limit of each process, in MiB.")
    max_processes: int = Field(default=32, ge=1, description="Most processes a run may have at once.")
    max_file_bytes: int = Field(default=10 * 2**20, ge=0, description="Largest file a run may write.")
    max_output_bytes: int = Field(default=20_000, ge=1, description="Most bytes kept of stdout and of stderr.")
    max_total_file_bytes: int = Field(default=64 * 2**20, ge=2**20, description=(
        "Most bytes a run's files may hold together: its folder, /tmp, /var/tmp and /dev/shm share one private "
        "tmpfs of this size, held in memory and gone after the run (where Linux namespaces can be created)."))
    allow_network: bool = Field(default=False, description="Let programs reach the network. Off, each run has a "
                                                           "network namespace of its own with only loopback (where "
                                                           "Linux namespaces can be created).")

    class Arguments(StrictArguments):
        code: str = Field(min_length=1, max_length=MAX_CODE_CHARS, description="The whole program to run.")

    def execute(self, code: str) -> dict[str, Any]:
        if self.executable is None:
            others = [t.NAME for t in TOOLS if t.LANGUAGE != self.LANGUAGE]
            return tool_failure("language_unavailable", f"{self.LANGUAGE} is not installed on this machine; use "
                                                        f"{' or '.join(others)} instead.", suggestions=others,
                                language=self.LANGUAGE)
        limits = Limits(timeout_s=self.timeout_s, cpu_s=self.cpu_s, memory_bytes=self.memory_mb * 2**20,
                        max_processes=self.max_processes, max_file_bytes=self.max_file_bytes,
                        max_output_bytes=self.max_output_bytes, limit_address_space=not self.RESERVES_ADDRESS_SPACE,
                        allow_network=self.allow_network, max_total_file_bytes=self.max_total_file_bytes)
        with tempfile.TemporaryDirectory(prefix="tool-selection-code-", ignore_cleanup_errors=True) as workdir:
            program = Path(workdir, self.FILE_NAME)
            program.write_text(code, encoding="utf-8")
            outcome = run_limited([self.executable, *self.OPTIONS, program.name], cwd=Path(workdir), limits=limits)
        output = {"stdout": outcome.stdout, "stderr": outcome.stderr, "duration_s": outcome.duration_s}
        if outcome.stopped is not None:
            return tool_failure(outcome.stopped, self._stop_message(outcome.stopped), language=self.LANGUAGE,
                                **output)
        return {"ok": True, "language": self.LANGUAGE, "exit_code": outcome.exit_code, **output}

    def _stop_message(self, stopped: str) -> str:
        return {
            "timeout": f"The program ran longer than {self.timeout_s:g} s and was stopped.",
            "cpu_limit": f"The program used more than {self.cpu_s:g} s of CPU time and was stopped.",
            "output_limit": f"The program printed more than {self.max_output_bytes:,} bytes and was stopped; "
                            "print less.",
            "process_limit": f"The program started more than {self.max_processes} processes and was stopped.",
        }[stopped]


@register_tool
class RunPython(CodeTool):
    NAME = "run_python"
    description = ("Run a Python 3 program and return what it printed (stdout, stderr) and its exit code. Each "
                   "run starts fresh in an empty folder, with a few seconds and no input.")
    LANGUAGE = "python"
    FILE_NAME = "main.py"
    OPTIONS = ("-I",)  # isolated: ignores PYTHON* variables and the user's site-packages

    executable: str | None = Field(default=os.path.realpath(sys.executable),
                                   description="The interpreter itself, not a virtual environment's link to it (a "
                                               "folder under /tmp is hidden in the sandbox).")


@register_tool
class RunJavaScript(CodeTool):
    NAME = "run_javascript"
    description = ("Run a JavaScript program with Node.js and return what it printed (stdout, stderr) and its "
                   "exit code. Each run starts fresh in an empty folder, with a few seconds and no input.")
    LANGUAGE = "javascript"
    FILE_NAME = "main.js"
    RESERVES_ADDRESS_SPACE = True

    executable: str | None = Field(default_factory=lambda: shutil.which("node") or shutil.which("nodejs"),
                                   description="The node executable; None when Node.js is not installed.")


@register_tool
class RunBash(CodeTool):
    NAME = "run_bash"
    description = ("Run a bash shell script and return what it printed (stdout, stderr) and its exit code. Each "
                   "run starts fresh in an empty folder, with a few seconds and no input.")
    LANGUAGE = "bash"
    FILE_NAME = "main.sh"
    OPTIONS = ("--noprofile", "--norc")

    executable: str | None = Field(default_factory=lambda: shutil.which("bash"), description="The bash shell.")


TOOLS = (RunPython, RunJavaScript, RunBash)
