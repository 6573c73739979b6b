"""Finding a sandboxed program's processes from outside: by their working directory, since inside its own PID
namespace a program sees other process ids than this process does."""

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def running_in(folder: str) -> list[int]:
    """Running processes whose working directory is ``folder``, even after it was removed."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:  # ended meanwhile, a zombie, or not ours to look at
                continue
            if cwd in (folder, f"{folder} (deleted)") and alive(int(entry.name)):
                found.append(int(entry.name))
    return found
