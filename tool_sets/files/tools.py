"""The file tools: read, write, list and search text files inside one root directory.

Every path is checked by ``tool_sets._sandbox.paths``: relative to the root, no ``..``, no symbolic link that
leads out, only regular files. Reads, writes, listings and searches are bounded by the tool's configuration.
A write holds the root's lock (``root_locked``) from its quota check to its last byte, so the quotas hold for
writers in many threads and processes at once.
"""

from __future__ import annotations

import codecs
import difflib
import os
import stat
import tempfile
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from tool_selection import BaseTool, register_tool
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets._sandbox.paths import PathRefused, RootBusy, open_regular, resolve_inside, root_locked, walk_files

__all__ = ["TOOLS", "FilesTool", "ListDirectory", "ReadFile", "SearchFiles", "WriteFile", "default_root"]

MAX_CONTENT_CHARS = 100_000
LOCK_WAIT_S = 10.0  # the longest a write waits for the others to the same folder
_LINE_CHARS = 200


@cache
def _default_directory() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="tool-selection-files-")


def default_root() -> Path:
    """One temporary directory per process, created on first use and removed when the interpreter exits."""
    return Path(_default_directory().name)


def _path(purpose: str, default: str | None = None) -> Any:
    extra = {} if default is None else {"default": default}
    return Field(**extra, min_length=1, max_length=500,
                 description=f"{purpose} Relative to the working folder, e.g. 'notes/todo.txt'.")


class FilesTool(BaseTool, abstract=True):
    """Base of the file tools: the root they are confined to and their limits."""

    category = "files"
    root: Path = Field(default_factory=default_root, exclude=True,
                       description="The directory the tools work in; nothing outside it is reachable. Default: "
                                   "one temporary directory per process (default_root()).")
    read_only: bool = Field(default=False, description="Refuse every write.")
    max_read_bytes: int = Field(default=100_000, ge=1, description="Most bytes read from one file.")
    max_write_bytes: int = Field(default=100_000, ge=1, description="Largest file a write may leave behind.")
    max_root_bytes: int = Field(default=10_000_000, ge=1, description="Most bytes all files under root may hold.")
    max_root_entries: int = Field(default=1_000, ge=1, description="Most files and folders root may hold, at any "
                                                                  "depth (a write's new folders count too).")
    max_entries: int = Field(default=200, ge=1, description="Most entries one listing returns.")
    max_matches: int = Field(default=50, ge=1, description="Most matching lines one search returns.")
    max_files_searched: int = Field(default=1000, ge=1, description="Most files one search reads.")

    @field_validator("root")
    @classmethod
    def _existing_directory(cls, root: Path) -> Path:
        resolved = Path(os.path.realpath(root))
        if not resolved.is_dir():
            raise ValueError(f"root {str(root)!r} is not an existing directory; create it or pass another one")
        return resolved

    def _resolve(self, relative: str) -> Path:
        return resolve_inside(self.root, relative)

    def _relative(self, resolved: Path) -> str:
        return resolved.relative_to(self.root).as_posix() or "."

    def _not_found(self, relative: str, resolved: Path) -> dict[str, Any]:
        parent = resolved.parent
        try:
            siblings = sorted(os.listdir(parent))
        except OSError:
            siblings = []
        close = difflib.get_close_matches(resolved.name, siblings, n=3)
        prefix = "" if parent == self.root else f"{self._relative(parent)}/"
        return tool_failure("not_found", f"{relative!r} does not exist.", suggestions=[prefix + c for c in close],
                            path=relative)


def _refused(refusal: PathRefused) -> dict[str, Any]:
    return tool_failure(refusal.code, refusal.message, path=refusal.path)


def _os_error(error: OSError, relative: str) -> dict[str, Any]:
    return tool_failure("os_error", f"{relative!r}: {error.strerror or error}.", path=relative)


@register_tool
class ReadFile(FilesTool):
    NAME = "read_file"
    description = ("Read a text file from the working folder and return its content (the start of it when the "
                   "file is large). To find which file holds some text use search_files.")

    class Arguments(StrictArguments):
        path: str = _path("The file to read.")

    def execute(self, path: str) -> dict[str, Any]:
        try:
            resolved = self._resolve(path)
            descriptor = open_regular(resolved, os.O_RDONLY, path)
        except PathRefused as refusal:
            return _refused(refusal)
        except FileNotFoundError:
            return self._not_found(path, resolved)
        except OSError as error:
            return _os_error(error, path)
        with os.fdopen(descriptor, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            data = file.read(self.max_read_bytes)
        if b"\x00" in data:
            return tool_failure("binary_file", f"{path!r} is a binary file; only text files can be read.", path=path)
        truncated = size > len(data)
        content = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=not truncated)
        return {"ok": True, "path": self._relative(resolved), "content": content, "size": size,
                "truncated": truncated}


@register_tool
class WriteFile(FilesTool):
    NAME = "write_file"
    description = ("Write text to a file in the working folder, creating it and its folders if needed; replaces "
                   "the file's content unless mode is 'append' (add to the end) or 'create' (only a new file).")

    class Arguments(StrictArguments):
        path: str = _path("The file to write.")
        content: str = Field(max_length=MAX_CONTENT_CHARS, description="The text to write.")
        mode: Literal["overwrite", "append", "create"] = Field(
            default="overwrite", description="'overwrite' replaces the file, 'append' adds to its end, 'create' "
                                             "fails if the file exists.")

    def execute(self, path: str, content: str, mode: str) -> dict[str, Any]:
        if self.read_only:
            return tool_failure("read_only", "The working folder is read-only here; files can be read, not "
                                             "written.", path=path)
        data = content.encode("utf-8")
        try:
            resolved = self._resolve(path)
        except PathRefused as refusal:
            return _refused(refusal)
        if resolved.is_dir():
            return tool_failure("is_a_directory", f"{path!r} is a folder; name a file.", path=path)
        try:
            with root_locked(self.root, LOCK_WAIT_S):  # the quota check and the write as one step
                return self._over_quota(path, resolved, len(data), mode) or self._write(path, resolved, data, mode)
        except RootBusy as busy:
            return tool_failure("busy", f"The working folder is busy: {busy}; try again.", path=path)
        except OSError as error:  # the root itself could not be opened (removed meanwhile)
            return _os_error(error, path)

    def _over_quota(self, path: str, resolved: Path, size: int, mode: str) -> dict[str, Any] | None:
        """The failure when writing ``size`` bytes to ``resolved`` would pass a limit, else None."""
        existing = resolved.stat().st_size if resolved.is_file() else 0
        final_size = existing + size if mode == "append" else size
        if final_size > self.max_write_bytes:
            return tool_failure("too_large", f"The file would hold {final_size:,} bytes; at most "
                                             f"{self.max_write_bytes:,} are allowed.", path=path,
                                limit_bytes=self.max_write_bytes)
        used_bytes, used_entries = _usage(self.root)
        if used_bytes - existing + final_size > self.max_root_bytes:
            return tool_failure("quota_exceeded", f"The working folder would hold more than {self.max_root_bytes:,} "
                                                  "bytes; shorten files first.", path=path,
                                limit_bytes=self.max_root_bytes)
        new_entries = _missing_folders(self.root, resolved.parent) + (not resolved.exists())
        if used_entries + new_entries > self.max_root_entries:
            return tool_failure("quota_exceeded", f"The working folder would hold more than {self.max_root_entries:,} "
                                                  f"files and folders (this write adds {new_entries}); write into "
                                                  "existing files and folders instead.", path=path,
                                limit_entries=self.max_root_entries)
        return None

    def _write(self, path: str, resolved: Path, data: bytes, mode: str) -> dict[str, Any]:
        created = not resolved.exists()
        flags = os.O_WRONLY | os.O_CREAT | {"overwrite": os.O_TRUNC, "append": os.O_APPEND, "create": os.O_EXCL}[mode]
        try:
            resolved.parent.mkdir(parents=True, exist_ok=True)
            descriptor = open_regular(resolved, flags, path)
        except PathRefused as refusal:
            return _refused(refusal)
        except FileExistsError:
            if resolved.exists():
                return tool_failure("already_exists", f"{path!r} already exists; use mode 'overwrite' or "
                                                      "'append'.", path=path)
            return tool_failure("not_a_directory", f"A part of {path!r} is a file, not a folder.", path=path)
        except OSError as error:
            return _os_error(error, path)
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            size = os.fstat(file.fileno()).st_size
        return {"ok": True, "path": self._relative(resolved), "bytes_written": len(data), "size": size,
                "created": created}


def _usage(root: Path) -> tuple[int, int]:
    """``(bytes of the regular files, number of files and folders)`` under ``root``, links not followed."""
    total, entries = 0, 0
    for directory, folders, names in os.walk(root):
        entries += len(folders) + len(names)
        for name in names:
            try:
                status = os.lstat(os.path.join(directory, name))
            except FileNotFoundError:  # removed meanwhile
                continue
            total += status.st_size if stat.S_ISREG(status.st_mode) else 0
    return total, entries


def _missing_folders(root: Path, folder: Path) -> int:
    """How many folders a write must create for ``folder`` (resolved, inside ``root``) to exist."""
    missing = 0
    while folder != root and not os.path.lexists(folder):
        missing += 1
        folder = folder.parent
    return missing


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    return "file" if stat.S_ISREG(mode) else "other"


@register_tool
class ListDirectory(FilesTool):
    NAME = "list_directory"
    description = ("List the files and folders in a folder of the working folder (names, kinds and sizes); "
                   "recursive lists everything below it.")

    class Arguments(StrictArguments):
        path: str = _path("The folder to list; '.' is the working folder.", default=".")
        recursive: bool = Field(default=False, description="Also list the contents of sub-folders.")

    def execute(self, path: str, recursive: bool) -> dict[str, Any]:
        try:
            resolved = self._resolve(path)
            if not resolved.is_dir():
                if resolved.exists():
                    return tool_failure("not_a_directory", f"{path!r} is a file; use read_file.", path=path)
                return self._not_found(path, resolved)
            entries, truncated = [], False
            for directory, subdirectories, names in os.walk(resolved):
                subdirectories.sort()
                for name in sorted(subdirectories + names):
                    if len(entries) == self.max_entries:
                        truncated = True
                        break
                    full = Path(directory, name)
                    status = os.lstat(full)
                    entry = {"path": full.relative_to(self.root).as_posix(), "type": _kind(status.st_mode)}
                    if stat.S_ISREG(status.st_mode):
                        entry["size"] = status.st_size
                    entries.append(entry)
                if truncated or not recursive:
                    break
        except PathRefused as refusal:
            return _refused(refusal)
        except OSError as error:
            return _os_error(error, path)
        return {"ok": True, "path": self._relative(resolved), "entries": entries, "count": len(entries),
                "truncated": truncated}


@register_tool
class SearchFiles(FilesTool):
    NAME = "search_files"
    description = ("Search the text files of the working folder for lines containing a piece of text; returns "
                   "each matching file, line number and line. Plain text, not a regular expression.")

    class Arguments(StrictArguments):
        query: str = Field(min_length=1, max_length=200, description="The text to look for, e.g. 'TODO'.")
        path: str = _path("The folder to search; '.' is the whole working folder.", default=".")
        case_sensitive: bool = Field(default=False, description="Match upper and lower case exactly.")

    def execute(self, query: str, path: str, case_sensitive: bool) -> dict[str, Any]:
        fold = (lambda text: text) if case_sensitive else str.casefold
        needle = fold(query)
        matches, files_searched, truncated = [], 0, False
        try:
            start = self._resolve(path)
            if not start.is_dir():
                return tool_failure("not_a_directory", f"{path!r} is not a folder; give a folder to search.",
                                    path=path)
            for relative, resolved in walk_files(self.root, start):
                if files_searched == self.max_files_searched:
                    truncated = True
                    break
                files_searched += 1
                text = self._text_of(resolved, relative)
                for number, line in enumerate((text or "").splitlines(), start=1):
                    if needle in fold(line):
                        matches.append({"path": relative, "line": number, "text": line[:_LINE_CHARS]})
                        if len(matches) == self.max_matches:
                            break
                if len(matches) == self.max_matches:
                    truncated = True
                    break
        except PathRefused as refusal:
            return _refused(refusal)
        except OSError as error:
            return _os_error(error, path)
        return {"ok": True, "query": query, "matches": matches, "count": len(matches),
                "files_searched": files_searched, "truncated": truncated}

    def _text_of(self, resolved: Path, relative: str) -> str | None:
        """The start of a text file (``max_read_bytes``), or None for a binary or unreadable one."""
        try:
            with os.fdopen(open_regular(resolved, os.O_RDONLY, relative), "rb") as file:
                data = file.read(self.max_read_bytes)
        except (PathRefused, OSError):
            return None
        return None if b"\x00" in data else data.decode("utf-8", errors="replace")


TOOLS = (ReadFile, WriteFile, ListDirectory, SearchFiles)
