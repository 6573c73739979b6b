"""Run a program in a child process with bounded wall-clock time, CPU, memory, processes, file size and output.

Always: a fresh working directory, a minimal environment (no inherited API keys), stdin closed, ``setrlimit``
limits set before ``exec`` (``RLIMIT_CPU``, ``RLIMIT_AS``/``RLIMIT_DATA``, ``RLIMIT_NPROC``, ``RLIMIT_FSIZE``, no
core files), output cut at a bound, and the whole process group killed when the program exits, times out, floods
its output or starts too many processes. ``RLIMIT_NPROC`` is not enforced for root, so where a ``pids`` cgroup
can be made (``pids_cgroup.py``) the program runs in one that refuses tasks past the limit; its processes are also
counted from ``/proc`` every tick; either stops the run.

Where Linux lets this process create a user namespace and others inside it (``isolation()`` tries it once;
containers that forbid ``unshare(2)`` and kernels that restrict unprivileged user namespaces refuse), the
program also runs in its own user, mount, PID, IPC and network namespaces (``namespaces.py``): it sees no process
but its own, so it cannot read the environment or memory of this process or of any other, cannot reach the network
unless ``Limits.allow_network``, and everything it started dies with it, even a child that left the process group
with ``setsid``; the count of its processes is that of its PID namespace, which ``setsid`` does not leave. Its file
system is then read-only (cgroup files included, so it cannot raise its limits) but for one private tmpfs of
``Limits.max_total_file_bytes`` at ``/tmp``, ``/var/tmp`` and ``/dev/shm``, where it works in a copy of ``cwd``
(``namespaces.folder_inside(cwd)``): what it writes never reaches ``cwd`` or the host, and vanishes with the run.
Secrets on ``HIDDEN_PATHS`` and the sockets under ``/run`` are out of its reach; anything else its user can read,
it can read. Where namespaces are unavailable, a ``SandboxWarning`` says once that none of this holds.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tool_sets._sandbox import namespaces
from tool_sets._sandbox.pids_cgroup import PidsCgroup

__all__ = ["HIDDEN_PATHS", "Isolation", "Limits", "Outcome", "SandboxWarning", "isolation", "minimal_environment",
           "run_limited"]

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
_TICK_S = 0.02
_PROC = Path("/proc")
_LAUNCHER = Path(namespaces.__file__)
_LAUNCHER_PROCESSES = 2  # the launcher outside the PID namespace and the init inside it
_PROBE_TIMEOUT_S = 30.0

# Secrets a program cannot read even where its user can (with namespaces): a short list of the usual places, no
# boundary. Relative paths are in the home of the user running the toolkit.
HIDDEN_PATHS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssl/private", "/var/backups",
                "/etc/ssh/ssh_host_*key", ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc",
                ".git-credentials", ".pgpass", ".config/gcloud", ".config/gh", ".cache/huggingface")


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 5.0
    cpu_s: float = 5.0
    memory_bytes: int = 512 * 2**20
    max_processes: int = 32
    max_file_bytes: int = 10 * 2**20
    max_output_bytes: int = 20_000  # per stream
    limit_address_space: bool = True  # False for runtimes such as node that reserve gigabytes they never use
    allow_network: bool = False  # off: the program gets a network namespace of its own, with only loopback
    max_total_file_bytes: int = 64 * 2**20  # its folder, /tmp, /var/tmp and /dev/shm together (namespaces only)

    def __post_init__(self) -> None:
        if self.max_total_file_bytes < namespaces.MIN_TOTAL_FILE_BYTES:
            raise ValueError(f"max_total_file_bytes={self.max_total_file_bytes} is below the smallest private tmpfs "
                             f"a run can have ({namespaces.MIN_TOTAL_FILE_BYTES} bytes); give at least that")


@dataclass(frozen=True)
class Outcome:
    exit_code: int  # negative: killed by that signal
    stdout: str
    stderr: str
    duration_s: float
    stopped: str | None  # "timeout", "cpu_limit", "output_limit" or "process_limit"; None when it ended itself
    isolated: bool  # it ran in namespaces of its own (see ``isolation()``)


@dataclass(frozen=True)
class Isolation:
    """Whether programs run in namespaces of their own here, and if not, why not."""

    available: bool
    reason: str = ""


class SandboxWarning(UserWarning):
    """A protection of the sandbox that does not hold on this machine."""


@functools.cache
def isolation() -> Isolation:
    """Whether ``namespaces.py`` can isolate programs here, found once per process by trying it."""
    if not sys.platform.startswith("linux"):
        return Isolation(False, f"Linux namespaces do not exist on {sys.platform}")
    if not sys.executable:
        return Isolation(False, "the Python interpreter that would run namespaces.py is unknown (sys.executable)")
    try:
        with tempfile.TemporaryDirectory(prefix="tool-selection-probe-") as folder:
            probe = subprocess.run([*_launcher(Limits()), "--probe"], capture_output=True, text=True, cwd=folder,
                                   stdin=subprocess.DEVNULL, env=minimal_environment(Path(folder)),
                                   timeout=_PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Isolation(False, f"namespaces.py could not be run: {error}")
    if probe.returncode != 0:
        return Isolation(False, probe.stderr.strip() or f"namespaces.py --probe exited with {probe.returncode}")
    return Isolation(True)


@functools.cache
def _warn_not_isolated(reason: str) -> None:
    warnings.warn(
        f"Programs run without Linux namespaces here ({reason}): they can read the environment of this user's "
        "processes, API keys included, and reach the network; and none of the file-system protections holds: they "
        "can write wherever this user can, with no total quota, read the hidden secrets, reach daemons' sockets, "
        "and, as root, rewrite their own cgroup's limits. To isolate them, let this process create "
        "namespaces: enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, and on "
        "Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or in a container allow unshare(2) and mount(2) "
        "(a seccomp profile that permits them).",
        SandboxWarning, stacklevel=3)


def minimal_environment(home: Path) -> dict[str, str]:
    """The whole environment a child gets: nothing inherited, so no API keys or tokens."""
    return {"PATH": SAFE_PATH, "HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8"}


@functools.cache
def _hidden() -> tuple[str, ...]:
    """``HIDDEN_PATHS`` as absolute paths, patterns expanded (once: host keys do not come and go)."""
    try:
        home = Path.home()
    except RuntimeError:  # no home to be found: only the system's secrets
        home = None
    paths = []
    for path in HIDDEN_PATHS:
        if "*" in path:
            paths += sorted(str(match) for match in Path(path).parent.glob(Path(path).name))
        elif path.startswith("/") or home is not None:
            paths.append(path if path.startswith("/") else str(home / path))
    return tuple(paths)


def _launcher(limits: Limits) -> list[str]:
    """The command that sets up the namespaces for a run under ``limits``: ``--probe`` or ``--`` and the program
    follow."""
    network = ["--allow-network"] if limits.allow_network else []
    return [sys.executable, "-I", "-S", str(_LAUNCHER), *network,
            f"--max-total-file-bytes={limits.max_total_file_bytes}", *(f"--hide={path}" for path in _hidden())]


def run_limited(argv: Sequence[str], *, cwd: Path, limits: Limits) -> Outcome:
    """Run ``argv`` in ``cwd`` (also its home) under ``limits``; never raises for what the program does. With
    namespaces it runs in a copy of ``cwd`` instead, at ``namespaces.folder_inside(cwd)`` (then its home), and
    ``cwd`` is left as it was."""
    isolated = isolation().available
    home = cwd
    if isolated:
        argv = [*_launcher(limits), "--", *argv]
        home = Path(namespaces.folder_inside(str(cwd)))
    else:
        _warn_not_isolated(isolation().reason)
    most_processes = limits.max_processes + (_LAUNCHER_PROCESSES if isolated else 0)
    cgroup = PidsCgroup.create(most_processes)
    try:
        return _run(argv, (cwd, home), limits, isolated, most_processes, cgroup)
    finally:
        if cgroup is not None:
            cgroup.remove()


def _run(argv: Sequence[str], folders: tuple[Path, Path], limits: Limits, isolated: bool, most_processes: int,
         cgroup: PidsCgroup | None) -> Outcome:
    """Run with ``folders``: the directory it starts in, and the home the program sees."""
    started = time.monotonic()
    deadline = started + limits.timeout_s
    process = subprocess.Popen(
        list(argv), cwd=folders[0], env=minimal_environment(folders[1]), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
        preexec_fn=_apply(_rlimits(limits), cgroup),
    )
    output = {process.stdout: bytearray(), process.stderr: bytearray()}
    stopped, next_census = None, started
    with selectors.DefaultSelector() as selector:
        for stream in output:
            selector.register(stream, selectors.EVENT_READ)
        while stopped is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stopped = "timeout"
                break
            if selector.get_map():
                events = selector.select(min(_TICK_S, remaining))
            else:
                time.sleep(min(_TICK_S, remaining))
                events = []
            for key, _ in events:
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                kept = output[key.fileobj]
                room = limits.max_output_bytes - len(kept)
                kept += chunk[:room]
                if len(chunk) > room:
                    stopped = "output_limit"
            if stopped is not None:
                break
            if _has_exited(process.pid):
                _kill_group(process.pid)  # background children would hold the pipes open
                if not selector.get_map():
                    break
            elif time.monotonic() >= next_census:  # reading /proc costs about 1 ms, so once a tick
                next_census = time.monotonic() + _TICK_S
                if (cgroup is not None and cgroup.refused_a_task()) or (
                        _run_size(process.pid, isolated, above=most_processes) > most_processes):
                    stopped = "process_limit"
    _kill_group(process.pid, until_empty_s=1.0)
    exit_code = process.wait()
    for stream in output:
        stream.close()
    if stopped is None and exit_code == -signal.SIGXCPU:
        stopped = "cpu_limit"
    return Outcome(exit_code=exit_code, stdout=output[process.stdout].decode("utf-8", errors="replace"),
                   stderr=output[process.stderr].decode("utf-8", errors="replace"),
                   duration_s=round(time.monotonic() - started, 3), stopped=stopped, isolated=isolated)


def _rlimits(limits: Limits) -> list[tuple[int, int]]:
    cpu = max(1, math.ceil(limits.cpu_s))
    wanted = [(resource.RLIMIT_CPU, cpu), (resource.RLIMIT_DATA, limits.memory_bytes),
              (resource.RLIMIT_FSIZE, limits.max_file_bytes), (resource.RLIMIT_CORE, 0)]
    if limits.limit_address_space:
        wanted.append((resource.RLIMIT_AS, limits.memory_bytes))
    if _PROC.is_dir():  # the limit counts every task of the user, so it is set relative to what is running
        wanted.append((resource.RLIMIT_NPROC, _user_tasks() + limits.max_processes))
    return wanted


def _apply(wanted: list[tuple[int, int]], cgroup: PidsCgroup | None) -> Callable[[], None]:
    """The ``preexec_fn``: values are computed here, so the child only joins the cgroup and calls ``setrlimit``."""
    settings = []
    for limit, value in wanted:
        hard = resource.getrlimit(limit)[1]
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        top = value + 1 if limit == resource.RLIMIT_CPU else value  # SIGXCPU at the soft limit, SIGKILL after
        settings.append((limit, (value, top if hard == resource.RLIM_INFINITY else min(top, hard))))

    def apply() -> None:
        if cgroup is not None:
            try:
                cgroup.join()
            except OSError:  # the process-group watch still bounds it
                pass
        for limit, values in settings:
            resource.setrlimit(limit, values)

    return apply


def _has_exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it: its id, and so the group's, stays taken until waited for."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _kill_group(pgid: int, until_empty_s: float = 0.0) -> None:
    """SIGKILL every process in group ``pgid``; with ``until_empty_s``, repeat until none is left running (a
    killed process dies when next scheduled, so on a busy machine that takes a moment)."""
    give_up = time.monotonic() + until_empty_s
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if time.monotonic() >= give_up or _group_size(pgid, running_only=True, above=0) == 0:
            return
        time.sleep(0.005)


def _proc_stats() -> Iterator[tuple[int, list[str]]]:
    """``(owner uid, fields after the command name)`` of every process in ``/proc`` when it was listed: a list
    taken first, since a scan that follows ``/proc`` live never ends while a fork loop keeps adding processes."""
    for name in os.listdir(_PROC):
        if name.isdigit():
            try:
                owner = os.stat(f"{_PROC}/{name}").st_uid
                with open(f"{_PROC}/{name}/stat", "rb") as file:
                    yield owner, file.read().rsplit(b")", 1)[1].decode().split()
            except (OSError, IndexError):  # it ended while being read
                continue


def _user_tasks() -> int:
    """Threads of every process of this user (what ``RLIMIT_NPROC`` counts)."""
    uid = os.getuid()
    return sum(int(fields[17]) for owner, fields in _proc_stats() if owner == uid)


def _run_size(launcher: int, isolated: bool, above: int) -> int:
    """The run's processes: with namespaces, the launcher and every process of the PID namespace (``setsid`` leaves
    the process group, never the namespace), once the sandbox has mounted its /proc; else its process group."""
    if isolated:
        inside = _namespace_size(launcher, above)
        if inside is not None:
            return 1 + inside
    return _group_size(launcher, above=above)


def _namespace_size(launcher: int, above: int) -> int | None:
    """Processes in the PID namespace of ``launcher``'s children, up to the first past ``above``, listed from the
    sandbox's own /proc, reached through the launcher's root (one directory read, not one file per process of the
    machine); None before the sandbox has mounted it or after the launcher is gone."""
    sandbox_proc = f"{_PROC}/{launcher}/root/proc"
    count = 0
    try:
        if os.stat(sandbox_proc).st_dev == os.stat(_PROC).st_dev:
            return None
        with os.scandir(sandbox_proc) as entries:
            for entry in entries:
                count += entry.name.isdigit()
                if count > above:
                    break
    except OSError:
        return None
    return count


def _group_size(pgid: int, running_only: bool = False, above: int | None = None) -> int:
    """Processes in process group ``pgid``, zombies left out with ``running_only`` (0 without ``/proc``); with
    ``above``, counting stops at the first process past it."""
    if not _PROC.is_dir():
        return 0
    group, ended = str(pgid), ("Z", "X") if running_only else ()
    count = 0
    for _, fields in _proc_stats():
        count += fields[2] == group and fields[0] not in ended
        if above is not None and count > above:
            break
    return count
