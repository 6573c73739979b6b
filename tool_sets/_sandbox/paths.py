"""Paths confined to one root directory.

A path is relative to the root, has no ``..`` part, and every prefix of it resolves (symbolic links followed)
to a place inside the root. Files are opened by their resolved path with ``O_NOFOLLOW`` and ``O_NONBLOCK``
and checked to be regular files, so a link swapped in after the check or a FIFO cannot block or escape. This
bounds what a model's call can reach; it is no defence against another local process racing the checks.

``root_locked`` gives writers one root at a time, so that a quota check and the write it allows are one step
for every other writer of the toolkit, in this process or another.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

__all__ = ["PathRefused", "RootBusy", "inside", "open_regular", "resolve_inside", "root_locked", "walk_files"]

_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FIRST_PAUSE_S, _LONGEST_PAUSE_S = 0.0005, 0.01  # between tries of a lock another process holds
# flock() errors of file systems that cannot lock a folder (NFS emulates flock with byte-range locks, which a
# folder opened read-only cannot take)
_CANNOT_LOCK = {errno.EBADF, errno.EINVAL, errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP}
_THREAD_LOCKS: dict[tuple[int, int], threading.Lock] = {}  # (device, inode) of a root -> its lock here
_THREAD_LOCKS_GUARD = threading.Lock()


class PathRefused(Exception):
    """A path the sandbox will not touch; ``code`` says why and ``path`` is the path as given."""

    def __init__(self, code: str, message: str, path: str):
        super().__init__(message)
        self.code, self.message, self.path = code, message, path


def inside(path: Path, root: Path) -> bool:
    """Whether the resolved ``path`` is ``root`` or below it (``root`` resolved too)."""
    return path == root or path.is_relative_to(root)


def resolve_inside(root: Path, relative: str) -> Path:
    """The resolved path that ``relative`` names under the resolved ``root``; raises ``PathRefused``."""
    if "\x00" in relative:
        raise PathRefused("invalid_path", "The path contains a NUL character.", relative)
    try:
        os.fsencode(relative)
    except UnicodeEncodeError:
        raise PathRefused("invalid_path", "The path is not valid Unicode text.", relative) from None
    parts = PurePosixPath(relative).parts
    if relative.startswith(("/", "\\", "~")) or PurePosixPath(relative).is_absolute():
        raise PathRefused("absolute_path", f"{relative!r} is not relative to the sandbox root; give a path such "
                                           "as 'notes/todo.txt' ('~' is not expanded).", relative)
    if ".." in parts:
        raise PathRefused("outside_root", f"{relative!r} uses '..'; paths must stay inside the sandbox root.",
                          relative)
    for depth in range(1, len(parts) + 1):
        resolved = Path(os.path.realpath(root.joinpath(*parts[:depth])))
        if not inside(resolved, root):
            link = "/".join(parts[:depth])
            raise PathRefused("symlink_outside_root", f"{relative!r} leads outside the sandbox root through the "
                                                      f"symbolic link {link!r}.", relative)
    return Path(os.path.realpath(root.joinpath(*parts)))


def open_regular(path: Path, flags: int, relative: str, mode: int = 0o644) -> int:
    """A file descriptor for the regular file at the resolved ``path``; raises ``PathRefused`` for anything
    else (a directory, FIFO, device or socket) and ``OSError`` when it cannot be opened."""
    try:
        existing = os.lstat(path)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise _not_regular(existing.st_mode, relative)
    descriptor = os.open(path, flags | _OPEN_FLAGS, mode)
    opened = os.fstat(descriptor)
    if not stat.S_ISREG(opened.st_mode):
        os.close(descriptor)
        raise _not_regular(opened.st_mode, relative)
    return descriptor


def _not_regular(mode: int, relative: str) -> PathRefused:
    if stat.S_ISDIR(mode):
        return PathRefused("is_a_directory", f"{relative!r} is a directory, not a file.", relative)
    return PathRefused("special_file", f"{relative!r} is not a regular file (a FIFO, device, socket or link); "
                                       "only regular files can be read or written.", relative)


def walk_files(root: Path, start: Path) -> Iterator[tuple[str, Path]]:
    """``(path relative to root, resolved path)`` of every regular file under ``start``, sorted, without
    following directory links; a file link counts only when it resolves to a regular file inside ``root``."""
    for directory, subdirectories, names in os.walk(start):
        subdirectories.sort()
        for name in sorted(names):
            full = Path(directory, name)
            resolved = Path(os.path.realpath(full))
            if not inside(resolved, root):
                continue
            try:
                regular = stat.S_ISREG(os.stat(resolved).st_mode)
            except OSError:  # a dangling or looping link
                continue
            if regular:
                yield full.relative_to(root).as_posix(), resolved


class RootBusy(Exception):
    """Another writer held the root's lock for longer than the wait allowed."""


@contextmanager
def root_locked(root: Path, wait_s: float) -> Iterator[None]:
    """Hold the write lock of the directory ``root`` for the ``with`` block: first a lock per folder among this
    process's threads, then ``flock`` on the folder itself among processes. The folder is the lock, so nothing is
    created, any path to it takes the same lock, and the lock dies with the process that held it. Raises
    ``RootBusy`` when the lock stays taken for ``wait_s``, ``OSError`` when ``root`` cannot be opened."""
    deadline = time.monotonic() + wait_s
    descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        lock = _thread_lock(os.fstat(descriptor))
        if not lock.acquire(timeout=wait_s):
            raise RootBusy(f"another write to this folder has taken longer than {wait_s:g} s")
        try:
            locked = _flock(descriptor, root, deadline)
            try:
                yield
            finally:
                if locked:
                    fcntl.flock(descriptor, fcntl.LOCK_UN)
        finally:
            lock.release()
    finally:
        os.close(descriptor)


def _thread_lock(status: os.stat_result) -> threading.Lock:
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault((status.st_dev, status.st_ino), threading.Lock())


def _flock(descriptor: int, root: Path, deadline: float) -> bool:
    """Take ``flock`` on the folder, polling while another process holds it; False where the file system cannot
    lock a folder (a warning says that processes are then not kept apart)."""
    pause = _FIRST_PAUSE_S
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RootBusy("another process has been writing to this folder for too long") from None
            time.sleep(min(pause, left))
            pause = min(2 * pause, _LONGEST_PAUSE_S)
        except OSError as error:
            if error.errno not in _CANNOT_LOCK:
                raise
            warnings.warn(f"the file system of {str(root)!r} cannot lock a folder ({error.strerror}); its quotas "
                          "hold among the threads of each process, not among processes", RuntimeWarning,
                          stacklevel=4)
            return False


def _forget_thread_locks() -> None:
    """In a forked child: locks held by the parent's other threads would stay held here."""
    global _THREAD_LOCKS_GUARD
    _THREAD_LOCKS_GUARD = threading.Lock()
    _THREAD_LOCKS.clear()


os.register_at_fork(after_in_child=_forget_thread_locks)
