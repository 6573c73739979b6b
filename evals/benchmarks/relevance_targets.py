"""Where each relevance model stands against #47's targets, read from kept rows (no model runs).

    python -m evals.benchmarks.relevance_targets RUN_DIR... --translated RUN --model LABEL=MODEL.json [...]

RUN_DIR: one per suite, the selection alone with its signals recorded (as ``relevance_compare`` reads them): BFCL's
``irrelevance``, ``simple_python``, ``multiple``, ``parallel`` and ``parallel_multiple`` whole, and the domain suites.
``--translated``: a run of the ``translated`` suite (its overruled calls kept). Each model decides on every row at its
own threshold, its other-language part reading the requests its ``other_language`` signal marks, as the stage does.

| target | rows |
|---|---|
| BFCL ``irrelevance`` abstention >= 85 | the whole category |
| false abstention added <= 2 points on ``simple_python``, ``multiple``, ``parallel``, ``parallel_multiple`` | whole |
| domain abstention >= 60 with false abstention <= 8 | the domain suites' test rows pooled |
| false abstention in each other language within 3 points of English | the ``translated`` suite |
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from evals.benchmarks.relevance import load_runs
from evals.benchmarks.relevance_language import SOURCE, language_rows
from evals.metrics import summarize
from evals.relevance import apply_relevance
from tool_selection.conversations.summary import format_table
from tool_selection.relevance import RelevanceModel

__all__ = ["CALL_CATEGORIES", "Target", "main", "markdown", "target_rows", "targets_table"]

IRRELEVANCE = "bfcl_irrelevance"
CALL_CATEGORIES = ("bfcl_simple_python", "bfcl_multiple", "bfcl_parallel", "bfcl_parallel_multiple")


@dataclass(frozen=True)
class Target:
    """One figure a model is held to: ``value`` in points, met when it is at least (``at_least``) or at most
    ``bound``."""

    name: str
    value: float
    bound: float
    at_least: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))

    @property
    def met(self) -> bool | None:
        if math.isnan(self.value):
            return None
        return self.value >= self.bound if self.at_least else self.value <= self.bound


def _rate(rows: pd.DataFrame, metric: str) -> float:
    return 100 * float(summarize(rows, with_ci=False).get(metric, math.nan))


def target_rows(runs: Mapping[str, pd.DataFrame], translated: pd.DataFrame | None,
                model: RelevanceModel) -> list[Target]:
    """The model's figure for each target whose rows are given."""
    targets = []
    if IRRELEVANCE in runs:
        targets.append(Target(f"{IRRELEVANCE} abstention %", _rate(apply_relevance(runs[IRRELEVANCE], model),
                                                                   "abstention_accuracy"), 85.0, True))
    for name in CALL_CATEGORIES:
        if name in runs:
            added = (_rate(apply_relevance(runs[name], model), "false_abstention_rate")
                     - _rate(runs[name], "false_abstention_rate"))
            targets.append(Target(f"{name} added false abstention, points", added, 2.0, False))
    domain_runs = [rows[rows["split"] == "test"] for name, rows in runs.items() if not name.startswith("bfcl")]
    if domain_runs:
        decided = apply_relevance(pd.concat(domain_runs, ignore_index=True), model)
        targets += [Target("domains abstention %", _rate(decided, "abstention_accuracy"), 60.0, True),
                    Target("domains false abstention %", _rate(decided, "false_abstention_rate"), 8.0, False)]
    if translated is not None:
        rates = translated.groupby("language")["false_abstained"].mean() * 100
        targets += [Target(f"false abstention in {language} - English, points", rates[language] - rates[SOURCE], 3.0,
                           False) for language in sorted(set(rates.index) - {SOURCE})]
    return targets


def targets_table(runs: Mapping[str, pd.DataFrame], translated_run: Path | None,
                  models: Mapping[str, RelevanceModel]) -> pd.DataFrame:
    """One row per target, one column per model: its figure, and whether it meets the target."""
    columns: dict[str, list[Target]] = {}
    for label, model in models.items():
        translated = language_rows(translated_run, model) if translated_run else None
        columns[label] = target_rows(runs, translated, model)
    first = next(iter(columns.values()))
    table = []
    for i, target in enumerate(first):
        entry: dict[str, object] = {"target": target.name,
                                    "bound": f"{'>=' if target.at_least else '<='} {target.bound:g}"}
        for label, targets in columns.items():
            entry[label] = targets[i]
        table.append(entry)
    return pd.DataFrame(table)


def _cell(target: Target) -> str:
    if target.met is None:
        return "-"
    return f"{target.value:.1f} {'yes' if target.met else 'no'}"


def markdown(table: pd.DataFrame, models: Mapping[str, RelevanceModel], command: str, *, title: str,
             note: str = "") -> str:
    head = list(table.columns)
    body = [{column: _cell(value) if isinstance(value, Target) else str(value) for column, value in row.items()}
            for row in table.to_dict("records")]
    described = "; ".join(f"*{label}*: `{model.fingerprint}` ({', '.join(model.signals)}; P < {model.threshold:.3f})"
                          for label, model in models.items())
    lines = [f"## {title}", "", f"<!-- generated by: {command} (kept rows) -->", "", format_table(body, head), "",
             f"Each cell: the figure, then whether it meets the target. {described}.", *(["", note] if note else [])]
    return "\n".join(lines) + "\n"


def _models(specs: Sequence[str], parser: argparse.ArgumentParser) -> dict[str, RelevanceModel]:
    models = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            parser.error(f"--model {spec!r}: write it as LABEL=MODEL.json (for instance default=model.json).")
        models[label] = RelevanceModel.load(path)
    return models


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.benchmarks.relevance_targets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="One run directory per suite (selection alone).")
    parser.add_argument("--translated", type=Path, metavar="RUN", help="A run of the translated suite.")
    parser.add_argument("--model", action="append", required=True, metavar="LABEL=MODEL.json",
                        help="A relevance model to read the rows with, and its column's label (repeatable).")
    parser.add_argument("--title", default="Where each relevance model stands against the targets")
    parser.add_argument("--note", default="", help="A paragraph to print under the table.")
    parser.add_argument("--out", type=Path, help="Write the section here (default: print).")
    args = parser.parse_args(argv)
    models = _models(args.model, parser)
    runs, _ = load_runs(args.runs)
    table = targets_table(runs, args.translated, models)
    command = " ".join(["python -m evals.benchmarks.relevance_targets", *args.runs,
                        *([f"--translated {args.translated}"] if args.translated else []),
                        *(f"--model {shlex.quote(spec)}" for spec in args.model)])
    text = markdown(table, models, command, title=args.title, note=args.note)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
