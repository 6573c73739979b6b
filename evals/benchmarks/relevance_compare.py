"""Two relevance models on the same kept rows, paired: what a refit changes, with no model run.

    python -m evals.benchmarks.relevance_compare --model NEW.json --against OLD.json RUN_DIR... [--out FILE.md]

Each RUN_DIR holds one suite's rows as the selection alone made them, with the signals recorded (a run with
``--relevance none --relevance-signals ...``, or a run with a relevance model whose overruled cases were re-run
without one and spliced in: ``toolsel eval --ids`` and ``toolsel eval splice``). Signals a run did not record and
that read only the request, the tools and the decision are computed from the rows. Both models decide on every row
(``evals.relevance.apply_relevance``), and the new one is paired against the old one (B - A) on accuracy, abstention
on cases that need no call, and false abstention on cases that need one, on each suite's test rows and, for BFCL's
categories, on the whole category (the board's figure; train and dev rows included, marked so). The added false
abstention is each model's against the selection alone.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from evals.benchmarks.relevance import load_runs
from evals.metrics import summarize
from evals.relevance import (
    PAIRED_METRICS,
    apply_relevance,
    signals_of,
    test_parts,
    whole_categories,
    whole_parts,
)
from evals.stats import compare_paired
from tool_selection.conversations.summary import format_table
from tool_selection.relevance import RelevanceModel

__all__ = ["compare_models", "findings", "main", "markdown", "matched_threshold"]

_SHORT = {"accuracy": "accuracy", "abstention_accuracy": "abstention", "false_abstention_rate": "false abstention"}


def _rate(summary: Mapping[str, float], metric: str) -> float:
    return 100 * float(summary.get(metric, math.nan))


def matched_threshold(model: RelevanceModel, rows: pd.DataFrame, accuracy: float) -> float:
    """The lowest threshold (of the model's probabilities on ``rows``, and its own) at which ``model`` reaches
    ``accuracy`` on ``rows`` (a share; the highest probability's threshold if it never does)."""
    candidates = sorted({model.threshold, *model.probabilities(signals_of(rows, model.reads)).tolist()})
    candidates = [float(np.nextafter(p, 1.0)) if p != model.threshold else p for p in candidates]
    for threshold in sorted(candidates):
        if summarize(apply_relevance(rows, model, threshold), with_ci=False)["accuracy"] >= accuracy - 1e-9:
            return threshold
    return max(candidates)


def compare_models(runs: Mapping[str, pd.DataFrame], model: RelevanceModel, against: RelevanceModel) -> pd.DataFrame:
    """One row per suite, group and whole BFCL category: the selection alone, each model, and B - A paired."""
    table = []
    parts = {**test_parts(runs), **whole_parts(runs, whole_categories(runs))}
    for name, rows in parts.items():
        alone = summarize(rows, with_ci=False)
        old, new = apply_relevance(rows, against), apply_relevance(rows, model)
        entry: dict[str, object] = {"rows": name, "cases": len(rows)}
        for label, frame in (("old", old), ("new", new)):
            summary = summarize(frame, with_ci=False)
            entry[f"{label} accuracy"] = _rate(summary, "accuracy")
            entry[f"{label} abstention"] = _rate(summary, "abstention_accuracy")
            entry[f"{label} added false abstention"] = (_rate(summary, "false_abstention_rate")
                                                        - _rate(alone, "false_abstention_rate"))
        paired = compare_paired(old, new, PAIRED_METRICS, lower_is_better=frozenset({"false_abstention_rate"}))
        for record in paired.to_dict("records"):
            short = _SHORT[record["metric"]]
            entry[f"{short} B-A"] = 100 * record["difference"]
            entry[f"{short} CI"] = (100 * record["ci_low"], 100 * record["ci_high"])
            entry[f"{short} p"] = record["p_value"]
        table.append(entry)
    return pd.DataFrame(table)


def _cell(value: object) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(f"{v:+.1f}" for v in value) + "]"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.1f}"
    return "-" if value is None else str(value)


def _p(value: object) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


COLUMNS = ("rows", "cases", "old accuracy", "new accuracy", "accuracy B-A", "accuracy CI", "accuracy p",
           "old abstention", "new abstention", "old added false abstention", "new added false abstention",
           "false abstention B-A", "false abstention CI", "false abstention p")


def findings(table: pd.DataFrame) -> str:
    """The rows where B's false abstention or accuracy differs from A's significantly (McNemar p < 0.05)."""
    parts = []
    for row in table.to_dict("records"):
        for metric in ("false abstention", "accuracy"):
            p = row.get(f"{metric} p")
            if isinstance(p, float) and p < 0.05:
                parts.append(f"{metric} on {row['rows']} {row[f'{metric} B-A']:+.1f} points (p {p:.3f})")
    if not parts:
        return "No difference between the two is significant on any row (McNemar p < 0.05)."
    return "Significant differences, B - A: " + "; ".join(parts) + "."


def markdown(table: pd.DataFrame, model: RelevanceModel, against: RelevanceModel, command: str, *,
             title: str, note: str = "") -> str:
    head = [column for column in COLUMNS if column in table]
    body = [{column: (_p(row[column]) if column.endswith(" p") else _cell(row[column])) for column in head}
            for row in table.to_dict("records")]
    lines = [f"## {title}", "", f"<!-- generated by: {command} (kept rows) -->", "",
             f"A (old): `{against.fingerprint}`, {', '.join(against.signals)}, threshold {against.threshold:.3f}, "
             f"fitted on {', '.join(against.trained_on.get('suites', []))}. B (new): `{model.fingerprint}`, "
             f"{', '.join(model.signals)}, threshold {model.threshold:.3f}, fitted on "
             f"{', '.join(model.trained_on.get('suites', []))}. Percentages; *added false abstention* is each "
             "model's against the selection alone on the same rows; B - A is paired (bootstrap interval, McNemar's "
             "p). Rows marked *all splits* hold the category's train and dev cases too (the board's figure).", "",
             format_table(body, head), "", findings(table), *(["", note] if note else [])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.relevance_compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="One run directory per suite (selection alone).")
    parser.add_argument("--model", required=True, help="The new relevance model (B).")
    parser.add_argument("--against", required=True, help="The relevance model it is paired against (A).")
    parser.add_argument("--match", metavar="SUITE", help="Move B's threshold to the lowest at which its accuracy on "
                        "SUITE's rows (all splits) reaches A's: the two compared at one operating point (an analysis "
                        "of the trade-off, not a threshold chosen on dev).")
    parser.add_argument("--title", default="The refitted relevance model against the one it replaces")
    parser.add_argument("--note", default="", help="A paragraph to print under the table.")
    parser.add_argument("--out", type=Path, help="Write the section here (default: print).")
    args = parser.parse_args(argv)
    model, against = RelevanceModel.load(args.model), RelevanceModel.load(args.against)
    runs, _ = load_runs(args.runs)
    if args.match:
        if args.match not in runs:
            parser.error(f"--match {args.match}: no run of that suite (runs: {', '.join(runs)}).")
        target = summarize(apply_relevance(runs[args.match], against), with_ci=False)["accuracy"]
        model = model.with_threshold(matched_threshold(model, runs[args.match], target))
    table = compare_models(runs, model, against)
    command = " ".join(["python -m evals.benchmarks.relevance_compare", *args.runs, "--model", args.model,
                        "--against", args.against, *(["--match", args.match] if args.match else [])])
    text = markdown(table, model, against, command, title=args.title, note=args.note)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
