"""The code tool set: programs run for real in a fresh folder with a minimal environment, and every limit
(time, CPU, output, file size, processes) stops them with a structured failure. Where Linux namespaces can be
created, programs also see no other process, have no network unless it is allowed, and work in a copy of their
folder inside one private tmpfs (tests/attacks/test_sandbox_boundary.py attacks that boundary)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.tool_sets.processes import running_in
from tool_selection import ToolArgumentError
from tool_selection.tool_failures import is_failure
from tool_sets._sandbox import process
from tool_sets._sandbox.pids_cgroup import PidsCgroup, _own_pids_cgroups
from tool_sets._sandbox.process import Isolation, Limits, SandboxWarning, run_limited
from tool_sets.code import TOOL_SET, RunBash, RunJavaScript, RunPython

NODE = shutil.which("node") or shutil.which("nodejs")
needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
needs_proc = pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the program's processes in /proc")


@pytest.fixture
def namespaces():
    """Skips the test where this machine refuses to create the namespaces programs are isolated with."""
    if not process.isolation().available:
        pytest.skip(f"Linux namespaces are not available here: {process.isolation().reason}")


def run(name: str, code: str, **config):
    result = TOOL_SET.registry().execute(name, {"code": code}, **config)
    assert json.loads(json.dumps(result)) == result
    return result


def test_the_set_holds_three_languages():
    assert TOOL_SET.name == "code"
    assert TOOL_SET.names() == ["run_python", "run_javascript", "run_bash"]
    assert {t.category for t in TOOL_SET} == {"code"}
    assert set(RunPython.input_schema()["properties"]) == {"code"}


def test_python_prints_and_reports_its_exit_code():
    result = run("run_python", "import sys\nprint(sum(range(10)))\nprint('oops', file=sys.stderr)\nsys.exit(3)")
    assert result["ok"] and result["language"] == "python"
    assert (result["stdout"], result["stderr"], result["exit_code"]) == ("45\n", "oops\n", 3)


def test_an_exception_is_output_not_a_tool_failure():
    result = run("run_python", "1 / 0")
    assert result["ok"] and result["exit_code"] == 1 and "ZeroDivisionError" in result["stderr"]


def test_bash_runs_commands():
    result = run("run_bash", "echo $((6 * 7)); ls | wc -l")
    assert result["ok"] and result["stdout"].split() == ["42", "1"]  # only its own main.sh


@needs_node
def test_javascript_runs_with_node():
    result = run("run_javascript", "console.log([1, 2, 3].map(x => x * 2).join(','))")
    assert result["ok"] and result["stdout"] == "2,4,6\n"


def test_javascript_without_node_says_so():
    result = RunJavaScript(executable=None).validate_and_execute(code="console.log(1)")
    assert is_failure(result) and result["error"] == "language_unavailable"
    assert result["suggestions"] == ["run_python", "run_bash"] and "not installed" in result["message"]


def test_each_run_starts_in_a_fresh_empty_folder_that_is_its_home():
    first = run("run_python", "import os\nopen('left.txt', 'w').write('x')\nprint(os.getcwd())\n"
                              "print(os.path.expanduser('~'))")
    cwd, home = first["stdout"].split()
    assert cwd == home and not Path(cwd).exists()  # removed after the run
    second = run("run_python", "import os\nprint(os.listdir('.'))")
    assert second["stdout"] == "['main.py']\n"


def test_the_environment_is_minimal(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-children")
    result = run("run_python", "import os\nprint(sorted(os.environ))")
    assert result["stdout"] == "['HOME', 'LANG', 'PATH', 'TMPDIR']\n"


def test_stdin_is_closed():
    result = run("run_python", "try:\n    input()\nexcept EOFError:\n    print('no input')")
    assert result["stdout"] == "no input\n"


def test_a_timeout_stops_the_program_and_keeps_what_it_printed():
    result = run("run_python", "import time\nprint('started', flush=True)\ntime.sleep(30)", timeout_s=0.5)
    assert is_failure(result) and result["error"] == "timeout"
    assert result["stdout"] == "started\n" and result["duration_s"] < 2


def test_the_cpu_limit_stops_a_busy_loop():
    result = run("run_python", "while True:\n    pass", cpu_s=1, timeout_s=10)
    assert result["error"] == "cpu_limit" and result["duration_s"] < 5


def test_output_is_cut_at_its_bound():
    result = run("run_python", "print('x' * 5000)\nprint('y' * 5000)", max_output_bytes=6000)
    assert result["error"] == "output_limit" and result["stdout"] == "x" * 5000 + "\n" + "y" * 999


def test_output_just_under_the_bound_is_not_cut():
    result = run("run_python", "print('x' * 99, end='')", max_output_bytes=100)
    assert result["ok"] and len(result["stdout"]) == 99


def test_the_file_size_limit_holds():
    result = run("run_python", "open('big', 'wb').write(b'x' * 2_000_000)", max_file_bytes=1_000_000)
    assert result["ok"] and result["exit_code"] == 1 and "File too large" in result["stderr"]


@needs_proc
def test_background_processes_are_killed_when_the_program_ends():
    result = run("run_bash", "for i in 1 2 3; do sleep 60 & done\necho $(jobs -p | wc -l) $PWD")
    started, folder = result["stdout"].split()
    assert result["ok"] and started == "3" and result["duration_s"] < 5
    assert running_in(folder) == []


def test_where_a_pids_cgroup_can_be_made_threads_past_the_limit_stop_the_run_and_it_is_removed():
    probe = PidsCgroup.create(1)
    if probe is None:
        pytest.skip("no pids cgroup can be created here (not root and no delegated cgroup)")
    probe.remove()
    before = {path.name for parent in _own_pids_cgroups() for path in parent.glob("tool-selection-*")}
    source = "import threading, time\nfor _ in range(40):\n    threading.Thread(target=time.sleep, args=(5,)).start()"
    result = run("run_python", source, max_processes=8, timeout_s=4)
    after = {path.name for parent in _own_pids_cgroups() for path in parent.glob("tool-selection-*")}
    assert result["error"] == "process_limit" and result["duration_s"] < 2
    assert after <= before


@needs_proc
def test_a_child_that_leaves_the_process_group_is_killed_too(namespaces):
    source = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nprint(os.getcwd())"
    result = run("run_python", source)
    survivors = running_in(result["stdout"].strip())
    for pid in survivors:  # without a PID namespace of its own it outlives the run; do not leave it behind
        os.kill(pid, signal.SIGKILL)
    assert result["ok"] and survivors == []


def test_programs_have_no_network_unless_it_is_allowed(namespaces):
    with socket.create_server(("127.0.0.1", 0)) as server:  # a service on this machine, e.g. a local LLM server
        source = (f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), 2)\n"
                  "    print('connected')\nexcept OSError as error:\n    print(type(error).__name__)")
        assert run("run_python", source)["stdout"] == "ConnectionRefusedError\n"  # its own loopback, nothing on it
        assert run("run_python", source, allow_network=True)["stdout"] == "connected\n"


def test_programs_have_no_capabilities_even_when_run_by_root(namespaces):
    result = run("run_bash", "grep ^CapEff /proc/self/status")  # with any, it could unmount its /proc
    assert result["stdout"].split() == ["CapEff:", "0000000000000000"]


# Run in a user namespace that may hold no further user namespaces, as in a locked-down container.
REFUSED = """import json, sys, tempfile, warnings
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tool_sets._sandbox.process import Limits, isolation, run_limited
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    outcome = run_limited(["/bin/echo", "ran"], cwd=Path(tempfile.mkdtemp()), limits=Limits())
print(json.dumps([isolation().reason, outcome.isolated, outcome.stdout, [str(w.message) for w in caught]]))"""


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1) to set up a refusing namespace")
def test_where_the_kernel_refuses_namespaces_the_probe_says_why_and_programs_still_run(namespaces):
    package_root = str(Path(process.__file__).resolve().parents[2])
    refused = subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c",
         'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" -c "$1" "$2"', sys.executable, REFUSED,
         package_root], capture_output=True, text=True, timeout=60, check=True)
    reason, isolated, stdout, warned = json.loads(refused.stdout)
    assert reason == "namespaces: unshare() failed: No space left on device (errno 28)"
    assert (isolated, stdout) == (False, "ran\n") and len(warned) == 1 and reason in warned[0]


def test_without_namespaces_programs_run_and_a_warning_says_what_does_not_hold(monkeypatch):
    monkeypatch.setattr(process, "isolation", lambda: Isolation(False, "unshare() failed: refused in this test"))
    process._warn_not_isolated.cache_clear()
    with pytest.warns(SandboxWarning, match=r"refused in this test\): they can read the environment of this user's "
                                             r"processes, API keys included, and reach the network; and none of the "
                                             r"file-system protections holds"):
        result = run("run_python", "print('ran')")
    process._warn_not_isolated.cache_clear()
    assert result["ok"] and result["stdout"] == "ran\n"


def test_the_memory_limit_holds():
    result = run("run_python", "block = bytearray(300 * 2**20)\nprint('allocated')", memory_mb=128)
    assert result["ok"] and result["exit_code"] == 1 and "MemoryError" in result["stderr"]
    assert run("run_python", "block = bytearray(30 * 2**20)\nprint('allocated')", memory_mb=128)["ok"]


def test_oversized_code_is_rejected_by_the_schema():
    with pytest.raises(ToolArgumentError, match="code"):
        TOOL_SET.registry().execute("run_python", {"code": "x" * 20_001})


def test_limits_are_validated_when_the_tool_is_built():
    with pytest.raises(ValidationError, match="timeout_s"):
        RunBash(timeout_s=0)
    with pytest.raises(ValidationError, match="max_total_file_bytes"):
        RunBash(max_total_file_bytes=4096)


def test_a_total_file_quota_below_one_tmpfs_is_refused():
    with pytest.raises(ValueError, match=r"max_total_file_bytes=0 is below the smallest private tmpfs a run can have "
                                         r"\(65536 bytes\); give at least that"):
        Limits(max_total_file_bytes=0)


def test_with_namespaces_a_program_works_in_a_copy_of_its_folder(namespaces, tmp_path):
    (tmp_path / "given.txt").write_text("given\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("a,b\n")
    script = 'cat given.txt data/rows.csv; echo made > made.txt; echo "$PWD $HOME"'
    outcome = run_limited(["/bin/sh", "-c", script], cwd=tmp_path, limits=Limits())
    inside = f"/tmp/{tmp_path.name}"
    assert (outcome.exit_code, outcome.stdout) == (0, f"given\na,b\n{inside} {inside}\n"), outcome
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data", "given.txt"]  # nothing came back


def test_a_folder_larger_than_the_quota_is_a_setup_failure(namespaces, tmp_path):
    (tmp_path / "big.bin").write_bytes(bytes(2 * 2**20))
    outcome = run_limited(["/bin/true"], cwd=tmp_path, limits=Limits(max_total_file_bytes=2**20))
    assert outcome.exit_code == 125 and "copying the folder into the sandbox failed: No space left" in outcome.stderr
