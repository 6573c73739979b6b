"""The shipped router run live (issue #49, item 3): ``toolsel eval --cascade auto`` against each model alone on the
same cases, and the live run checked against the offline figures.

    python -m evals.benchmarks.live_cascade [--runs results/cascade] [--out docs/results/cascade.md]

Reads kept runs under ``--runs`` named ``<kind>-<suite>``: ``cascade`` (the 0.5B with ``--cascade auto``),
``small`` (the 0.5B alone; default: its whole-category board run, whose answers are the same) and ``large`` (the
1.5B alone), all with the default selector. For each suite and pooled: accuracy of each, the cascade against the
1.5B (paired bootstrap interval, McNemar's exact p), escalation and seconds per case, and the verdict of
``learned_router.pays``. The cascade run is also set against the router applied offline to the rows it was fitted on
(both models' board runs of the same cases, a signal those rows lack computed as the offline page computes it):
the same escalations, the same primary decisions, the same final scores.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from evals.benchmarks.learned_router import (
    BOARD,
    PRIMARY,
    SECONDARY,
    board_run,
    compare_to_secondary,
    pays,
    run_rows,
)
from evals.runner import load_results
from tool_selection.errors import ToolSelectionError
from tool_selection.stuck.learned import shipped_router

__all__ = ["agreement", "cascade_table", "main", "markdown_page"]

RUNS = Path("results/cascade")
KINDS = ("cascade", "small", "large")
SUITES = ("multiple", "irrelevance")
FRONTIER = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)


def _run(runs: Path, kind: str, suite: str, board: Path) -> tuple[pd.DataFrame, dict]:
    folder = runs / f"{kind}-{suite}"
    if kind == "small" and not folder.is_dir():  # the board's whole-category run of the 0.5B default: the same
        folder = board_run(board, PRIMARY, suite)  # selector, so the same answers (seconds timed in another run)
    if not (folder / "summary.json").is_file():
        raise ToolSelectionError(f"No finished run in {folder}: run toolsel eval --suite bfcl:{suite} --split test "
                                 f"(see the page's commands) with --run-dir {folder}.")
    return load_results(folder), json.loads((folder / "summary.json").read_text())["params"]


def _paired(runs: Path, suite: str, board: Path = BOARD) -> tuple[pd.DataFrame, dict]:
    """One row per case: each kind's score and seconds, and the cascade's escalation and per-model seconds."""
    tables, params = {}, {}
    for kind in KINDS:
        tables[kind], params[kind] = _run(runs, kind, suite, board)
    ids = set(tables["cascade"]["id"])
    tables["small"] = tables["small"][tables["small"]["id"].isin(ids)]
    if any(set(t["id"]) != ids for t in tables.values()):
        raise ToolSelectionError(f"The {suite} runs do not hold the same cases: run each on the same split.")
    cascade = tables["cascade"].set_index("id")
    table = pd.DataFrame({"suite": suite, "escalated": cascade["cascade_escalated"].astype(float),
                          "wrong_p": cascade["cascade_wrong_p"].astype(float),
                          "primary_seconds": cascade["cascade_primary_seconds"].astype(float),
                          "secondary_seconds": cascade["cascade_secondary_seconds"].astype(float)})
    for kind in KINDS:
        rows = tables[kind].set_index("id")
        table[f"{kind}_correct"] = rows["full_match"].astype(float)
        table[f"{kind}_s"] = rows["latency_s"].astype(float)
    return table.reset_index(), params


def cascade_table(table: pd.DataFrame, label: str) -> dict:
    """One row of the page's table: each model, the cascade, the paired comparison with the 1.5B, seconds."""
    comparison = compare_to_secondary(table["cascade_correct"], table["large_correct"])
    cascade_s, large_s = table["cascade_s"].mean(), table["large_s"].mean()
    return {"suite": label, "cases": len(table), "0.5B %": _pct(table["small_correct"].mean()),
            "1.5B %": _pct(table["large_correct"].mean()), "cascade %": _pct(table["cascade_correct"].mean()),
            "cascade - 1.5B [95% CI]": f"{100 * comparison.difference:+.1f} [{100 * comparison.ci_low:+.1f}, "
                                       f"{100 * comparison.ci_high:+.1f}]",
            "McNemar p": f"{comparison.p_value:.3g} ({comparison.cascade_only} vs {comparison.secondary_only})",
            "escalated %": _pct(table["escalated"].mean()),
            "s/case 0.5B / 1.5B / cascade": f"{table['small_s'].mean():.2f} / {large_s:.2f} / {cascade_s:.2f}",
            "cascade: primary + secondary s": f"{table['primary_seconds'].mean():.2f} + "
                                              f"{table['secondary_seconds'].mean():.2f}",
            "ratio to 1.5B": f"{cascade_s / large_s:.2f}",
            "not escalated: scored as the 0.5B alone": _same_as_alone(table),
            "pays": "yes" if pays(comparison, cascade_s, large_s) else "no"}


def _same_as_alone(table: pd.DataFrame) -> str:
    """On the cases the router kept, how many the cascade scored as the 0.5B alone did (all, where the primary
    answers as the 0.5B's own run did)."""
    kept = table[table["escalated"] == 0]
    return f"{int((kept['cascade_correct'] == kept['small_correct']).sum())} of {len(kept)}"


def frontier_rows(table: pd.DataFrame, shares=FRONTIER) -> list[dict]:
    """What the router's live scores would buy at other escalation rates, on these test cases (read, not chosen:
    the threshold that ships was chosen on dev): the cases it scores most likely wrong escalated, the 0.5B's answer
    kept on the rest, seconds as the cascade's primary plus the 1.5B's where escalated."""
    from evals.stuck_bench.routing import auroc

    order = np.argsort(-table["wrong_p"].to_numpy(float), kind="stable")
    large_s = table["large_s"].mean()
    rows = []
    for share in shares:
        escalated = np.zeros(len(table), dtype=bool)
        escalated[order[:round(share * len(table))]] = True
        correct = np.where(escalated, table["large_correct"], table["small_correct"])
        seconds = table["primary_seconds"].to_numpy(float) + escalated * table["large_s"].to_numpy(float)
        rows.append({"escalated %": _pct(escalated.mean()), "accuracy %": _pct(correct.mean()),
                     "1.5B alone %": _pct(table["large_correct"].mean()),
                     "s/case (x 1.5B)": f"{seconds.mean():.2f} ({seconds.mean() / large_s:.2f}x)"})
    rows.append({"escalated %": "AUROC of P(wrong) for the 0.5B's mistakes",
                 "accuracy %": f"{auroc(table['wrong_p'], 1 - table['small_correct']):.3f}"})
    return rows


def agreement(runs: Path, board: Path, suite: str) -> dict | None:
    """The cascade run against the router applied offline to the board rows of the same cases, the rows it was
    fitted on (None where no board rows are kept)."""
    if not (board / PRIMARY).is_dir():
        return None
    live = load_results(runs / f"cascade-{suite}").set_index("id")
    router = shipped_router(PRIMARY)
    kept = run_rows(board, PRIMARY, f"bfcl_{suite}", router.signals,
                    run_dir=board_run(board, PRIMARY, suite))[0].set_index("id").loc[live.index]
    large = load_results(board_run(board, SECONDARY, suite)).set_index("id").loc[live.index]
    offline_p = router.probabilities(kept)
    offline_escalated = offline_p >= router.threshold
    offline_correct = np.where(offline_escalated, large["full_match"], kept["full_match"]).astype(float)
    same_primary = [json.loads(calls) == _names(row) for calls, row in
                    zip(live["cascade_primary_calls"], kept.to_dict("records"), strict=True)]
    escalated = live["cascade_escalated"].astype(bool).to_numpy()
    return {"suite": suite, "cases": len(live),
            "same primary tool names %": _pct(float(np.mean(same_primary))),
            "same escalation %": _pct(float(np.mean(escalated == offline_escalated))),
            "escalated live / offline %": f"{_pct(escalated.mean())} / {_pct(offline_escalated.mean())}",
            "max |P live - P offline|": f"{np.max(np.abs(live['cascade_wrong_p'].to_numpy(float) - offline_p)):.3f}",
            "accuracy live / offline %": f"{_pct(live['full_match'].mean())} / {_pct(offline_correct.mean())}",
            "same final score %": _pct(float(np.mean(live["full_match"].to_numpy(float) == offline_correct)))}


def _names(row: dict) -> list[str]:
    calls = row.get("predicted")
    parsed = json.loads(calls) if isinstance(calls, str) else (calls or [])
    return [call.get("tool_name") or call.get("name") for call in parsed]


def _pct(value: float) -> str:
    return "-" if value is None or np.isnan(value) else f"{100 * value:.1f}"


def _table(rows: list[dict]) -> str:
    from tool_selection.conversations.summary import format_table

    return format_table(rows, list(rows[0])) if rows else "(none)"


def markdown_page(rows: list[dict], agreements: list[dict], params: dict, *, command: str, commit: str,
                  today: str, frontier: list[dict] | None = None) -> str:
    router = shipped_router(PRIMARY)
    return "\n".join([
        "# The 0.5B -> 1.5B cascade, live", "",
        f"Generated by `{command}` on {today} at commit `{commit}`, from kept runs (`results/cascade/`).", "",
        f"`toolsel eval --cascade auto` with the router that ships for the 0.5B model (`{router.fingerprint}`, "
        f"fitted on the {router.trained_on.get('split', 'train')} rows of "
        f"{', '.join(router.trained_on.get('suites', []))}, escalating at P(wrong) >= {router.threshold:.3f}, "
        f"chosen on {router.dev.get('chosen_on', 'dev')}; see [the offline page](learned-router.md)): the 0.5B "
        "decides with the default selector, the router reads the relevance signals of its decision and the "
        "relevance stage's verdict, and the 1.5B decides the request again where the router escalates. Against "
        "each model alone on the same BFCL test cases (the test split of each category, as the offline page's).",
        "",
        "## Test: the cascade against each model alone", "", _table(rows), "",
        "Full match in points; the interval is the paired bootstrap 95% interval of cascade minus 1.5B, McNemar's "
        "exact p beside the cases only the cascade / only the 1.5B gets right. Seconds per case as recorded (the "
        "cascade's: its primary's selection, the router, and the 1.5B's selection where escalated); the cascade "
        "and the 1.5B ran one after the other on the same machine, alone; the 0.5B's answers and seconds are those "
        "of the board's whole-category run (the same selector, so the same answers; its seconds were timed with "
        "other work beside it, see the board's provenance). It pays when "
        "it is not significantly below the 1.5B at fewer seconds per case. The issue's target: within one point "
        "of the 1.5B at <= 0.8x its seconds.", "",
        "## What the router's scores would buy at other escalation rates (both suites)", "",
        _table(frontier or []), "",
        "The test cases ranked by the router's live P(wrong), the top share escalated (the 1.5B's answer), the "
        "rest kept (the 0.5B's): the frontier these scores allow, read on test, not a threshold chosen on it. "
        "Seconds: the cascade's primary seconds on every case plus the 1.5B's own seconds where escalated.", "",
        "## The live cascade against the offline figures", "",
        _table(agreements) if agreements else "(no board rows kept to check against)", "",
        "The cascade run, case by case, against the same router applied to the rows it was fitted on: the board's "
        "whole-category runs of the 0.5B (recorded at an older commit) and the 1.5B's answers there. Where the "
        "0.5B's answer today is the one those rows hold, the router's P(wrong) and its escalation are the same: a "
        "difference comes from a changed answer (the code changed since those rows) or a signal recomputed on "
        "another machine; the final score also differs where the 1.5B answers an escalated case otherwise than "
        "its board run did.", "",
        "## Runs", "", _table([{"run": kind, "command": f"`toolsel eval {value}`"} for kind, value in params.items()]),
        ""])


COMMANDS = {
    "cascade": "--suite bfcl:SUITE --model local:qwen2.5-coder-0.5b --cascade auto --split test --no-cache",
    "small": "--suite bfcl:SUITE --model local:qwen2.5-coder-0.5b --split all --no-cache (the board's whole run; "
             "its test cases)",
    "large": "--suite bfcl:SUITE --model local:qwen2.5-coder-1.5b --split test --no-cache",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.live_cascade",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=str(RUNS), help=f"Folder of kept runs (default: {RUNS}).")
    parser.add_argument("--board", default=str(BOARD), help=f"The board's kept runs (default: {BOARD}).")
    parser.add_argument("--out", help="Write the markdown page here (default: print it).")
    args = parser.parse_args(argv)
    from evals.tracking import git_commit

    runs = Path(args.runs)
    tables = [_paired(runs, suite, Path(args.board))[0] for suite in SUITES]
    rows = [cascade_table(t, f"bfcl_{suite}") for t, suite in zip(tables, SUITES, strict=True)]
    both = pd.concat(tables, ignore_index=True)
    rows.append(cascade_table(both, "both"))
    agreements = [a for suite in SUITES if (a := agreement(runs, Path(args.board), suite)) is not None]
    command = " ".join(["python -m evals.benchmarks.live_cascade",
                        *map(shlex.quote, sys.argv[1:] if argv is None else argv)])
    page = markdown_page(rows, agreements, COMMANDS, command=command, commit=git_commit(),
                         today=date.today().isoformat(), frontier=frontier_rows(both))
    if args.out:
        Path(args.out).write_text(page, encoding="utf-8")
        print(f"page: {args.out}")
    else:
        print(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
