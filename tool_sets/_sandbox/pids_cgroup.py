"""A cgroup of the ``pids`` controller that caps how many tasks a sandboxed program may have at once.

``RLIMIT_NPROC`` is not enforced for root, not even inside a user namespace (the kernel skips the check for the
initial user), and a process-group watch that reads ``/proc`` is starved by a fork bomb on a small machine: it
sees the bomb only after thousands of processes. Where this process may create a cgroup below its own in a
``pids`` hierarchy (root in most containers, or a user with a delegated cgroup), the program runs in one whose
``pids.max`` makes ``fork`` fail past the limit, whoever runs it, and ``pids.events`` tells that it happened.
Elsewhere ``PidsCgroup.create`` answers None and the process count from ``/proc`` is the only bound.

The program must not be able to write its cgroup's files: as root (or the owner of a delegated cgroup) it could
raise ``pids.max`` or move itself out by writing ``cgroup.procs``. In namespaces (``namespaces.py``) every cgroup
mount is read-only to it and it can make no new one; without them, nothing stops it.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

__all__ = ["PidsCgroup"]

_MOUNTS = Path("/proc/self/mounts")
_OWN_CGROUPS = Path("/proc/self/cgroup")


class PidsCgroup:
    """One cgroup made for one run: joined by the child before ``exec``, removed when the run is over."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._procs = str(path / "cgroup.procs")

    @classmethod
    def create(cls, max_tasks: int) -> PidsCgroup | None:
        """A new cgroup allowing ``max_tasks`` tasks, or None where no ``pids`` hierarchy can be written here."""
        for parent in _own_pids_cgroups():
            path = parent / f"tool-selection-{uuid.uuid4().hex[:12]}"
            try:
                path.mkdir()
            except OSError:
                continue
            try:
                (path / "pids.max").write_text(str(max_tasks))
            except OSError:
                _remove(path)
                continue
            return cls(path)
        return None

    def join(self) -> None:
        """Move the calling process into the cgroup; for ``preexec_fn``, so the program starts inside it."""
        with open(self._procs, "w") as file:
            file.write(str(os.getpid()))

    def refused_a_task(self) -> bool:
        """Whether a ``fork`` or thread failed because the cgroup was full."""
        try:
            events = (self.path / "pids.events").read_text().split()
        except OSError:
            return False
        return "max" in events and int(events[events.index("max") + 1]) > 0

    def remove(self, within_s: float = 1.0) -> None:
        """Remove the cgroup once its killed tasks have left it (a removal that fails leaves an empty cgroup)."""
        give_up = time.monotonic() + within_s
        while not _remove(self.path) and time.monotonic() < give_up:
            time.sleep(0.005)


def _remove(path: Path) -> bool:
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _own_pids_cgroups() -> list[Path]:
    """The folders of this process's own cgroups in every mounted ``pids`` hierarchy (v1 and v2)."""
    try:
        mounts = _MOUNTS.read_text().splitlines()
        memberships = _OWN_CGROUPS.read_text().splitlines()
    except OSError:
        return []
    own = {}  # controllers ("" for v2) -> path of this process's cgroup
    for line in memberships:
        _, controllers, path = line.split(":", 2)
        own[controllers] = path.lstrip("/")
    folders = []
    for line in mounts:
        fields = line.split()
        if len(fields) < 4:
            continue
        mountpoint, kind, options = fields[1], fields[2], fields[3].split(",")
        if kind == "cgroup" and "pids" in options:
            path = next((p for c, p in own.items() if "pids" in c.split(",")), None)
        elif kind == "cgroup2" and "pids" in _read(Path(mountpoint, own.get("", ""), "cgroup.controllers")):
            path = own.get("")
        else:
            continue
        if path is not None:
            folders.append(Path(mountpoint, path))
    return folders


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
