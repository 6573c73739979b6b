"""The code tool set: programs run for real in a fresh folder with a minimal environment, and every limit
(time, CPU, output, file size, processes) stops them with a structured failure."""

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from tool_selection import ToolArgumentError
from tool_selection.failures import is_failure
from tool_sets.code import TOOL_SET, RunBash, RunJavaScript, RunPython

NODE = shutil.which("node") or shutil.which("nodejs")
needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")


def run(name: str, code: str, **config):
    result = TOOL_SET.registry().execute(name, {"code": code}, **config)
    assert json.loads(json.dumps(result)) == result
    return result


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


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


def test_background_processes_are_killed_when_the_program_ends():
    result = run("run_bash", "for i in 1 2 3; do sleep 60 & done\necho $(jobs -p)")
    pids = [int(pid) for pid in result["stdout"].split()]
    assert result["ok"] and len(pids) == 3 and result["duration_s"] < 5
    assert not any(alive(pid) for pid in pids)


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
