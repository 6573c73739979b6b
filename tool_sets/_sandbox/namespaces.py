"""Run a program in new Linux namespaces, so that it cannot see the processes around it or reach the network.

``process.run_limited`` runs this file as a script: ``python -I -S namespaces.py [--allow-network] -- PROGRAM
ARG...`` (``--probe`` instead of a program only checks that the set-up works). It calls ``unshare(2)`` for new
user, mount, PID and IPC namespaces, and a network namespace holding only loopback unless ``--allow-network``;
maps the caller's user and group onto themselves (root onto 65534, ``nobody``, so that the program keeps no
capability); mounts a ``/proc`` that lists only the sandbox's processes; and runs the program as process 2 under
a small init (process 1) that reaps orphans and passes on how the program ended. When the init exits, the kernel
kills whatever is left in the namespace, including processes that left the process group with ``setsid``.

What holds then: the program cannot see, read (``/proc/PID/environ``, ``/proc/PID/mem``) or signal any process
outside the sandbox, has no network unless allowed, and has no capability outside its own namespaces, so it
cannot undo the ``/proc`` mount (in a nested namespace that mount is locked). What does not: it runs as the same
user on the same file system, so it can read and write whatever that user can.

Only the standard library is imported here, and nothing from this package: the script runs under ``-I -S``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

SETUP_FAILED = 125  # exit status when a namespace cannot be set up, as env(1) and unshare(1) use it

_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
_CLONE_NEWPID, _CLONE_NEWNET = 0x20000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
_PR_SET_NO_NEW_PRIVS = 38
_AF_INET, _SOCK_DGRAM, _IFREQ_BYTES = 2, 2, 40
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_NOBODY = 65534  # root's ids inside: an unprivileged id there, so that exec drops every capability


class SetupFailed(Exception):
    """A namespace step the kernel refused; the message names the step and the reason."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _libc_call(name: str, *arguments: object) -> int:
    result = getattr(_libc(), name)(*arguments)
    if result < 0:
        error = ctypes.get_errno()
        raise SetupFailed(f"{name}() failed: {os.strerror(error)} (errno {error})")
    return result


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as file:
            file.write(text)
    except OSError as error:
        raise SetupFailed(f"writing {path} failed: {error.strerror}") from None


def _enter_namespaces(allow_network: bool) -> None:
    """Unshare every namespace and map the caller's ids; the caller stays outside the new PID namespace."""
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0:  # root's supplementary groups would otherwise follow the program, unmapped but in force
        try:
            os.setgroups([])
        except PermissionError:  # root of a user namespace whose groups are fixed ("deny" in setgroups)
            pass
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC | (0 if allow_network else _CLONE_NEWNET)
    _libc_call("unshare", flags)
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid or _NOBODY} {uid} 1\n")
    _write("/proc/self/gid_map", f"{gid or _NOBODY} {gid} 1\n")


def _prepare_init(allow_network: bool) -> None:
    """In process 1: a private mount tree with a /proc of this PID namespace only, and loopback up."""
    _libc_call("mount", None, b"/", None, _MS_REC | _MS_PRIVATE, None)
    _libc_call("mount", b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)
    if not allow_network:
        _loopback_up()


def _loopback_up() -> None:
    """Bring up ``lo`` so that programs can still talk to themselves over 127.0.0.1 (through libc, which spares
    importing ``socket``: a third of the launcher's start-up)."""
    descriptor = _libc_call("socket", _AF_INET, _SOCK_DGRAM, 0)
    try:
        request = ctypes.create_string_buffer(b"lo", _IFREQ_BYTES)  # struct ifreq: name, then the flags (short)
        _libc_call("ioctl", descriptor, _SIOCGIFFLAGS, request)
        flags = int.from_bytes(request.raw[16:18], sys.byteorder) | _IFF_UP
        request[16:18] = flags.to_bytes(2, sys.byteorder)
        _libc_call("ioctl", descriptor, _SIOCSIFFLAGS, request)
    finally:
        os.close(descriptor)


def _exec_program(argv: list[str]) -> None:
    """In process 2: no way to gain privileges, default signal handling (Python ignores SIGPIPE and SIGXFSZ,
    and exec keeps ignored signals ignored), then the program."""
    _libc_call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        print(f"{argv[0]}: {error.strerror}", file=sys.stderr)
        os._exit(127 if isinstance(error, FileNotFoundError) else 126)


def _init(argv: list[str] | None, allow_network: bool, report_fd: int) -> None:
    """Process 1 of the new PID namespace: set up, start the program, reap until it ends, report its status."""
    try:
        _prepare_init(allow_network)
        program = os.fork()
    except (SetupFailed, OSError) as error:
        print(f"namespaces: {error}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    if program == 0:
        if argv is None:  # --probe: the set-up worked if this is process 2 and sees no process outside
            visible = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
            if os.getpid() == 2 and visible == [1, 2]:
                os._exit(0)
            print(f"namespaces: the probe runs as process {os.getpid()} and sees {visible} in /proc",
                  file=sys.stderr)
            os._exit(SETUP_FAILED)
        _exec_program(argv)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == program:
            os.write(report_fd, str(os.waitstatus_to_exitcode(status)).encode())
            os._exit(0)


def main(arguments: list[str]) -> None:
    split = arguments.index("--") if "--" in arguments else len(arguments)
    options, argv = arguments[:split], arguments[split + 1:]
    allow_network, probe = "--allow-network" in options, "--probe" in options
    if set(options) - {"--allow-network", "--probe"} or probe == bool(argv):
        print("usage: namespaces.py [--allow-network] (--probe | -- PROGRAM ARG...)", file=sys.stderr)
        os._exit(2)
    try:
        _enter_namespaces(allow_network)
    except SetupFailed as error:
        print(f"namespaces: {error}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    report_read, report_write = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(report_read)
        _init(None if probe else argv, allow_network, report_write)
    os.close(report_write)
    _, status = os.waitpid(init, 0)
    report = os.read(report_read, 32)
    code = int(report) if report else os.waitstatus_to_exitcode(status)
    if code < 0:  # the program was killed by a signal: end the same way, so the caller sees that signal
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
