"""Finished runs as a researcher reads them: their per-case rows, how each was built, and a name that says so.

A run is a run directory of ``toolsel eval`` (``results.jsonl`` and ``summary.json``) or an MLflow run id. Its
name and its description carry the suite, split, model, strategy and program, so that two runs side by side
(``toolsel eval compare``, ``toolsel report``) say what they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.naming import slug
from tool_selection.errors import ToolSelectionError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Run", "cached_cases", "check_run_ref", "describe", "find_run_dirs", "open_run", "program_label",
           "run_label"]

MLFLOW_RUN_ID = re.compile(r"[0-9a-f]{32}")  # what MLflow's stores name a run by (a UUID's hex)

IDENTITY = ("suite", "split", "model", "strategy", "program")


def program_label(program: Any) -> str:
    """``zero-shot``, or a compiled program's directory (or state file) name."""
    if program in (None, "", "zero-shot"):
        return "zero-shot"
    return Path(str(program)).stem or str(program)


def run_label(params: dict[str, Any]) -> str:
    """A file-name-safe name of what a run is: ``SUITE-SPLIT-MODEL-STRATEGY-PROGRAM`` (each part a slug)."""
    parts = [params.get("suite"), params.get("split"), params.get("model"), params.get("strategy"),
             program_label(params.get("program"))]
    return "-".join(slug(str(part)) for part in parts if part not in (None, ""))


def describe(params: dict[str, Any]) -> str:
    """``suite S (split), model M, strategy X, program P``; what the params do not record is left out."""
    text = f"suite {params['suite']}" if params.get("suite") else "suite unknown"
    if params.get("split"):
        text += f" ({params['split']})"
    for key in ("model", "strategy"):
        if params.get(key):
            text += f", {key} {params[key]}"
    return text + f", program {program_label(params.get('program'))}"


def cached_cases(rows: pd.DataFrame) -> int:
    """How many cases DSPy answered from its cache (``evals.metrics.cached_mask``)."""
    from evals.metrics import cached_mask

    return int(cached_mask(rows).sum())


@dataclass
class Run:
    """One finished run: where it was read from, its per-case rows and its params (how it was built)."""

    ref: str
    rows: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return run_label(self.params) if self.params.get("suite") else Path(self.ref).name

    @property
    def description(self) -> str:
        return describe(self.params) if self.params else self.ref

    @property
    def cached(self) -> int:
        return cached_cases(self.rows)


def check_run_ref(ref: str | Path) -> None:
    """Refuse, before MLflow loads, a reference that is neither a run directory nor shaped like an MLflow run id."""
    if Path(ref).is_dir() or MLFLOW_RUN_ID.fullmatch(str(ref)):
        return
    raise ToolSelectionError(f"{str(ref)!r} is neither a run directory nor an MLflow run id (32 hex digits): give "
                             "the folder 'toolsel eval' printed ('per-case results: ...'), or a run id from the "
                             "MLflow UI.")


def open_run(ref: str | Path, tracking_uri: str | None = None) -> Run:
    """A run directory, or an MLflow run id (read from ``tracking_uri``)."""
    import json

    check_run_ref(ref)
    path = Path(ref)
    if path.is_dir():
        from evals.runner import load_results

        params: dict[str, Any] = {}
        summary = path / "summary.json"
        if summary.is_file():
            try:
                params = dict(json.loads(summary.read_text(encoding="utf-8")).get("params") or {})
            except (OSError, ValueError, AttributeError):
                params = {}
        return Run(str(ref), load_results(path), params)
    from evals.tracking import results_from_mlflow

    try:
        rows, params = results_from_mlflow(str(ref), tracking_uri)
    except Exception as error:  # MLflow raises several types for an unknown id or store
        raise ToolSelectionError(f"{str(ref)!r} is neither a run directory nor a readable MLflow run id "
                                 f"({str(error).splitlines()[0][:200]}).") from None
    return Run(str(ref), rows, params)


def find_run_dirs(root: str | Path) -> list[Path]:
    """``root`` if it is a run directory, else every run directory below it (those holding ``results.jsonl``
    or ``results.parquet``), sorted."""
    root = Path(root)
    if not root.is_dir():
        raise ToolSelectionError(f"{root} is not a directory: give a run directory of 'toolsel eval' or a folder "
                                 "that holds some.")
    if _is_run_dir(root):
        return [root]
    return sorted({p.parent for name in ("results.jsonl", "results.parquet") for p in root.rglob(name)})


def _is_run_dir(path: Path) -> bool:
    return (path / "results.jsonl").is_file() or (path / "results.parquet").is_file()
