"""Re-execute the notebooks in place, their outputs kept, so that they read as results on the web (``make notebooks``).

    python notebooks/execute.py [--only NAME ...] [--skip-inputs]

Three notebooks read what the toolkit's commands leave behind (MLflow runs, a stuck benchmark's folder). So this
first makes a small set of such runs with the embedded models, with small limits, in ``runs/notebooks`` (git
ignores ``runs/``): zero-shot evaluations of the first 5 test cases of finance (0.5B model) and treasure_hunt
(both local models), a bootstrap optimization of the 0.5B model on treasure_hunt, and a stuck benchmark of the
pair on the first 5 dev and test cases of treasure_hunt; the quick-start notebook evaluates 5 finance cases per
strategy. Every notebook then runs there, with the MLflow store ``sqlite:///mlflow.db`` of that folder, and is
written back with its outputs. DSPy's answer cache makes a second run much faster than the first. The figures
are small-sample illustrations, not results: the measured figures are in docs/results.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
WORK = ROOT / "runs" / "notebooks"
SMALL, LARGE = "local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b"
LIMIT = "5"

INPUTS = [
    ["eval", "--suite", "finance", "--model", SMALL, "--split", "test", "--limit", LIMIT],
    ["eval", "--suite", "treasure_hunt", "--model", SMALL, "--split", "test", "--limit", LIMIT],
    ["eval", "--suite", "treasure_hunt", "--model", LARGE, "--split", "test", "--limit", LIMIT],
    ["optimize", "--suite", "treasure_hunt", "--model", SMALL, "--optimizer", "bootstrap", "--train-limit", "4",
     "--dev-limit", "3", "--test-limit", LIMIT, "--out", "programs/treasure_hunt-bootstrap"],
    ["bench", "stuck", "--suite", "treasure_hunt", "--pair", f"{SMALL},{LARGE}", "--limit", LIMIT,
     "--detectors", "heuristic,validation,confidence,confidence_min,combined",
     "--out", "runs/stuck_bench/treasure_hunt"],
]
ORDER = ["quickstart", "eval_results", "optimization", "scale", "stuck_detection"]


def environment() -> dict[str, str]:
    """The environment of the commands and kernels: this checkout's code first, the store in the work folder."""
    env = dict(os.environ, MLFLOW_TRACKING_URI="sqlite:///mlflow.db", STUCK_BENCH_DIR="runs/stuck_bench/treasure_hunt",
               MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR="false", PYTHONWARNINGS="ignore", TQDM_DISABLE="1",
               QUICKSTART_LIMIT=LIMIT)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("MPLBACKEND", None)  # the kernel's inline backend, so that figures are kept in the notebook
    return env


def make_inputs(env: dict[str, str]) -> None:
    for command in INPUTS:
        start = time.perf_counter()
        print("toolsel", " ".join(command), flush=True)
        subprocess.run([sys.executable, "-m", "tool_selection.cli", *command], cwd=WORK, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        print(f"  {time.perf_counter() - start:.0f} s", flush=True)


def execute(name: str, env: dict[str, str]) -> float:
    """Run one notebook in the work folder and write it back with its outputs; return the seconds it took."""
    import nbformat
    from nbclient import NotebookClient

    path = NOTEBOOKS / f"{name}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    os.environ.update(env)  # the kernel inherits this process's environment
    NotebookClient(notebook, timeout=1800, kernel_name="python3",
                   resources={"metadata": {"path": str(WORK)}}).execute()
    seconds = time.perf_counter() - start
    for cell in notebook.cells:  # outputs only: no execution timestamps or kernel ids in the diff
        cell.metadata.pop("execution", None)
    nbformat.write(notebook, path)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python notebooks/execute.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=ORDER, help="Execute only these notebooks.")
    parser.add_argument("--skip-inputs", action="store_true", help="Use the runs already in runs/notebooks.")
    args = parser.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    env = environment()
    if not args.skip_inputs:
        make_inputs(env)
    for name in args.only or ORDER:
        print(f"{name}.ipynb: {execute(name, env):.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
