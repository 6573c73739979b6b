"""``toolsel bench relevance``: a relevance model from runs that recorded the relevance signals, and what it does.

Each RUN_DIR is one suite evaluated with ``--relevance-signals`` over every split (``measure_relevance.sh``). The
model is fitted on the train rows (of ``--fit-suites``, default all), its threshold chosen on the dev rows with
a balanced objective, and it is reported on every suite's test rows against the selection alone: each signal's
AUROC alone and the combination's, and the paired change in accuracy, abstention and false abstention.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import pandas as pd

from evals.benchmarks.report import markdown
from evals.relevance import (
    MODEL_SIGNALS,
    FalseAbstentionCap,
    RelevanceReport,
    fill_decision_signals,
    relevance_report,
    signal_names,
    whole_categories,
)
from evals.relevance_curve import plot_tradeoff, tradeoff_curve
from evals.runner import load_results
from evals.suite import load_suite
from evals.tracking import git_commit
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance import RelevanceModel

__all__ = ["add_arguments", "format_report", "load_runs", "markdown_report", "run_from_args"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="Run directories of 'toolsel eval --split all --relevance-signals ...', one per suite.")
    parser.add_argument("--signals", help="Comma-separated signals the model combines (default: those of "
                                          f"{', '.join(MODEL_SIGNALS)} the runs recorded; every recorded signal's "
                                          "AUROC is reported either way).")
    parser.add_argument("--fit-suites", help="Comma-separated suites whose train and dev rows fit the model and choose "
                                             "its threshold (default: all); every suite's test rows are reported.")
    parser.add_argument("--max-added-false-abstention", type=float, default=5.0, metavar="POINTS",
                        help="The most false abstention (points) the threshold may add on dev (default: 5).")
    parser.add_argument("--cap-per-suite", action="store_true",
                        help="The false abstention cap holds in each fit suite's dev rows too, not only pooled.")
    parser.add_argument("--C", type=float, default=1.0, help="Inverse regularisation strength (default: 1).")
    parser.add_argument("--other-language-signals", metavar="NAMES",
                        help="Also fit, on the same rows, a model of these signals (none that compares words) for "
                             "requests in another language than the tools' documents (the other_language signal).")
    parser.add_argument("--save", metavar="MODEL_JSON", help="Write the fitted model (for toolsel eval --relevance).")
    parser.add_argument("--markdown", metavar="FILE", help="Also write the report as a markdown page.")
    parser.add_argument("--figure", metavar="PNG", help="With --markdown: draw the threshold's trade-off (abstention "
                                                         "against false abstention per group) here and show it.")
    parser.add_argument("--cost", metavar="CSV", help="relevance_cost.csv (python -m evals.benchmarks."
                                                      "relevance_cost) for the page's cost table.")
    parser.add_argument("--cost-note", metavar="TEXT", help="How the cost was measured (the machine, its load).")
    parser.add_argument("--section", action="append", default=[], metavar="MARKDOWN",
                        help="With --markdown: a generated section (a file under results/ that opens with its own ## "
                             "heading, such as python -m evals.benchmarks.relevance_by_size's) to include in the page; "
                             "repeatable.")


def load_runs(run_dirs: list[str]) -> tuple[dict[str, pd.DataFrame], dict[str, dict]]:
    """suite -> rows, and suite -> the run's params, from run directories."""
    runs, params = {}, {}
    for run_dir in run_dirs:
        path = Path(run_dir) / "summary.json"
        summary = json.loads(path.read_text()) if path.is_file() else {}
        suite = (summary.get("params") or {}).get("suite") or Path(run_dir).name
        if suite in runs:
            raise ToolSelectionError(f"Two runs of suite {suite!r}: give one run directory per suite.")
        rows = load_results(run_dir)
        cases = _cases((summary.get("params") or {}).get("suite_ref") or suite)
        if cases is not None:  # signals recorded before they existed, computed from the rows' decisions
            rows = fill_decision_signals(rows, cases)
        runs[suite], params[suite] = rows, {**(summary.get("params") or {}), "run_dir": run_dir}
    return runs, params


def _cases(suite_ref: str) -> dict | None:
    try:
        return {case.id: case for case in load_suite(suite_ref)}
    except ToolSelectionError:
        return None


def run_from_args(args: argparse.Namespace) -> int:
    runs, params = load_runs(args.runs)
    recorded = sorted(set.intersection(*(set(signal_names(rows)) for rows in runs.values())))
    everywhere_or_somewhere = sorted(set.union(*(set(signal_names(rows)) for rows in runs.values())))
    signals = _names(args.signals) or [s for s in MODEL_SIGNALS if s in recorded]
    if not signals:
        raise ToolSelectionError("These runs recorded no relevance signal: evaluate with --relevance-signals cheap.")
    fit = _names(args.fit_suites) or None
    whole = whole_categories(runs)
    report = relevance_report(runs, signals, C=args.C, fit_suites=fit,
                              cap=FalseAbstentionCap(args.max_added_false_abstention / 100, args.cap_per_suite),
                              report_signals=everywhere_or_somewhere, whole=whole,
                              other_language_signals=_names(args.other_language_signals))
    print(format_report(report))
    if args.save:
        print(f"\nrelevance model: {report.model.save(args.save)}")
    if args.markdown:
        figure, curve = None, None
        if args.figure:
            curve = tradeoff_curve(report.model, report.groups)
            title = f"Relevance threshold, {', '.join(sorted(_models(params)))}"
            figure = plot_tradeoff(curve, args.figure, title=title)
            figure = Path(os.path.relpath(figure, Path(args.markdown).parent)).as_posix()
        Path(args.markdown).write_text(markdown_report(report, params, command=_command(args), cost=args.cost,
                                                       cost_note=args.cost_note, figure=figure, curve=curve,
                                                       sections=args.section))
        print(f"report: {args.markdown}")
    return 0


def _names(text: str | None) -> list[str]:
    """A comma-separated flag's names (an empty one is kept, for the check of names to refuse)."""
    return [name.strip() for name in text.split(",")] if text else []


def _command(args: argparse.Namespace) -> str:
    parts = ["toolsel bench relevance", *args.runs]
    parts += [f"--signals {args.signals}"] if args.signals else []
    parts += [f"--fit-suites {args.fit_suites}"] if args.fit_suites else []
    parts += [f"--max-added-false-abstention {args.max_added_false_abstention:g}"] \
        if args.max_added_false_abstention != 5.0 else []
    parts += ["--cap-per-suite"] if args.cap_per_suite else []
    parts += [f"--other-language-signals {args.other_language_signals}"] if args.other_language_signals else []
    parts += [f"--save {args.save}"] if args.save else []
    parts += [f"--cost {args.cost}"] if args.cost else []
    parts += [f"--markdown {args.markdown} --figure {args.figure}"] if args.markdown and args.figure else []
    parts += [f"--cost-note {shlex.quote(args.cost_note)}"] if args.cost_note else []
    parts += [f"--section {section}" for section in args.section]
    return " ".join(parts)


def _points(value: float) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


def _change(row: pd.Series, metric: str) -> str:
    low, high = row[f"{metric}_ci"]
    p = row[f"{metric}_p"]
    return (f"{_points(row[f'{metric}_before'])} -> {_points(row[f'{metric}_after'])} "
            f"({100 * row[f'{metric}_diff']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"
            + (f", p {p:.3g})" if p is not None and not (isinstance(p, float) and math.isnan(p)) else ")"))


def test_table(report: RelevanceReport) -> pd.DataFrame:
    return pd.DataFrame({
        "suite": report.test["suite"], "cases": report.test["cases"],
        "overruled %": [_points(v) for v in report.test["overruled"]],
        "accuracy": [_change(r, "accuracy") for _, r in report.test.iterrows()],
        "abstention": [_change(r, "abstention_accuracy") if not _missing(r, "abstention_accuracy") else "-"
                       for _, r in report.test.iterrows()],
        "false abstention": [_change(r, "false_abstention_rate") if not _missing(r, "false_abstention_rate")
                             else "-" for _, r in report.test.iterrows()],
        "balanced": [f"{_points(r['balanced_accuracy_before'])} -> {_points(r['balanced_accuracy_after'])}"
                     for _, r in report.test.iterrows()],
    })


def classifier_table(report: RelevanceReport) -> pd.DataFrame:
    """``report.classifiers`` in points."""
    return report.classifiers.apply(lambda column: column if column.name == "classifier" else column.map(_points))


def _missing(row: pd.Series, metric: str) -> bool:
    value = row.get(f"{metric}_before")
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_report(report: RelevanceReport) -> str:
    model = report.model
    lines = [f"relevance model {model.fingerprint}: {', '.join(model.signals)}; fitted on "
             f"{model.trained_on.get('rows')} train rows with a call ({model.trained_on.get('relevant')} needing one) "
             f"of {', '.join(model.trained_on.get('suites', []))}",
             "weights (standardised): " + ", ".join(f"{s} {w:+.2f}" for s, w in zip(model.signals, model.coefficients)),
             f"threshold P < {model.threshold:.3f}, chosen on {model.dev.get('rows')} dev rows: balanced accuracy "
             f"{_points(model.dev.get('balanced_accuracy'))}, accuracy {_points(model.dev.get('accuracy'))}, "
             f"abstention {_points(model.dev.get('abstention_accuracy'))}, false abstention "
             f"{_points(model.dev.get('false_abstention_rate'))}",
             "", "AUROC on the test rows where the selector called (0.5: no signal):",
             report.aurocs.to_string(float_format=lambda v: f"{v:.3f}"),
             "", "test: the selection alone -> with the relevance model (points, paired 95% CI, McNemar's p):",
             test_table(report).to_string(index=False),
             "", "other classifiers, fitted and thresholded the same way (test, points after the stage):",
             classifier_table(report).to_string(index=False)]
    return "\n".join(lines)


def _table(frame: pd.DataFrame, *, index: str | None = None, digits: int = 3) -> str:
    frame = frame.reset_index(names=index) if index else frame
    return markdown([{column: (f"{value:.{digits}f}" if isinstance(value, float) else value)
                      for column, value in row.items()} for row in frame.to_dict("records")])


def cost_table(path: str | Path) -> tuple[pd.DataFrame, str]:
    """The cost table from ``relevance_cost.csv`` (``evals.benchmarks.relevance_cost``), and its note."""
    table = pd.read_csv(path)
    summary = table.groupby("config", sort=False).agg(
        cases=("case", "size"), seconds_per_case=("seconds", "mean"), stage_seconds=("stage_seconds", "mean"),
        accuracy=("correct", "mean"), correct=("correct", "sum"), total=("seconds", "sum"))
    summary["ratio"] = summary["seconds_per_case"] / summary.loc["alone", "seconds_per_case"]
    summary["seconds_per_correct"] = summary["total"] / summary["correct"]
    summary["accuracy"] = [_points(v) for v in summary["accuracy"]]
    note = (f"From `{path}`: the same {int(summary['cases'].iloc[0])} cases answered alone and with the stage in "
            "alternating order by `python -m evals.benchmarks.relevance_cost`; ratio is seconds per case against "
            "the selection alone in the same run.")
    return summary.drop(columns=["correct", "total"]).reset_index(), note


def _targets(irrelevance: float, multiple: float, domain_accuracy: float) -> tuple[tuple[str, str, str, float], ...]:
    return (("bfcl_irrelevance (all splits)", "abstention_accuracy", ">=", irrelevance),
            ("bfcl_multiple (all splits)", "accuracy", ">=", multiple),
            ("domains", "abstention_accuracy", ">=", 60.0),
            ("domains", "false_abstention_rate", "<=", 10.0),
            ("domains", "accuracy", ">=", domain_accuracy))


TARGETS = {  # issue 29's per model: (row of the report, metric, at least / at most, target in points)
    "local:qwen2.5-coder-0.5b": _targets(80.0, 77.0, 35.0),
    "local:qwen2.5-coder-1.5b": _targets(85.0, 90.0, 65.0),
}


def target_table(report: RelevanceReport, model: str) -> pd.DataFrame:
    """Each of ``model``'s targets the report's rows can answer: the figure with the stage, and whether it is met."""
    rows = report.test.set_index("suite")
    table = []
    for suite, metric, sense, target in TARGETS.get(model, ()):
        if suite not in rows.index or f"{metric}_after" not in rows:
            continue
        value = 100 * float(rows.loc[suite, f"{metric}_after"])
        met = value >= target if sense == ">=" else value <= target
        table.append({"row": suite, "metric": metric, "target": f"{sense} {target:g}", "with the stage": f"{value:.1f}",
                      "met": "yes" if met else f"no ({value - target:+.1f})"})
    return pd.DataFrame(table)


def _shipped_note(model, params: dict[str, dict]) -> str:
    from tool_selection.relevance import shipped_relevance_model

    for name in sorted({str(p.get("model")) for p in params.values()}):
        shipped = shipped_relevance_model(name)
        if shipped is not None:
            same = shipped.fingerprint == model.fingerprint
            return (f" (the model shipped for {name}, `--relevance auto`)" if same else
                    f" (not the one shipped for {name}, {shipped.fingerprint})")
    return ""


def _classifier_part(report: RelevanceReport) -> list[str]:
    return ["## Other classifiers, same protocol", "", _table(classifier_table(report)), "",
            "Each fitted on the same train rows, its threshold chosen on the same dev rows with the same limit on "
            "added false abstention, then read on the pooled test rows (points, with the stage). Gradient boosting "
            "is scikit-learn's `HistGradientBoostingClassifier` with its defaults and balanced classes; only the "
            "logistic regression ships, as a JSON of its coefficients.", ""]


def _models(params: dict[str, dict]) -> set[str]:
    return {str(p.get("model")) for p in params.values()}


TABLE_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)  # on CURVE_THRESHOLDS' grid


def _tradeoff_part(figure: str | None, curve: pd.DataFrame | None) -> list[str]:
    """The threshold's trade-off: the figure of ``curve``, and a table of a few of its thresholds per group."""
    if figure is None or curve is None or curve.empty:
        return []
    curve = curve[curve["operating"] | curve["threshold"].isin(TABLE_THRESHOLDS)]
    curve = curve.assign(threshold=[f"{t:.3f}{' (shipped)' if chosen else ''}"
                                    for t, chosen in zip(curve["threshold"], curve["operating"], strict=True)])
    table = pd.DataFrame({"group": curve["group"], "threshold": curve["threshold"],
                          "abstention %": curve["abstention"].map(_points),
                          "false abstention %": curve["false_abstention"].map(_points),
                          "accuracy %": curve["accuracy"].map(_points)})
    return ["## The threshold's trade-off", "", f"![abstention against false abstention]({figure})", "",
            _table(table), "",
            "Test rows pooled per group, the model above at each threshold (a call whose P(relevant) is below it "
            "keeps no call); the star is the threshold chosen on dev. `toolsel eval --relevance-threshold P` runs "
            "another point.", ""]


def markdown_report(report: RelevanceReport, params: dict[str, dict], *, command: str,
                    cost: str | Path | None = None, cost_note: str | None = None, figure: str | None = None,
                    curve: pd.DataFrame | None = None, sections: Sequence[str] = ()) -> str:
    """The report as a page: tables first, then where the rows come from; ``figure`` and its ``curve``
    (``tradeoff_curve``): the threshold's trade-off; ``sections``: generated markdown files included (snippets)
    before the model."""
    model = report.model
    models = sorted(_models(params))
    targets = target_table(report, models[0]) if len(models) == 1 else pd.DataFrame()
    provenance = pd.DataFrame([{"suite": suite, "run": p.get("run_dir"), "model": p.get("model"),
                                "strategy": p.get("strategy"), "split": p.get("split"), "rows": p.get("cases"),
                                "commit": p.get("git_commit")} for suite, p in params.items()])
    left_out = [name for name in report.aurocs.index if name != "combined" and name not in model.signals]
    target_part: list[str] = []
    if len(targets):
        target_part = ["## Against the targets", "", _table(targets), ""]
        if "domains" in set(targets["row"]):
            target_part += ["The *domains* row pools the domain suites whose test rows the runs hold.", ""]
    cost_part: list[str] = []
    if cost is not None:
        table, note = cost_table(cost)
        cost_part = ["## What it costs", "", _table(table), "", f"{note} {cost_note or ''}".strip(), ""]
    return "\n".join([
        f"# Relevance: {', '.join(models)}", "",
        f"Generated by `{command}` on {date.today().isoformat()} at commit {git_commit()}.", "",
        "## What the relevance model does on test", "",
        _table(test_table(report)), "",
        f"Relevance model {model.fingerprint}{_shipped_note(model, params)}. "
        f"Threshold P < {model.threshold:.3f}, chosen on dev (balanced accuracy "
        f"{_points(model.dev.get('balanced_accuracy'))}, at most "
        f"{_points(model.dev.get('max_added_false_abstention'))} points of false abstention added there"
        f"{', in each suite too' if model.dev.get('capped_per_suite') else ''}); fitted "
        f"on {model.trained_on.get('rows')} train rows of {', '.join(model.trained_on.get('suites', []))}. "
        "Rows marked *(all splits)* score a whole BFCL category as its leaderboard does, train and dev rows "
        "included: the model was fitted and its threshold chosen on those, so they read a little high. Figures "
        "are points; in brackets the paired 95% interval of the change, then McNemar's p.", "",
        *target_part,
        *_tradeoff_part(figure, curve),
        *cost_part,
        *_classifier_part(report),
        "## Each signal's AUROC (test rows where the selector called; 0.5 means no signal)", "",
        _table(report.aurocs, index="signal"), "",
        (f"Recorded but left out of the model: {', '.join(left_out)} (see `evals.relevance.MODEL_SIGNALS` for "
         "why)." if left_out else ""), "",
        *(line for section in sections for line in (f'--8<-- "{Path(section).as_posix()}"', "")),
        "## The model", "",
        _weights(model), "",
        *_other_language_part(model),
        "## Provenance", "", _table(provenance), ""])


def _weights(model: RelevanceModel) -> str:
    return _table(pd.DataFrame({"signal": model.signals, "weight (standardised)": model.coefficients,
                                "mean": model.means, "scale": model.scales}))


def _other_language_part(model: RelevanceModel) -> list[str]:
    inner = model.other_language
    if inner is None:
        return []
    return ["## The model for requests in another language", "",
            "Where the `other_language` signal marks the request as written in another language than the tools' "
            "documents (`tool_selection.relevance.language`), this model reads it instead: fitted on the same train "
            "rows without the signals that compare words, its threshold chosen on the same dev rows by the same "
            f"rule (P < {inner.dev.get('own_threshold', math.nan):.3f}; dev balanced accuracy "
            f"{_points(inner.dev.get('balanced_accuracy'))}), then its intercept moved so that the threshold above "
            "takes the same decisions.", "", _weights(inner), ""]
