"""Run directories gathered for a report: evaluation runs keyed as the strategy tables key them (model,
strategy, suite), and loop runs (``toolsel eval loop``) by their directory name."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evals.runs import Run, find_run_dirs, open_run
from tool_selection.errors import ToolSelectionError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Collected", "collect"]


@dataclass
class Collected:
    runs: dict[tuple[str, str, str], Run] = field(default_factory=dict)  # (model, strategy, suite) -> run
    loops: dict[str, pd.DataFrame] = field(default_factory=dict)  # loop run label -> per-task rows

    @property
    def frames(self) -> dict[tuple[str, str, str], pd.DataFrame]:
        """The evaluation runs' rows, as ``evals.reports.strategies`` takes them."""
        return {key: run.rows for key, run in self.runs.items()}


def _is_loop_run(run_dir: Path) -> bool:
    results = run_dir / "results.jsonl"
    if not results.is_file():
        return False
    with results.open(encoding="utf-8") as handle:
        first = handle.readline()
    try:
        return "stop_reason" in json.loads(first)
    except ValueError:
        return False


def _key(root: Path, run_dir: Path, run: Run) -> tuple[str, str, str]:
    """(model, strategy, suite). Under the MODEL/STRATEGY/SUITE layout the sweeps write (``results/strategies``)
    the directories name them, as the strategy report reads them (``native-drop``: native with undeclared
    arguments dropped); elsewhere the run's own params do."""
    from evals.reports.strategies import run_strategy  # loads DSPy (the strategies' specs): only when runs are read

    if len(run_dir.relative_to(root).parts) == 3:
        return run_dir.parent.parent.name, run_strategy(run_dir), run_dir.name
    params = run.params
    model = str(params.get("model", "unknown")).removeprefix("local:")
    return model, str(params.get("strategy", "unknown")), str(params.get("suite", run_dir.name))


def collect(paths: list[str | Path]) -> Collected:
    """Every run under ``paths`` (run directories, or folders that hold them)."""
    collected = Collected()
    for path in map(Path, paths):
        root = path.resolve()
        for run_dir in find_run_dirs(path):
            if _is_loop_run(run_dir):
                import pandas as pd

                rows = pd.read_json(run_dir / "results.jsonl", lines=True).drop_duplicates("id", keep="last")
                collected.loops[str(run_dir.relative_to(path.parent)) if run_dir != path else run_dir.name] = rows
                continue
            run = open_run(run_dir)
            if "full_match" not in run.rows:
                raise ToolSelectionError(f"{run_dir} holds no scored evaluation rows (no full_match column).")
            key = _key(root, run_dir.resolve(), run)
            while key in collected.runs:  # the same cell twice (another folder): keep both, told apart
                key = (key[0], key[1], key[2] + "'")
            collected.runs[key] = run
    if not collected.runs and not collected.loops:
        raise ToolSelectionError(f"No runs under {', '.join(map(str, paths))}: give run directories of "
                                 "'toolsel eval' (or 'toolsel eval loop'), or folders that hold them.")
    return collected
