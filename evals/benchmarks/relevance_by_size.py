"""Relevance by catalog size: does a signal tell requests that need a call from those that need none when the number
of listed tools is held fixed? From kept rows of the default selector (no model runs).

    python -m evals.benchmarks.relevance_by_size results/board/qwen2.5-coder-0.5b --out results/relevance/by-size-0.5b.md

BFCL lists one function in every ``simple_python``, ``parallel`` and ``irrelevance`` case and two to four in every
``multiple`` and ``parallel_multiple`` case, so the relevant and the irrelevant requests of one catalog size can be
set side by side only where one tool is listed. Per size group (1, 2-4, 5+ tools): the cases, the share that need
a call, each signal's AUROC and the relevance model's probability's (over the cases where the selection made a
call, as the stage sees them), the mean probability of the cases that need a call, and the false abstention (a case
that needs a call answered with none). The whole-category runs of the default strategy are read; samples are left
out.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from evals.benchmarks.board_report import DEFAULT as DEFAULT_STRATEGY
from evals.relevance import called, fill_decision_signals, needs_call, signal_aurocs
from evals.rescore import cases_of_run, run_params
from evals.runner import load_results
from evals.suite import registry_for
from tool_selection.conversations.summary import format_table
from tool_selection.relevance.signals import SIGNAL_PREFIX

__all__ = ["GROUPS", "by_size", "findings", "main", "markdown", "size_group"]

GROUPS = ("1", "2-4", "5+")
PROBABILITY = "relevance_p"
SIZE_FREE_SIGNALS = ("bm25_background",)  # computed from the kept rows where a run did not record them


def size_group(tools: int) -> str:
    """The catalog-size group of a case that lists ``tools`` tools."""
    return "1" if tools <= 1 else "2-4" if tools <= 4 else "5+"


def whole_default_runs(results: Path, strategy: str = DEFAULT_STRATEGY) -> list[Path]:
    """The kept runs under ``results`` of ``strategy`` over a whole split (no sample, no limit)."""
    runs = []
    for summary in sorted(results.glob("*/summary.json")):
        params = run_params(summary.parent)
        if params.get("strategy") == strategy and params.get("sample") is None and params.get("limit") is None:
            runs.append(summary.parent)
    return runs


def rows_with_sizes(run: Path) -> pd.DataFrame:
    """A run's rows, each with its case's number of listed tools (``tools_listed``) and suite."""
    params, cases = run_params(run), cases_of_run(run)
    sizes = {case_id: len(registry_for(case)) for case_id, case in cases.items()}
    rows = fill_decision_signals(load_results(run), cases, SIZE_FREE_SIGNALS)
    return rows.assign(tools_listed=rows["id"].map(sizes), suite=params["suite"])


def by_size(rows: pd.DataFrame, *, called_only: bool = False) -> pd.DataFrame:
    """One row per size group and one for all: cases, share needing a call, each signal's AUROC and the relevance
    probability's, the mean probability of the cases that need a call, and the false abstention rate. With
    ``called_only``, over the rows where the selection called a tool (what a relevance model judges; rows of the
    selection alone), without the probability and the false abstention."""
    if called_only:  # signals that most rows lack (only re-run cases recorded them) are left out
        rows = rows[called(rows)].drop(columns=[PROBABILITY], errors="ignore")
        rows = rows.drop(columns=[c for c in rows if c.startswith(SIGNAL_PREFIX) and rows[c].notna().mean() < 0.5])
    signals = sorted(c.removeprefix(SIGNAL_PREFIX) for c in rows if c.startswith(SIGNAL_PREFIX))
    rows = rows.assign(group=rows["tools_listed"].map(size_group))
    if PROBABILITY in rows:
        rows = rows.assign(**{f"{SIGNAL_PREFIX}{PROBABILITY}": rows[PROBABILITY]})
    measured = signals + ([PROBABILITY] if PROBABILITY in rows else [])
    table = []
    for group, part in [*((g, rows[rows["group"] == g]) for g in GROUPS), ("all", rows)]:
        if not len(part):
            continue
        need = needs_call(part).astype(bool)
        predicted = part["predicted"].fillna("[]").astype(str).str.strip()
        entry = {"tools listed": group, "cases": len(part), "need a call %": 100 * need.mean(),
                 "suites": ", ".join(sorted(set(part["suite"])))}
        entry.update(signal_aurocs(part, measured, only_called=False))
        entry["mean P, cases needing a call"] = (float(part.loc[need, PROBABILITY].mean())
                                                 if PROBABILITY in part and need.any() else math.nan)
        entry["false abstention %"] = (100 * float((predicted[need] == "[]").mean()) if need.any() and not called_only
                                       else math.nan)
        table.append(entry)
    return pd.DataFrame(table)


def _cell(value: object, column: str = "") -> str:
    """A table cell: shares and AUROCs to three places, percentages (``... %`` columns) to one."""
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.1f}" if column.endswith("%") else f"{value:.3f}"
    return str(value)


INTRO = ("A signal that read the catalog's size rather than the request would separate BFCL's `irrelevance` (one "
         "function per case) from `multiple` (two to four) without telling relevant requests from irrelevant ones. "
         "On BFCL only one catalog size holds both kinds: one listed function, in `simple_python` and `parallel` (a "
         "call needed) and `irrelevance` (none). Each signal's AUROC per number of listed tools, over every case "
         "answered by the default (with or without a call); `relevance_p` is the relevance model's probability, "
         "*mean P* its mean over the cases that need a call, and false abstention the share of those answered with "
         "no call.")
CALLED_INTRO = ("The same over the cases where the selection alone called a tool, which are the decisions a relevance "
                "model judges (rows of the selection alone: the default's runs with the cases its relevance stage "
                "overruled re-run without it and spliced in).")


def findings(table: pd.DataFrame) -> str:
    """The table in one paragraph: AUROC with one tool listed against pooled, and the level of P per size."""
    rows = table.set_index("tools listed")
    parts = []
    if {"1", "all"} <= set(rows.index) and PROBABILITY in rows:
        parts.append(f"With one tool listed the relevance probability's AUROC is {_cell(rows.loc['1', PROBABILITY])}"
                     f" (all cases pooled: {_cell(rows.loc['all', PROBABILITY])}).")
    levels = [f"{_cell(rows.loc[g, 'mean P, cases needing a call'])} with {g} listed "
              f"({_cell(rows.loc[g, 'false abstention %'], '%')}% false abstention)" for g in GROUPS if g in rows.index]
    if levels:
        parts.append("A request that needs a call gets a mean probability of " + ", ".join(levels) + ".")
    missing = [g for g in GROUPS if g not in rows.index]
    if missing:
        parts.append(f"No case lists {' or '.join(missing)} tools here.")
    return " ".join(parts)


def markdown(table: pd.DataFrame, source: str, *, title: str, called_only: bool = False) -> str:
    head = [column for column in table.columns if not (called_only and table[column].isna().all())]
    flag = " --called" if called_only else ""
    lines = [f"## {title}", "",
             f"<!-- generated by: python -m evals.benchmarks.relevance_by_size {source}{flag} (kept rows) -->", "",
             CALLED_INTRO if called_only else INTRO, "", format_table([{c: _cell(v, c) for c, v in zip(head, row)}
                                      for row in table.itertuples(index=False)], head)]
    return "\n".join([*lines, *([] if called_only else ["", findings(table)])]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.relevance_by_size", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="A folder of kept runs, such as results/board/qwen2.5-coder-0.5b.")
    parser.add_argument("--out", type=Path, help="Write the table here (default: print).")
    parser.add_argument("--called", action="store_true", help="Over the rows where the selection called a tool (give "
                        "runs of the selection alone).")
    args = parser.parse_args(argv)
    runs = whole_default_runs(args.results)
    if not runs:
        parser.error(f"{args.results} holds no whole-split run of the default strategy ({DEFAULT_STRATEGY}).")
    table = by_size(pd.concat([rows_with_sizes(run) for run in runs], ignore_index=True), called_only=args.called)
    what = "the selection alone's calls" if args.called else "the default's whole BFCL categories"
    text = markdown(table, args.results.as_posix(), called_only=args.called,
                    title=f"Each signal's AUROC with the number of listed tools held fixed ({args.results.name}, "
                          f"{what})")
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
