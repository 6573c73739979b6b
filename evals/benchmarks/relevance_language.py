"""Relevance across languages: the same requests asked in English, Spanish and Chinese (the ``translated`` suite),
each language paired with English case by case. From kept runs (no model runs).

    python -m evals.benchmarks.relevance_language runs/translated-0.5b --out results/relevance/language-0.5b.md
    python -m evals.benchmarks.relevance_language RUN --model refit.json   # the same rows under another relevance model

Per language: false abstention (a request that needs a call answered with none) and the part of it the relevance
stage made (the selection called, the stage overruled), abstention on the requests that need none, full match, the
mean relevance probability of the requests that need a call; each against English with its paired interval and
McNemar's p. Then each recorded signal's AUROC per language, over the requests where the selection called.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from evals.relevance import apply_relevance, fill_decision_signals, needs_call, signal_aurocs, signal_names
from evals.rescore import cases_of_run
from evals.runner import load_results
from evals.stats import compare_paired
from tool_selection.conversations.summary import format_table
from tool_selection.relevance import RelevanceModel
from tool_selection.relevance.signals import DECISION_SIGNALS
from tool_selection.relevance.stage import OVERRULED_CALLS

__all__ = ["against_run", "aurocs_by_language", "by_language", "language_rows", "main", "markdown"]

SOURCE = "en"
PROBABILITY = "relevance_p"
PAIRED = {"false abstention": "false_abstained", "abstention": "abstained", "full match": "full_match"}


def language_rows(run: Path, model: RelevanceModel | None = None, *,
                  other_language: RelevanceModel | None = None) -> pd.DataFrame:
    """A run's rows with each case's ``language`` and ``source`` id, and ``selection_called`` (the selection made a
    call, whether or not the relevance stage kept it). With ``model``, the rows as that relevance model would have
    left the selection's decisions (its own probability and threshold); with ``other_language``, the requests not
    in English as that one would have (each case's language read from its id, as a perfect language check would)."""
    rows = load_results(run)
    source, language = rows["id"].str.rsplit(".", n=1).str[0], rows["id"].str.rsplit(".", n=1).str[1]
    if language.isna().any():
        raise SystemExit(f"{run}: these rows are not the translated suite's (ids end in .en, .es, ...)")
    predicted = rows["predicted"].fillna("[]").astype(str).str.strip()
    rows = rows.assign(source=source, language=language, selection_called=(predicted != "[]") | _overruled(rows))
    if model is not None or other_language is not None:  # a call put back is not scored again: no full match
        reads = {*(model.reads if model else ()), *(other_language.reads if other_language else ())}
        rows = _with_decision_signals(run, rows, [name for name in DECISION_SIGNALS if name in reads])
        alone, english = _selection_alone(rows), rows["language"] == SOURCE
        read = [apply_relevance(alone[part], reader) if reader else rows[part]
                for part, reader in ((english, model), (~english, other_language or model))]
        rows = pd.concat(read).loc[rows.index].drop(columns=["full_match"])
    need, empty = needs_call(rows).astype(bool), (rows["predicted"].fillna("[]").astype(str).str.strip() == "[]")
    return rows.assign(false_abstained=empty.astype(float).where(need), abstained=empty.astype(float).where(~need))


def _with_decision_signals(run: Path, rows: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """``rows`` with the signals among ``names`` that read only the request, the tools and the decision computed
    where the run did not record them (a signal added since)."""
    if not names or not (run / "summary.json").exists():
        return rows
    return fill_decision_signals(rows, cases_of_run(run), names)


def _overruled(rows: pd.DataFrame) -> pd.Series:
    """Whether the relevance stage dropped the row's calls (kept in ``OVERRULED_CALLS``)."""
    calls = rows[OVERRULED_CALLS] if OVERRULED_CALLS in rows else pd.Series(None, index=rows.index)
    return calls.fillna("").astype(str).str.startswith("[{")


def _selection_alone(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows as the selection alone answered: the overruled calls put back (their scores are not recomputed, so
    only abstention and the relevance columns are read from rows that pass through here)."""
    return rows.assign(predicted=rows["predicted"].where(~_overruled(rows), rows.get(OVERRULED_CALLS)))


def _paired(rows: pd.DataFrame, language: str) -> dict[str, object]:
    english = rows[rows["language"] == SOURCE].assign(id=lambda r: r["source"])
    other = rows[rows["language"] == language].assign(id=lambda r: r["source"])
    table = compare_paired(english, other, PAIRED).set_index("metric")
    cells = {}
    for name in PAIRED:
        if name in table.index:
            entry = table.loc[name]
            cells[f"{name} vs en"] = (f"{100 * entry['difference']:+.1f} [{100 * entry['ci_low']:+.1f}, "
                                      f"{100 * entry['ci_high']:+.1f}], p {entry['p_value']:.3g}")
    return cells


def by_language(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per language (English first): the rates above, each other language paired with English."""
    table = []
    for language in [SOURCE, *sorted(set(rows["language"]) - {SOURCE})]:
        part = rows[rows["language"] == language]
        need = part["false_abstained"].notna()
        stage = (part["false_abstained"] == 1) & part["selection_called"]
        entry = {"language": language, "need a call": int(need.sum()), "need none": int((~need).sum()),
                 "selection made no call %": 100 * float((~part["selection_called"][need]).mean()),
                 "false abstention %": 100 * float(part["false_abstained"].mean()),
                 "by the relevance stage %": 100 * float(stage[need].mean()),
                 "abstention %": 100 * float(part["abstained"].mean()),
                 "full match %": 100 * float(part["full_match"].mean()) if "full_match" in part else math.nan,
                 "mean P, need a call": float(pd.to_numeric(part[PROBABILITY], errors="coerce")[need].mean())
                 if PROBABILITY in part else math.nan}
        table.append({**entry, **({} if language == SOURCE else _paired(rows, language))})
    return pd.DataFrame(table)


AGAINST = {"full match": "full_match", "right tools": "tool_exact", **{k: v for k, v in PAIRED.items() if k != "full match"}}


def against_run(rows: pd.DataFrame, before: pd.DataFrame) -> pd.DataFrame:
    """Per language, ``rows`` against ``before`` (another run of the same cases, such as an earlier relevance
    model's), paired case by case: each rate before and after, the change with its interval and McNemar's p."""
    table = []
    for language in [SOURCE, *sorted(set(rows["language"]) - {SOURCE})]:
        paired = compare_paired(before[before["language"] == language], rows[rows["language"] == language], AGAINST)
        for entry in paired.itertuples(index=False):
            table.append({"language": language, "metric": entry.metric, "cases": entry.n,
                          "before %": 100 * entry.a, "after %": 100 * entry.b,
                          "change [95% CI]": f"{100 * entry.difference:+.1f} [{100 * entry.ci_low:+.1f}, "
                                             f"{100 * entry.ci_high:+.1f}]",
                          "McNemar p (before only / after only)": f"{entry.p_value:.3g} ({entry.a_only} / "
                                                                  f"{entry.b_only})"})
    return pd.DataFrame(table)


def aurocs_by_language(rows: pd.DataFrame) -> pd.DataFrame:
    """Each recorded signal's AUROC (and the relevance probability's) per language, over the requests where the
    selection called: the decisions a relevance model judges."""
    names = signal_names(rows)
    rows = rows.assign(**{f"rel_{PROBABILITY}": rows[PROBABILITY]}) if PROBABILITY in rows else rows
    names += [PROBABILITY] if PROBABILITY in rows else []
    table = []
    for language in [SOURCE, *sorted(set(rows["language"]) - {SOURCE})]:
        part = rows[(rows["language"] == language) & rows["selection_called"]].assign(predicted="[{}]", parse_error=None)
        need = needs_call(part)
        table.append({"language": language, "calls": len(part), "needing none": int((need == 0).sum()),
                      **signal_aurocs(part, names)})
    return pd.DataFrame(table)


def _cell(value: object, column: str) -> str:
    if isinstance(value, (float, np.floating)):
        return "-" if math.isnan(value) else f"{value:.1f}" if column.endswith("%") else f"{value:.3f}"
    return str(value)


def _table(frame: pd.DataFrame) -> str:
    return format_table([{c: _cell(v, c) for c, v in zip(frame.columns, row)} for row in frame.itertuples(index=False)],
                        list(frame.columns))


def markdown(rows: pd.DataFrame, *, title: str, command: str, note: str = "", aurocs: bool = True,
             before: pd.DataFrame | None = None) -> str:
    lines = [f"## {title}", "", f"<!-- generated by: {command} (kept rows) -->", "",
             "The `translated` suite: 64 test cases of four domain suites, each asked in English, Spanish and Chinese "
             "with the same English tool descriptions and the same expected answer (its card says how they were "
             "chosen and written). Points; each language against the same requests in English, paired (95% bootstrap "
             "interval, McNemar's p).", "", _table(by_language(rows))]
    if before is not None:
        lines += ["", "Against the run given as `--against` (the same cases), per language, paired:", "",
                  _table(against_run(rows, before))]
    if aurocs:
        lines += ["", "Each signal's AUROC per language, over the requests where the selection called (0.5: no signal):",
                  "", _table(aurocs_by_language(rows))]
    return "\n".join([*lines, *(["", note] if note else [])]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="Run folders of the translated suite (one model).")
    parser.add_argument("--model", type=Path, help="Read the rows under this relevance model instead of the run's.")
    parser.add_argument("--other-language-model", type=Path,
                        help="Read the requests that are not in English under this relevance model.")
    parser.add_argument("--against", type=Path, help="A run of the same cases to pair with, per language.")
    parser.add_argument("--title", default="Requests in other languages")
    parser.add_argument("--note", default="", help="A paragraph to print under the tables.")
    parser.add_argument("--out", type=Path, help="Write the section here (default: print it).")
    args = parser.parse_args(argv)
    model = RelevanceModel.load(args.model) if args.model else None
    other = RelevanceModel.load(args.other_language_model) if args.other_language_model else None
    rows = pd.concat([language_rows(run, model, other_language=other) for run in args.runs], ignore_index=True)
    command = "python -m evals.benchmarks.relevance_language " + " ".join(
        [*(str(run) for run in args.runs), *([f"--model {args.model}"] if args.model else []),
         *([f"--other-language-model {args.other_language_model}"] if other else []),
         *([f"--against {args.against}"] if args.against else []),
         *([f"--title {shlex.quote(args.title)}"] if args.title != parser.get_default("title") else [])])
    before = language_rows(args.against) if args.against else None
    text = markdown(rows, title=args.title, command=command, note=args.note, aurocs=model is None and other is None,
                    before=before)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
