"""How fast a mistake is answered: twenty common slips, each run as a user runs it (a fresh ``toolsel`` process).

    python -m evals.benchmarks.mistakes [--out results/mistakes] [--repeat 3]
    python -m evals.benchmarks.mistakes --page docs/results/errors.md [--out results/mistakes]

Each mistake is timed from the process start to its exit (the best of ``--repeat``), beside ``toolsel --help`` in
the same run (the baseline: the interpreter and the parser, nothing else). Printed: the seconds, the ratio to the
baseline, the exit status and the error's first line; a mistake that exits 0, or answers with a traceback, is
marked. Writes ``mistakes.csv`` under ``--out``. Run it alone: a busy core slows every start. ``--page`` writes the
results page from the kept rows instead (``mistakes.csv``, and ``before.csv`` if there is one: the same run at an
earlier commit).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "mistakes", "write_page"]

BASELINE = ("toolsel --help", ["--help"])
EVAL = ["eval", "--no-mlflow"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def mistakes(scratch: Path) -> list[tuple[str, list[str], dict[str, str | None]]]:
    """(what the user did, argv, environment changes: None unsets), in the order a newcomer tends to make them."""
    bad_suite = scratch / "bad.jsonl"
    bad_suite.write_text('{"id": "a", "request": "x"}\n')
    down = {"OPENAI_API_BASE": f"http://127.0.0.1:{_closed_port()}/v1", "OPENAI_API_KEY": "x"}
    return [
        ("misspelt suite", EVAL + ["--suite", "tresure_hunt"], {}),
        ("missing suite file", EVAL + ["--suite", "cases/nope.jsonl"], {}),
        ("malformed suite file", EVAL + ["--suite", bad_suite.name], {}),  # run in the scratch folder
        ("misspelt split", EVAL + ["--split", "tset"], {}),
        ("misspelt strategy", EVAL + ["--strategy", "nativ"], {}),
        ("unknown embedded model", EVAL + ["--model", "local:qwen2.5-coder-0.6b"], {}),
        ("model spec with a slash", EVAL + ["--model", "local/qwen2.5-coder-0.5b"], {}),
        ("server that is down", EVAL + ["--model", "openai/any-name"], down),
        ("hosted model without a key", EVAL + ["--model", "anthropic/claude-sonnet-4"], {"ANTHROPIC_API_KEY": None}),
        ("missing program", EVAL + ["--program", "programs/nope"], {}),
        ("missing relevance model", EVAL + ["--relevance", "nope.json"], {}),
        ("missing run config", EVAL + ["--run-config", "nope.yaml"], {}),
        ("threads out of range", EVAL + ["--threads", "0"], {}),
        ("bad tracking URI", ["eval", "--tracking-uri", "bogus://x"], {}),
        ("view a missing run", ["view", "runs/nope"], {}),
        ("compare missing runs", ["eval", "compare", "runs/nope", "runs/nope2"], {}),
        ("report on a missing run", ["report", "runs/nope"], {}),
        ("missing sweep file", ["sweep", "nope.yaml"], {}),
        ("pull an unknown model", ["models", "pull", "qwen9"], {}),
        ("optimize a misspelt suite", ["optimize", "--no-mlflow", "--suite", "financ"], {}),
    ]


def _run(argv: list[str], env: dict[str, str | None], cwd: Path) -> tuple[float, int, str]:
    environment = {key: value for key, value in {**os.environ, **env}.items() if value is not None}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tool_selection.cli", *argv], capture_output=True, text=True,
                          env=environment, cwd=cwd, timeout=600)
    seconds = time.perf_counter() - start
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    first = next((line for line in lines if line.startswith("toolsel: error:")), lines[-1] if lines else "")
    return seconds, done.returncode, ("TRACEBACK " if "Traceback" in done.stderr else "") + first[:150]


def _read(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {row["mistake"]: row for row in csv.DictReader(handle)}


def write_page(rows_dir: Path, page: Path) -> None:
    """The results page from the kept rows and their provenance (``provenance.json`` beside them)."""
    after = _read(rows_dir / "mistakes.csv")
    before = _read(rows_dir / "before.csv") if (rows_dir / "before.csv").is_file() else {}
    provenance = json.loads((rows_dir / "provenance.json").read_text())
    help_row = after.pop(BASELINE[0])
    lines = ["# How fast a mistake is answered", "",
             "Twenty common slips, each run as a user runs it: a fresh `toolsel` process, timed from its start to "
             "its exit (the best of three), beside `toolsel --help` in the same run (the interpreter and the "
             f"parser: {float(help_row['seconds']):.2f} s). Every one exits with status 2 and one `toolsel: error:` "
             "line naming the problem and the fix.", "",
             "| mistake | command | s" + (" before | s" if before else "") + " now | x `--help`"
             + (" before | x `--help`" if before else "") + " now | first line |",
             "|---|---|---" + ("|---|---" if before else "") + "|---|---|"]
    for name, row in after.items():
        earlier = (f" {float(before[name]['seconds']):.2f} |" if name in before else " - |") if before else ""
        earlier_x = (f" {float(before[name]['x_baseline']):.1f} |" if name in before else " - |") if before else ""
        message = row["message"].removeprefix("toolsel: error: ").replace("|", "\\|")
        lines.append(f"| {name} | `{row['command']}` |{earlier} {float(row['seconds']):.2f} |{earlier_x} "
                     f"{float(row['x_baseline']):.1f} | {message[:110]} |")
    under = sum(float(row["seconds"]) < 1 for row in after.values())
    earlier_under = sum(float(row["seconds"]) < 1 for name, row in before.items() if name != BASELINE[0])
    lines += ["", f"{under} of {len(after)} answer in under a second"
              + (f" ({earlier_under} of {len(before) - 1} before)." if before else ".")
              + (f" `toolsel --help` took {float(before[BASELINE[0]]['seconds']):.2f} s in the run before: where the"
                 " two runs' machines differ (provenance), compare the x `--help` columns." if before else ""), "",
              "What made them fast: the commands check what a run names before DSPy, LiteLLM and MLflow load "
              "(`evals.cli.check_before_loading`): the suite is read and validated, the program and relevance files "
              "must exist, the MLflow store's scheme must be one a tracking store takes, a server of one's own must "
              "answer and a hosted provider's key must be set; strategy names are declared beside their registry; "
              "a run reference must be a folder or shaped like an MLflow run id. The MCP SDK is imported only where "
              "it is used, not when a suite is read.", "", "## Provenance", "",
              "| rows | kept rows | command | commit | machine | date | notes |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {p['rows']} | `{p['kept']}` | `{p['command']}` | `{p['commit']}` | {p['machine']} | {p['date']} | "
              f"{p['notes']} |" for p in provenance]
    page.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/mistakes", help="Folder for mistakes.csv.")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per mistake; the best is kept.")
    parser.add_argument("--page", help="Write this results page from the rows kept in --out, and run nothing.")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.page:
        write_page(out, Path(args.page))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch)
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(Path.cwd()), os.environ.get("PYTHONPATH")]))}
        rows = []
        for name, command, extra in [(BASELINE[0], BASELINE[1], {}), *mistakes(cwd)]:
            runs = [_run(command, {**env, **extra}, cwd) for _ in range(max(1, args.repeat))]
            seconds, status, message = min(runs)
            rows.append({"mistake": name, "command": "toolsel " + " ".join(command), "seconds": round(seconds, 3),
                         "exit": status, "message": message})
    baseline = rows[0]["seconds"]
    for row in rows:
        row["x_baseline"] = round(row["seconds"] / baseline, 2)
    with (out / "mistakes.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{'mistake':<30} {'s':>6} {'x help':>7} exit  first line")
    for row in rows:
        flag = " <- not refused" if row is not rows[0] and row["exit"] == 0 else ""
        print(f"{row['mistake']:<30} {row['seconds']:>6.2f} {row['x_baseline']:>7.2f} {row['exit']:>4}  "
              f"{row['message'][:90]}{flag}")
    slow = [row["mistake"] for row in rows[1:] if row["seconds"] >= 1.0]
    print(f"\n{len(rows) - 1 - len(slow)} of {len(rows) - 1} mistakes answered in under 1 s"
          + (f"; slower: {', '.join(slow)}" if slow else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
