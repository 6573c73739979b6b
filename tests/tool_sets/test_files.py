"""The files tool set: reads, writes, listings and searches inside one root, the refusals that keep them there,
and the limits that bound them."""

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tool_selection import ToolArgumentError
from tool_selection.tool_failures import is_failure
from tool_sets._sandbox.paths import PathRefused, resolve_inside
from tool_sets.files import TOOL_SET, ReadFile, WriteFile, default_root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the root, with a secret the tools must never reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("the secret password\n")
    return folder


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    folder = tmp_path / "root"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "todo.txt").write_text("buy milk\nTODO: fix the bug\n")
    (folder / "readme.md").write_text("# Project\nSee notes/todo.txt for the todo list.\n")
    (folder / "image.bin").write_bytes(b"\x89PNG\x00\x01password")
    os.symlink(outside / "secret.txt", folder / "leak.txt")
    os.symlink(outside, folder / "escape")
    os.symlink(folder / "notes" / "todo.txt", folder / "shortcut.txt")
    os.mkfifo(folder / "pipe")
    return folder


def run(root: Path, name: str, **arguments):
    result = TOOL_SET.registry().execute(name, arguments, root=root)
    assert json.loads(json.dumps(result)) == result
    return result


def test_the_set_holds_four_file_tools():
    assert TOOL_SET.name == "files"
    assert TOOL_SET.names() == ["read_file", "write_file", "list_directory", "search_files"]
    assert {t.category for t in TOOL_SET} == {"files"}
    assert "root" not in ReadFile.input_schema()["properties"]


# ------------------------------------------------------------------------------------------ reading and writing
def test_read_returns_the_text(root):
    assert run(root, "read_file", path="notes/todo.txt") == {
        "ok": True, "path": "notes/todo.txt", "content": "buy milk\nTODO: fix the bug\n", "size": 27,
        "truncated": False}


def test_read_follows_a_link_that_stays_inside(root):
    result = run(root, "read_file", path="shortcut.txt")
    assert result["ok"] and result["path"] == "notes/todo.txt" and "TODO" in result["content"]


def test_read_is_cut_at_its_byte_limit_without_splitting_a_character(root):
    (root / "long.txt").write_text("é" * 10)  # 20 bytes
    result = ReadFile(root=root, max_read_bytes=5).validate_and_execute(path="long.txt")
    assert result == {"ok": True, "path": "long.txt", "content": "éé", "size": 20, "truncated": True}


@pytest.mark.parametrize("path, error", [
    ("image.bin", "binary_file"),
    ("notes", "is_a_directory"),
    ("pipe", "special_file"),
    ("a\x00b", "invalid_path"),
])
def test_read_refuses_what_is_not_a_text_file(root, path, error):
    result = run(root, "read_file", path=path)
    assert is_failure(result) and result["error"] == error and result["path"] == path


def test_a_missing_file_suggests_close_names(root):
    result = run(root, "read_file", path="notes/todo.md")
    assert result["error"] == "not_found" and result["suggestions"] == ["notes/todo.txt"]


def test_write_creates_folders_then_overwrites_appends_or_refuses_to_replace(root):
    assert run(root, "write_file", path="out/a.txt", content="one\n") == {
        "ok": True, "path": "out/a.txt", "bytes_written": 4, "size": 4, "created": True}
    assert run(root, "write_file", path="out/a.txt", content="two\n", mode="append")["size"] == 8
    assert (root / "out" / "a.txt").read_text() == "one\ntwo\n"
    assert run(root, "write_file", path="out/a.txt", content="three")["created"] is False
    assert (root / "out" / "a.txt").read_text() == "three"
    refused = run(root, "write_file", path="out/a.txt", content="four", mode="create")
    assert refused["error"] == "already_exists" and (root / "out" / "a.txt").read_text() == "three"


def test_write_refuses_folders_and_paths_through_files(root):
    assert run(root, "write_file", path="notes", content="x")["error"] == "is_a_directory"
    assert run(root, "write_file", path="readme.md/x.txt", content="x")["error"] == "not_a_directory"
    assert run(root, "write_file", path="pipe", content="x")["error"] == "special_file"


def test_write_limits_file_size_and_the_whole_root(root):
    too_big = WriteFile(root=root, max_write_bytes=10).validate_and_execute(path="big.txt", content="x" * 11)
    assert too_big["error"] == "too_large" and too_big["limit_bytes"] == 10 and not (root / "big.txt").exists()
    small = WriteFile(root=root, max_write_bytes=10)
    assert small.validate_and_execute(path="grow.txt", content="x" * 6)["ok"]
    assert small.validate_and_execute(path="grow.txt", content="x" * 6, mode="append")["error"] == "too_large"
    used = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    quota = WriteFile(root=root, max_root_bytes=used + 5)
    assert quota.validate_and_execute(path="q.txt", content="x" * 5)["ok"]
    assert quota.validate_and_execute(path="q2.txt", content="x")["error"] == "quota_exceeded"
    assert quota.validate_and_execute(path="q.txt", content="y" * 5)["ok"]  # replacing frees the old bytes


def test_write_counts_files_and_the_folders_it_creates_against_the_root(root):
    tool = WriteFile(root=root, max_root_entries=12)  # the root holds 8 files, folders and links
    assert tool.validate_and_execute(path="a/b/c.txt", content="")["ok"]  # 3 new: 11
    refused = tool.validate_and_execute(path="d/e.txt", content="")  # 2 new: 13
    assert refused["error"] == "quota_exceeded" and refused["limit_entries"] == 12
    assert "12 files and folders (this write adds 2)" in refused["message"] and not (root / "d").exists()
    assert tool.validate_and_execute(path="a/b/f.txt", content="x")["ok"]  # 1 new: 12
    assert tool.validate_and_execute(path="a/b/c.txt", content="replaced")["ok"]  # none new
    assert tool.validate_and_execute(path="a/g.txt", content="")["error"] == "quota_exceeded"


def test_read_only_mode_refuses_every_write(root):
    tool = WriteFile(root=root, read_only=True)
    result = tool.validate_and_execute(path="new.txt", content="x")
    assert result["error"] == "read_only" and not (root / "new.txt").exists()
    assert ReadFile(root=root, read_only=True).validate_and_execute(path="readme.md")["ok"]


# ------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("path, error", [
    ("../outside/secret.txt", "outside_root"),
    ("notes/../../outside/secret.txt", "outside_root"),
    ("notes/../readme.md", "outside_root"),  # '..' is refused even when it would stay inside
    ("leak.txt", "symlink_outside_root"),
    ("escape/secret.txt", "symlink_outside_root"),
    ("~/secret.txt", "absolute_path"),
])
def test_paths_leading_out_are_refused_for_every_tool(root, path, error):
    for name, arguments in [("read_file", {"path": path}), ("write_file", {"path": path, "content": "pwned"}),
                            ("list_directory", {"path": path}), ("search_files", {"query": "secret", "path": path})]:
        result = run(root, name, **arguments)
        assert is_failure(result) and result["error"] == error, (name, result)
    assert (root.parent / "outside" / "secret.txt").read_text() == "the secret password\n"


def test_absolute_paths_are_refused(root, outside):
    result = run(root, "read_file", path=str(outside / "secret.txt"))
    assert result["error"] == "absolute_path" and "password" not in json.dumps(result)


def test_a_link_inside_a_path_component_is_checked(root, outside):
    os.symlink(outside, root / "notes" / "deeper")
    assert run(root, "read_file", path="notes/deeper/secret.txt")["error"] == "symlink_outside_root"
    assert run(root, "write_file", path="notes/deeper/new.txt", content="x")["error"] == "symlink_outside_root"
    assert not (outside / "new.txt").exists()


# ------------------------------------------------------------------------------------------ listing and search
def test_list_shows_kinds_and_sizes_without_following_links(root):
    result = run(root, "list_directory")
    kinds = {e["path"]: e["type"] for e in result["entries"]}
    assert kinds == {"escape": "symlink", "image.bin": "file", "leak.txt": "symlink", "notes": "directory",
                     "pipe": "other", "readme.md": "file", "shortcut.txt": "symlink"}
    recursive = run(root, "list_directory", recursive=True)
    paths = [e["path"] for e in recursive["entries"]]
    assert "notes/todo.txt" in paths and not any(p.startswith("escape/") for p in paths)
    assert {"path": "notes/todo.txt", "type": "file", "size": 27} in recursive["entries"]


def test_list_is_bounded(root):
    result = TOOL_SET.registry().execute("list_directory", {"recursive": True}, root=root, max_entries=3)
    assert result["count"] == 3 and len(result["entries"]) == 3 and result["truncated"] is True
    assert run(root, "list_directory", path="readme.md")["error"] == "not_a_directory"


def test_search_finds_lines_case_insensitively_and_skips_what_it_must(root):
    result = run(root, "search_files", query="todo")
    assert [(m["path"], m["line"]) for m in result["matches"]] == [  # each folder's files, then its folders
        ("readme.md", 2), ("shortcut.txt", 2), ("notes/todo.txt", 2)]
    assert run(root, "search_files", query="TODO", case_sensitive=True)["count"] == 2
    # the secret is reachable only through links that lead out, and image.bin is binary
    assert run(root, "search_files", query="password")["matches"] == []


def test_search_is_bounded(root):
    for i in range(5):
        (root / f"many{i}.txt").write_text("needle\n" * 3)
    registry = TOOL_SET.registry()
    capped = registry.execute("search_files", {"query": "needle"}, root=root, max_matches=4)
    assert capped["count"] == 4 and capped["truncated"] is True
    few_files = registry.execute("search_files", {"query": "needle"}, root=root, max_files_searched=2)
    assert few_files["files_searched"] == 2 and few_files["truncated"] is True and few_files["count"] == 3


# ------------------------------------------------------------------------------------------ configuration
def test_root_must_be_an_existing_directory(tmp_path):
    with pytest.raises(ValidationError, match="not an existing directory"):
        ReadFile(root=tmp_path / "missing")


def test_the_default_root_is_one_temporary_directory_shared_by_the_tools():
    assert ReadFile().root == WriteFile().root == default_root().resolve()
    assert default_root().is_dir()
    registry = TOOL_SET.registry()
    assert registry.execute("write_file", {"path": "shared.txt", "content": "hello"})["ok"]
    assert registry.execute("read_file", {"path": "shared.txt"})["content"] == "hello"


def test_oversized_arguments_are_rejected_by_the_schema(root):
    with pytest.raises(ToolArgumentError, match="content"):
        TOOL_SET.registry().execute("write_file", {"path": "a.txt", "content": "x" * 100_001}, root=root)
    with pytest.raises(ToolArgumentError, match="path"):
        TOOL_SET.registry().execute("read_file", {"path": "a" * 501}, root=root)


@pytest.mark.parametrize("path", ["a\x00b", "\ud800"])
def test_unencodable_paths_are_refused_before_touching_the_disk(root, path):
    with pytest.raises(PathRefused) as caught:
        resolve_inside(root, path)
    assert caught.value.code == "invalid_path"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.text(min_size=1, max_size=40))
def test_any_path_stays_inside_or_is_refused(root, path):
    for name, arguments in [("read_file", {"path": path}), ("list_directory", {"path": path}),
                            ("write_file", {"path": path, "content": "probe"})]:
        result = run(root, name, **arguments)
        if result["ok"]:
            assert (root / result["path"]).resolve().is_relative_to(root.resolve())
    assert (root.parent / "outside" / "secret.txt").read_text() == "the secret password\n"
    assert sorted(p.name for p in (root.parent / "outside").iterdir()) == ["secret.txt"]
