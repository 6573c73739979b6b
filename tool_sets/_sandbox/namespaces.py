"""Run a program in new Linux namespaces, so that it cannot see the processes around it, reach the network, change
its limits or write to the host's file system.

``process.run_limited`` runs this file as a script: ``python -I -S namespaces.py [--allow-network]
--max-total-file-bytes=N [--hide=PATH]... -- PROGRAM ARG...`` (``--probe`` instead of a program only checks that
the set-up works). It calls ``unshare(2)`` for new user, mount, PID and IPC namespaces, and a network namespace
holding only loopback unless ``--allow-network``; maps the caller's user and group onto themselves (root onto 65534,
``nobody``, so that the program keeps no capability); and runs the program as process 2 under a small init
(process 1) that reaps orphans and passes on how the program ended. When the init exits, the kernel kills whatever
is left in the namespace, including processes that left the process group with ``setsid``.

Before the program starts, the init builds its file system in the new mount namespace:

- a ``/proc`` that lists only the sandbox's processes, and no user namespaces allowed in the sandbox's own
  (``/proc/sys/user/max_user_namespaces`` = 0), so the program can never hold a capability in any namespace;
- every ``--hide`` path covered (a file by ``/dev/null``, which then cannot be opened; a folder by an empty one),
  and an empty ``/run`` (and ``/var/run`` where it is a folder of its own), so that daemons' sockets there cannot be
  reached by path (``/etc/resolv.conf`` is kept when it points into ``/run``);
- then every mount read-only, ``nosuid`` and ``nodev`` (``mount_setattr(2)`` with ``AT_RECURSIVE``; before Linux
  5.12, one bind remount per mount): the host's files, cgroups, ``/sys`` and ``/proc/sys`` cannot be written and no
  device node can be opened, but for ``/dev/null``, ``zero``, ``full``, ``random``, ``urandom`` and ``tty``;
- one private tmpfs of ``--max-total-file-bytes`` at ``/tmp``, also at ``/var/tmp`` and ``/dev/shm``, that holds a
  copy of the caller's folder at ``folder_inside(folder)``, the program's working directory: everything the program
  writes lands there, within one total, and vanishes with the namespace.

The program has no capability in its namespaces, so it cannot undo a mount (in a nested namespace the mounts would
be locked, and it cannot make one). What does not hold: the program's files are still those of the caller's user
(root outside when the toolkit runs as root), so it can read whatever that user can outside the hidden paths, and
connect to a Unix socket it can reach by path outside ``/run``, ``/var/run``, ``/tmp``, ``/var/tmp`` and
``/dev/shm`` (a read-only mount does not stop ``connect()``).

Only the standard library is imported here, and nothing from this package: the script runs under ``-I -S``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import stat
import sys

SETUP_FAILED = 125  # exit status when a namespace cannot be set up, as env(1) and unshare(1) use it
SCRATCH = "/tmp"  # where the private tmpfs lies in the sandbox
MIN_TOTAL_FILE_BYTES = 2**16  # a tmpfs of size 0 would be unbounded

_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
_CLONE_NEWPID, _CLONE_NEWNET = 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x1, 0x2, 0x4, 0x8  # also MOUNT_ATTR_* and statvfs's ST_*
_MS_REMOUNT, _MS_NOSYMFOLLOW, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x20, 0x100, 0x1000, 0x4000, 0x40000
_ST_NOSYMFOLLOW = 0x2000
_AT_FDCWD, _AT_RECURSIVE = -100, 0x8000
_LOCKED_DOWN = _MS_RDONLY | _MS_NOSUID | _MS_NODEV
_PR_SET_NO_NEW_PRIVS = 38
_AF_INET, _SOCK_DGRAM, _IFREQ_BYTES = 2, 2, 40
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_NOBODY = 65534  # root's ids inside: an unprivileged id there, so that exec drops every capability
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
_SOCKET_FOLDERS = ("/run", "/var/run")
_RESOLVER = "/etc/resolv.conf"  # often a link into /run (systemd-resolved)
_SCRATCH_PLACES = ("/var/tmp", "/dev/shm")  # bound to the tmpfs at SCRATCH: one total for all
_USAGE = ("usage: namespaces.py [--allow-network] --max-total-file-bytes=N [--hide=PATH]... "
          "(--probe | -- PROGRAM ARG...)")


class SetupFailed(Exception):
    """A namespace step the kernel refused; the message names the step and the reason."""


class Options:
    """What the command line asks for."""

    def __init__(self) -> None:
        self.allow_network, self.probe = False, False
        self.total_file_bytes: int | None = None
        self.hidden: list[str] = []


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def folder_inside(folder: str) -> str:
    """Where the program finds its copy of ``folder`` (and works): in its private ``/tmp``, under the same name."""
    return f"{SCRATCH}/{os.path.basename(os.path.normpath(folder))}"


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _libc_call(name: str, *arguments: object) -> int:
    result = getattr(_libc(), name)(*arguments)
    if result < 0:
        error = ctypes.get_errno()
        raise SetupFailed(f"{name}() failed: {os.strerror(error)} (errno {error})")
    return result


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    encoded = [None if text is None else os.fsencode(text) for text in (source, target, kind, data)]
    if _libc().mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]) < 0:
        error = ctypes.get_errno()
        raise SetupFailed(f"mounting {kind or source} on {target} failed: {os.strerror(error)} (errno {error})")


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


def _prepare_init(options: Options) -> None:
    """In process 1: the sandbox's /proc, no nested user namespaces, loopback up, then its file system."""
    _libc_call("mount", None, b"/", None, _MS_REC | _MS_PRIVATE, None)
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    _write("/proc/sys/user/max_user_namespaces", "0")  # this namespace's own limit, which the program cannot raise
    if not options.allow_network:
        _loopback_up()
    _hide(options.hidden)
    _cover_socket_folders()
    _set_mount_flags("/", add=_LOCKED_DOWN, recursive=True)
    for device in _DEVICES:
        if os.path.exists(device):
            _mount(device, device, None, _MS_BIND)
            _set_mount_flags(device, remove=_MS_NODEV)
    _private_scratch(options.total_file_bytes)


def _hide(paths: list[str]) -> None:
    """Cover each existing path: a folder by an empty tmpfs, anything else by /dev/null (unopenable once nodev)."""
    for path in paths:
        try:
            folder = stat.S_ISDIR(os.stat(path).st_mode)
        except OSError:  # not there, or not reachable by this user, who is the program's
            continue
        if folder:
            _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=4k,nr_inodes=2,mode=0555")
        else:
            _mount("/dev/null", path, None, _MS_BIND)


def _cover_socket_folders() -> None:
    """An empty tmpfs over /run (and /var/run when it is no link to it), keeping /etc/resolv.conf's target when
    it lies there (systemd-resolved's stub), so that names still resolve where the network is allowed."""
    resolver = os.path.realpath(_RESOLVER)
    kept = None
    if resolver.startswith(tuple(f"{folder}/" for folder in _SOCKET_FOLDERS)) and os.path.isfile(resolver):
        kept = os.open(resolver, os.O_PATH | os.O_CLOEXEC)
    for folder in _SOCKET_FOLDERS:
        if os.path.isdir(folder) and not os.path.islink(folder):
            _mount("tmpfs", folder, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=64k,mode=0755")
    if kept is not None:
        os.makedirs(os.path.dirname(resolver), exist_ok=True)
        os.close(os.open(resolver, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(f"/proc/self/fd/{kept}", resolver, None, _MS_BIND)
        os.close(kept)


def _private_scratch(total_bytes: int) -> None:
    """One tmpfs of ``total_bytes`` at /tmp, /var/tmp and /dev/shm, holding a copy of the working directory,
    which then becomes the copy."""
    inside = folder_inside(os.getcwd())
    inodes = max(256, total_bytes // 4096)  # a file costs memory beyond its bytes: at most one per 4 KiB
    _mount("tmpfs", SCRATCH, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={total_bytes},nr_inodes={inodes},mode=1777")
    for place in _SCRATCH_PLACES:
        if os.path.isdir(place) and not os.path.islink(place):
            _mount(SCRATCH, place, None, _MS_BIND)
    try:
        _copy_folder(".", inside)
    except OSError as error:
        raise SetupFailed(f"copying the folder into the sandbox failed: {error.strerror} ({error.filename}); "
                          "raise the total file limit or give a smaller folder") from None
    os.chdir(inside)


def _copy_folder(source: str, target: str) -> None:
    """Copy the folders, regular files and symbolic links under ``source``; other kinds are left out."""
    os.mkdir(target, 0o700)
    for entry in os.scandir(source):
        copy = f"{target}/{entry.name}"
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), copy)
        elif entry.is_dir():
            _copy_folder(entry.path, copy)
        elif entry.is_file():
            with open(entry.path, "rb") as original, open(copy, "xb") as duplicate:
                while chunk := original.read(1 << 20):
                    duplicate.write(chunk)
            os.chmod(copy, stat.S_IMODE(entry.stat().st_mode))


def _syscall_mount_setattr() -> int | None:
    """mount_setattr's number: 442 wherever Linux numbers new system calls alike (all but alpha, ia64, mips)."""
    return None if os.uname().machine.startswith(("alpha", "ia64", "mips")) else 442


def _mount_setattr(path: str, add: int, remove: int, recursive: bool) -> None:
    """mount_setattr(2) (Linux 5.12); OSError with errno ENOSYS where the kernel lacks it."""
    number = _syscall_mount_setattr()
    if number is None:
        raise OSError(errno.ENOSYS, "mount_setattr is not known on this machine type", path)
    attributes = _MountAttr(add, remove, 0, 0)
    result = _libc().syscall(ctypes.c_long(number), ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(os.fsencode(path)),
                             ctypes.c_uint(_AT_RECURSIVE if recursive else 0), ctypes.byref(attributes),
                             ctypes.c_size_t(ctypes.sizeof(attributes)))
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error), path)


def _set_mount_flags(path: str, *, add: int = 0, remove: int = 0, recursive: bool = False) -> None:
    """Add and remove read-only, nosuid and nodev on the mount at ``path`` (with ``recursive``, on every mount at
    or below it): mount_setattr(2) where the kernel has it, else a bind remount of each mount."""
    try:
        _mount_setattr(path, add, remove, recursive)
        return
    except OSError as error:
        if error.errno != errno.ENOSYS:
            raise SetupFailed(f"mount_setattr() on {path} failed: {error.strerror} (errno {error.errno})") from None
    for mountpoint in _mountpoints_under(path) if recursive else [path]:
        try:
            current = os.statvfs(mountpoint).f_flag
        except OSError:  # gone, or below a folder this user cannot enter: nor can the program
            continue
        flags = ((current & (_LOCKED_DOWN | _MS_NOEXEC)) | add) & ~remove
        flags |= _MS_NOSYMFOLLOW if current & _ST_NOSYMFOLLOW else 0  # atime flags are kept by the kernel
        if _libc().mount(None, os.fsencode(mountpoint), None, _MS_REMOUNT | _MS_BIND | flags, None) < 0:
            error = ctypes.get_errno()
            if error not in (errno.ENOENT, errno.EACCES):
                raise SetupFailed(f"remounting {mountpoint} read-only failed: {os.strerror(error)} (errno {error})")


def _mountpoints_under(path: str) -> list[str]:
    """Every mount point at or below ``path``, from /proc/self/mountinfo (octal escapes such as \\040 undone)."""
    with open("/proc/self/mountinfo", "rb") as file:
        lines = file.read().splitlines()
    points = [os.fsdecode(line.split()[4].decode("unicode_escape").encode("latin-1")) for line in lines]
    prefix = path.rstrip("/") + "/"
    return [point for point in points if point == path or point.startswith(prefix)]


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


def _probe() -> None:
    """In process 2 with ``--probe``: the set-up worked if this is process 2, sees no process outside, and finds
    the host's files read-only and its own folder writable."""
    visible = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    confined = os.statvfs("/").f_flag & _MS_RDONLY and not os.statvfs(".").f_flag & _MS_RDONLY
    if os.getpid() == 2 and visible == [1, 2] and confined:
        os._exit(0)
    print(f"namespaces: the probe runs as process {os.getpid()} and sees {visible} in /proc; / read-only and its "
          f"folder writable: {bool(confined)}", file=sys.stderr)
    os._exit(SETUP_FAILED)


def _init(argv: list[str] | None, options: Options, report_fd: int) -> None:
    """Process 1 of the new PID namespace: set up, start the program, reap until it ends, report its status."""
    try:
        _prepare_init(options)
        program = os.fork()
    except (SetupFailed, OSError) as error:
        print(f"namespaces: {error}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    if program == 0:
        if argv is None:
            _probe()
        _exec_program(argv)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == program:
            os.write(report_fd, str(os.waitstatus_to_exitcode(status)).encode())
            os._exit(0)


def _parse(arguments: list[str]) -> tuple[Options, list[str]]:
    split = arguments.index("--") if "--" in arguments else len(arguments)
    options, argv, understood = Options(), arguments[split + 1:], True
    for argument in arguments[:split]:
        name, _, value = argument.partition("=")
        if argument in ("--allow-network", "--probe"):
            setattr(options, argument[2:].replace("-", "_"), True)
        elif name == "--max-total-file-bytes" and value.isdigit() and int(value) >= MIN_TOTAL_FILE_BYTES:
            options.total_file_bytes = int(value)
        elif name == "--hide" and value.startswith("/"):
            options.hidden.append(value)
        else:
            understood = False
    if not understood or options.total_file_bytes is None or options.probe == bool(argv):
        print(f"{_USAGE}\n(N is a number of bytes, at least {MIN_TOTAL_FILE_BYTES}; PATH is absolute)",
              file=sys.stderr)
        os._exit(2)
    return options, argv


def main(arguments: list[str]) -> None:
    options, argv = _parse(arguments)
    try:
        _enter_namespaces(options.allow_network)
    except SetupFailed as error:
        print(f"namespaces: {error}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    report_read, report_write = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(report_read)
        _init(None if options.probe else argv, options, report_write)
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
