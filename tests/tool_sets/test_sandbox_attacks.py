"""Attacks on the sandboxed tools (files, code, database, finance SQL): each must be refused or bounded, and each
is timed against an upper bound (run with -s to see the times)."""

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.tool_sets.processes import running_in
from tool_selection import ToolArgumentError
from tool_sets._sandbox.process import isolation
from tool_sets.code import TOOL_SET as CODE
from tool_sets.database import TOOL_SET as DATABASE
from tool_sets.database import sample_database
from tool_sets.files import TOOL_SET as FILES
from tool_sets.finance import TOOL_SET as FINANCE

NODE = shutil.which("node") or shutil.which("nodejs")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("the secret password\n")
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    return folder


def files(name: str, root: Path, **arguments):
    return FILES.registry().execute(name, arguments, root=root)


def code(name: str, source: str, **config):
    return CODE.registry().execute(name, {"code": source}, **config)


# ------------------------------------------------------------------------------------------ files
@pytest.mark.parametrize("path", ["../outside/secret.txt", "../../../../etc/passwd", "./../outside/secret.txt"])
def test_path_traversal(timed, root, path):
    result = timed(lambda: files("read_file", root, path=path), within_s=0.1)
    assert result["error"] == "outside_root"


def test_symlink_escape(timed, root):
    os.symlink(root.parent / "outside" / "secret.txt", root / "innocent.txt")
    os.symlink(root.parent / "outside", root / "docs")

    def attack():
        return [files("read_file", root, path="innocent.txt"), files("read_file", root, path="docs/secret.txt"),
                files("write_file", root, path="docs/planted.txt", content="x"),
                files("list_directory", root, path="docs"), files("search_files", root, query="password")]

    read_link, read_through, write_through, listing, search = timed(attack, within_s=0.2)
    assert {r["error"] for r in (read_link, read_through, write_through, listing)} == {"symlink_outside_root"}
    assert search["matches"] == [] and not (root.parent / "outside" / "planted.txt").exists()


@pytest.mark.parametrize("name, extra", [("read_file", {}), ("write_file", {"content": "x"})])
def test_absolute_path(timed, root, name, extra):
    target = str(root.parent / "outside" / "secret.txt")
    assert timed(lambda: files(name, root, path=target, **extra), within_s=0.1)["error"] == "absolute_path"
    assert (root.parent / "outside" / "secret.txt").read_text() == "the secret password\n"


def test_fifo_cannot_block_a_read(timed, root):
    os.mkfifo(root / "pipe")  # opening it for reading would wait forever for a writer
    assert timed(lambda: files("read_file", root, path="pipe"), within_s=0.1)["error"] == "special_file"


def test_deep_folders_count_against_the_quota(timed, root):
    deep = "/".join(["d"] * 245) + "/f.txt"  # 246 new folders per call, within the 500-character path limit

    def attack():
        return [files("write_file", root, path=f"{n}/{deep}", content="") for n in range(6)]

    results = timed(attack, within_s=5)
    entries = sum(len(folders) + len(names) for _, folders, names in os.walk(root))
    assert entries <= 1_000 and results[-1]["error"] == "quota_exceeded"  # the default max_root_entries


# ------------------------------------------------------------------------------------------ code
def test_infinite_loop(timed):
    result = timed(lambda: code("run_python", "while True:\n    pass", timeout_s=0.3), within_s=1.0)
    assert result["error"] == "timeout"


def test_infinite_loop_in_bash(timed):
    result = timed(lambda: code("run_bash", "while :; do :; done", timeout_s=0.3), within_s=1.0)
    assert result["error"] == "timeout"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="checks for survivors in /proc")
def test_fork_attempt(timed):
    source = "import os, time\nprint(os.getcwd(), flush=True)\nfor _ in range(8):\n    os.fork()\ntime.sleep(1)"
    result = timed(lambda: code("run_python", source, max_processes=16, timeout_s=3), within_s=2.5)
    # root ignores RLIMIT_NPROC, so the group watch stops it; for other users fork() fails
    assert result.get("error") == "process_limit" or "Resource temporarily unavailable" in result["stderr"]
    assert running_in(result["stdout"].split()[0]) == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the process-group watch reads /proc")
def test_fork_bomb(timed):
    result = timed(lambda: code("run_bash", "pwd\n:(){ :|: ; };:", max_processes=16, timeout_s=3), within_s=2.5)
    assert result["ok"] is False and result["error"] in ("process_limit", "timeout")
    assert running_in(result["stdout"].strip()) == []


def test_huge_output(timed):
    result = timed(lambda: code("run_python", "while True:\n    print('x' * 65536)", max_output_bytes=10_000),
                   within_s=1.5)
    assert result["error"] == "output_limit" and len(result["stdout"]) == 10_000


def test_memory_bomb(timed):
    source = "blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))"
    result = timed(lambda: code("run_python", source, memory_mb=128), within_s=2)
    assert result["ok"] and result["exit_code"] != 0 and "MemoryError" in result["stderr"]


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_memory_bomb_in_node(timed):
    source = "const blocks = []; for (;;) blocks.push(new Array(1e6).fill(1.5));"
    result = timed(lambda: code("run_javascript", source, memory_mb=128), within_s=3)
    assert result["ok"] and result["exit_code"] != 0


@pytest.mark.parametrize("name, source", [
    ("run_python", "import os\nprint(os.environ.get('SECRET_TOKEN'), dict(os.environ))"),
    ("run_bash", "env; cat /proc/self/environ"),
    pytest.param("run_javascript", "console.log(JSON.stringify(process.env))",
                 marks=pytest.mark.skipif(NODE is None, reason="Node.js is not installed")),
])
def test_reading_env_secrets(timed, monkeypatch, name, source):
    monkeypatch.setenv("SECRET_TOKEN", "sk-test-must-not-leak")
    result = timed(lambda: code(name, source), within_s=3)
    assert result["ok"] and "SECRET_TOKEN" not in result["stdout"] and "sk-test" not in result["stdout"]
    assert os.environ["SECRET_TOKEN"] == "sk-test-must-not-leak"  # the parent still has it


# A toolkit process started with a key in its environment (as `OPENAI_API_KEY=... python run.py` does), whose
# program looks for the key in the environment and memory of its parent and of the toolkit process.
TOOLKIT = """import json, os, sys
from tool_sets.code import TOOL_SET
program = sys.argv[1].replace("TOOLKIT_PID", str(os.getpid()))
print(json.dumps(TOOL_SET.registry().execute("run_python", {"code": program})))"""
SNOOP = """import os
for pid in (os.getppid(), TOOLKIT_PID):
    try:
        print("environ", open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace"))
    except OSError as error:
        print("environ refused:", error)
    try:
        open(f"/proc/{pid}/mem", "rb").close()
        print("memory readable")
    except OSError as error:
        print("memory refused:", error)"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the attack reads /proc")
def test_reading_the_toolkits_environment_and_memory(timed):
    if not isolation().available:
        pytest.skip(f"only Linux namespaces keep a program out of /proc/PID of its parent: {isolation().reason}")
    toolkit = subprocess.run([sys.executable, "-c", TOOLKIT, SNOOP], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "OPENAI_API_KEY": "sk-test-must-not-leak"})
    result = json.loads(toolkit.stdout.splitlines()[-1])
    attempts = [line.split()[0] for line in result["stdout"].splitlines()]
    assert result["ok"] and attempts == ["environ", "memory"] * 2, result
    assert "sk-test-must-not-leak" not in result["stdout"] and "memory readable" not in result["stdout"]


# ------------------------------------------------------------------------------------------ SQL
@pytest.fixture
def library(tmp_path: Path) -> Path:
    copy = tmp_path / "library.db"
    shutil.copyfile(sample_database(), copy)
    return copy


@pytest.mark.parametrize("sql", [
    "INSERT INTO books (title) VALUES ('x')",
    "UPDATE books SET copies = 0",
    "DELETE FROM loans",
    "DROP TABLE members",
    "CREATE TABLE planted (x)",
    "WITH doomed AS (SELECT 1) DELETE FROM loans",
    "PRAGMA journal_mode = DELETE",
    "ATTACH DATABASE 'planted.db' AS planted",
    "VACUUM INTO 'copy.db'",
    "SELECT 1; DELETE FROM loans",
])
def test_write_through_sql(timed, library, sql, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    before = hashlib.sha256(library.read_bytes()).hexdigest()
    result = timed(lambda: DATABASE.registry().execute("query_database", {"sql": sql}, database=library),
                   within_s=0.2)
    assert result["ok"] is False and result["error"] in ("not_select", "not_allowed", "one_statement_only")
    assert hashlib.sha256(library.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["library.db"]


@pytest.mark.parametrize("sql", [
    "SELECT printf('%.*c', 2147483647, 'x')",
    "SELECT length(printf('%.*c', 2147483647, 'x')) FROM books LIMIT 3",
    "SELECT length(format('%2147483647d', 1))",
])
def test_printf_huge_string(timed, sql):
    result = timed(lambda: DATABASE.registry().execute("query_database", {"sql": sql}), within_s=0.2)
    assert result["error"] == "not_allowed"


def test_printf_huge_string_in_finance(timed):
    sql = "SELECT length(printf('%.*c', 2147483647, 'x')) FROM transactions LIMIT 3"
    result = timed(lambda: FINANCE.registry().execute("query_transactions", {"sql": sql}), within_s=0.5)
    assert result["error"] == "not_allowed"


@pytest.mark.parametrize("registry, name", [(DATABASE, "query_database"), (FINANCE, "query_transactions")])
def test_fts3_tokenizer(timed, registry, name):
    result = timed(lambda: registry.registry().execute(name, {"sql": "SELECT hex(fts3_tokenizer('simple'))"}),
                   within_s=0.5)
    assert result["error"] == "not_allowed" and "rows" not in result


@pytest.fixture
def sql_workers_booted():
    """Queries run in worker processes: wait for one to boot, so that what is timed is the query."""
    assert DATABASE.registry().execute("query_database", {"sql": "SELECT 1"})["ok"]


@pytest.mark.parametrize("sql", [
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
    "WITH RECURSIVE s(x) AS (SELECT 'a' UNION ALL SELECT x || 'a' FROM s) SELECT max(length(x)) FROM s",
])
def test_recursive_cte(timed, sql, sql_workers_booted):
    result = timed(lambda: DATABASE.registry().execute("query_database", {"sql": sql}, timeout_s=0.3),
                   within_s=0.3 * 1.1 + 0.05)
    assert result["error"] in ("timeout", "sql_error")  # the growing string may hit the size limit first


def test_cross_join_sort(timed, sql_workers_booted):
    sql = "SELECT a.title FROM books a, books b, books c, books d, loans e ORDER BY random()"
    result = timed(lambda: DATABASE.registry().execute("query_database", {"sql": sql}, timeout_s=0.3),
                   within_s=0.3 * 1.1 + 0.05)
    assert result["error"] == "timeout"


# One function call is one step of SQLite's virtual machine, so the progress handler that stops a query cannot
# stop it: one GLOB of a 98,000-character string against a 48,000-character pattern runs about 20 s, and 160
# instr() calls on 70,000 and 28,000 characters run seconds.
LONG_FUNCTION_CALLS = {
    "glob": "SELECT (h GLOB p)+(h GLOB p) FROM (SELECT replace(hex(zeroblob(49000)),'0','a') h, "
            "'*'||replace(hex(zeroblob(16000)),'00','[a]')||'b' p)",
    "instr": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 160) SELECT sum(instr(h, p)) "
             "FROM n, (SELECT replace(hex(zeroblob(35000)), '0', 'a') h, replace(hex(zeroblob(14000)), '0', 'a') || "
             "'b' p)",
}


@pytest.mark.parametrize("sql", LONG_FUNCTION_CALLS.values(), ids=LONG_FUNCTION_CALLS)
@pytest.mark.parametrize("registry, name", [(DATABASE, "query_database"), (FINANCE, "query_transactions")])
def test_long_function_calls(timed, registry, name, sql, sql_workers_booted):
    result = timed(lambda: registry.registry().execute(name, {"sql": sql}, timeout_s=0.5), within_s=0.5 * 1.1)
    assert result["ok"] is False and result["error"] == "timeout"


# ------------------------------------------------------------------------------------------ arguments
@pytest.mark.parametrize("registry, name, arguments, field", [
    (CODE, "run_python", {"code": "x" * 20_001}, "code"),
    (FILES, "write_file", {"path": "a.txt", "content": "x" * 100_001}, "content"),
    (FILES, "read_file", {"path": "a/" * 300}, "path"),
    (DATABASE, "query_database", {"sql": "SELECT 1" + " " * 2000}, "sql"),
    (DATABASE, "describe_table", {"table": "t" * 129}, "table"),
])
def test_oversized_arguments(timed, registry, name, arguments, field):
    def attack():
        with pytest.raises(ToolArgumentError, match=field):
            registry.registry().execute(name, arguments)
    timed(attack, within_s=0.1)


def test_sample_database_is_untouched_by_every_attack():
    with closing(sqlite3.connect(f"{sample_database().as_uri()}?mode=ro", uri=True)) as db:
        assert db.execute("SELECT count(*) FROM loans").fetchone() == (18,)
        assert db.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").fetchone() == (4,)
