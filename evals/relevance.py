"""Fitting, choosing and reading a relevance model from evaluation rows, offline.

Run the selector once per suite with its relevance signals recorded (``toolsel eval --relevance-signals cheap
--split all``): every row then holds the decision as made and each signal (``rel_<name>`` columns). A relevance
model drops the calls of a decision whose P(some tool fits) is below its threshold; such a row becomes an
abstention (right on a case that needs no call, a false abstention elsewhere), so every model and threshold is
scored without another model call:

- the model is fitted on the rows of train splits where the selector called a tool (``fit_on_rows``);
- its threshold is chosen on dev with a balanced objective (``choose_threshold``): the mean of the accuracy on
  cases that need a call and on cases that need none, so that refusing everything cannot win;
- it is reported on test against the selection alone, paired (``compare_on_test``), per suite and pooled.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from evals.gate import abstain_where
from evals.metrics import balanced_accuracy, summarize
from evals.stats import compare_paired
from evals.suite import Case, registry_for
from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance import SIGNAL_PREFIX, Evidence, RelevanceModel, compute_signals, fit_relevance_model
from tool_selection.relevance.logistic import stored
from tool_selection.relevance.signals import DECISION_SIGNALS

__all__ = [
    "BoostedRelevance",
    "FalseAbstentionCap",
    "RelevanceChoice",
    "RelevanceReport",
    "SUITE_COLUMN",
    "apply_relevance",
    "choose_threshold",
    "called",
    "compare_classifiers",
    "fill_decision_signals",
    "fit_on_rows",
    "needs_call",
    "relevance_report",
    "signal_aurocs",
    "signal_names",
    "suite_groups",
    "test_parts",
    "whole_categories",
    "whole_parts",
]

MODEL_SIGNALS = ("bm25_best", "call_open", "dense_best", "dense_chosen", "grounded_args", "name_logprob",
                 "name_logprob_min")
"""The signals a relevance model combines unless told otherwise. Left out, each with its row in the report:
``tools_listed`` (on BFCL it tells the categories apart by their size, one function in ``irrelevance`` and 2-4 in
``multiple``, which no deployment shares), ``unlisted`` (constant under a strict grammar) and ``verify`` (no signal
for the 0.5B model, AUROC about 0.5, for one more model question per case) and ``bm25_background`` (its word weights do
not depend on the catalog's size, but with one tool listed it tells requests apart less well than ``bm25_best``,
and a model refitted with it in ``bm25_best``'s place abstains more wrongly at the same BFCL ``irrelevance``: the
relevance page's refit sections). ``other_language`` is not weighed: it chooses which model reads the request
(``RelevanceModel.other_language``, fitted with ``--other-language-signals``)."""

PAIRED_METRICS = {"accuracy": "full_match", "abstention_accuracy": "abstention_correct",
                  "false_abstention_rate": "false_abstention"}


def signal_names(rows: pd.DataFrame) -> list[str]:
    """The relevance signals recorded in ``rows`` (``rel_<name>`` columns)."""
    return [column[len(SIGNAL_PREFIX):] for column in rows.columns if column.startswith(SIGNAL_PREFIX)]


def _require_signals(rows: pd.DataFrame, names: Sequence[str]) -> None:
    missing = [name for name in names if f"{SIGNAL_PREFIX}{name}" not in rows]
    if missing:
        raise ToolSelectionError(f"These rows hold no {', '.join(missing)} signal: evaluate with "
                                 f"--relevance-signals {','.join(names)} (recorded per case as rel_<name>).")


def needs_call(rows: pd.DataFrame) -> np.ndarray:
    """1 for the cases whose expected answer calls a tool, 0 for those that need none."""
    return rows["abstention_correct"].isna().to_numpy(dtype=int)


def called(rows: pd.DataFrame) -> np.ndarray:
    """Whether the selector's own decision called a tool (what a relevance model can overrule)."""
    predicted = rows["predicted"].fillna("[]").astype(str).str.strip()
    return (predicted != "[]").to_numpy() & rows["parse_error"].isna().to_numpy()


def signals_of(rows: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    _require_signals(rows, names)
    return pd.DataFrame({name: pd.to_numeric(rows[f"{SIGNAL_PREFIX}{name}"], errors="coerce").to_numpy()
                         for name in names})


def fill_decision_signals(rows: pd.DataFrame, cases: Mapping[str, Case],
                          names: Sequence[str] = DECISION_SIGNALS) -> pd.DataFrame:
    """``rows`` with each of ``names`` (signals that read only the request, the tools and the decision: by default
    all of them, ``DECISION_SIGNALS``) computed where its column is missing and where a row lacks it (rows spliced
    from runs that recorded other signals), from each row's case (by id) and recorded calls: no model call."""
    unknown = sorted(set(names) - set(DECISION_SIGNALS))
    if unknown:
        raise ToolSelectionError(f"{', '.join(unknown)} cannot be computed from kept rows: they read the answer or "
                                 f"call a model. These can: {', '.join(DECISION_SIGNALS)}.")
    missing = [name for name in names if f"{SIGNAL_PREFIX}{name}" not in rows
               or rows[f"{SIGNAL_PREFIX}{name}"].isna().any()]
    if not missing:
        return rows
    values = []
    for record in rows.to_dict("records"):
        case = cases.get(record["id"])
        if case is None:
            raise ToolSelectionError(f"Row {record['id']!r} has no case in the suite given; fill its signals from "
                                     "the suite it was evaluated on.")
        calls = [ToolCall.model_validate(call) for call in json.loads(record.get("predicted") or "[]")]
        evidence = Evidence(request=case.prompt, registry=registry_for(case),
                            decision=MultiToolDecision(tool_calls=calls))
        values.append(compute_signals(evidence, missing))
    out = rows.copy()
    for name in missing:
        computed = pd.Series([v[name] for v in values], index=rows.index, dtype=float)
        column = f"{SIGNAL_PREFIX}{name}"
        out[column] = pd.to_numeric(out[column], errors="coerce").fillna(computed) if column in out else computed
    return out


def fit_on_rows(train: pd.DataFrame, names: Sequence[str], *, C: float = 1.0,
                trained_on: Mapping[str, object] | None = None) -> RelevanceModel:
    """A relevance model fitted on the train rows where the selector called a tool."""
    if "split" in train and set(train["split"]) - {"train"}:
        raise ToolSelectionError(f"A relevance model is fitted on train rows only; these rows hold splits "
                                 f"{sorted(set(train['split']))}.")
    rows = train[called(train)]
    return fit_relevance_model(signals_of(rows, names), needs_call(rows), names, C=C,
                               trained_on={**(trained_on or {}), "split": "train"})


def apply_relevance(rows: pd.DataFrame, model: RelevanceModel, threshold: float | None = None) -> pd.DataFrame:
    """``rows`` as they would be with the model deciding at ``threshold`` (default: its own): a call whose
    P(relevant) is below it becomes an abstention. Adds ``relevance_p`` and ``relevance_overruled``."""
    threshold = model.threshold if threshold is None else threshold
    probabilities = model.probabilities(signals_of(rows, model.reads))
    overruled = called(rows) & (probabilities < threshold)
    out = abstain_where(rows, overruled)
    out["relevance_p"] = probabilities
    out["relevance_overruled"] = overruled.astype(float)
    return out.drop(columns=["gate_closed"], errors="ignore")


@dataclass(frozen=True)
class RelevanceChoice:
    model: RelevanceModel  # with the chosen threshold
    sweep: pd.DataFrame  # dev figures per threshold


MAX_ADDED_FALSE_ABSTENTION = 0.05
SUITE_COLUMN = "fit_suite"  # each fit row's suite, for a threshold capped per suite


@dataclass(frozen=True)
class FalseAbstentionCap:
    """The most false abstention a threshold may add on dev (a fraction), pooled and, where ``per_suite``, in each
    fit suite too (``choose_threshold``)."""

    most: float = MAX_ADDED_FALSE_ABSTENTION
    per_suite: bool = False


def choose_threshold(model: RelevanceModel, dev: pd.DataFrame, thresholds: Iterable[float] | None = None, *,
                     cap: FalseAbstentionCap = FalseAbstentionCap()) -> RelevanceChoice:
    """The threshold with the best balanced accuracy on ``dev`` among those that add at most ``cap.most`` to the
    selection's own false abstention there (a relevance stage that gains by refusing requests that need a call is
    not wanted); ties: the lowest, which overrules least. ``cap.per_suite``: in each suite too (the
    ``SUITE_COLUMN`` of ``dev``, among the suites with requests that need a call), not only pooled."""
    max_added_false_abstention, per_suite = cap.most, cap.per_suite
    if per_suite and SUITE_COLUMN not in dev:
        raise ToolSelectionError(f"A cap per suite needs the dev rows' suites (a {SUITE_COLUMN!r} column): "
                                 "relevance_report adds it.")
    own = {name: summarize(rows, with_ci=False).get("false_abstention_rate", math.nan)
           for name, rows in dev.groupby(SUITE_COLUMN)} if per_suite else {}
    probabilities = model.probabilities(signals_of(dev, model.reads))
    if thresholds is None:
        candidates = np.unique(probabilities[called(dev)])
        above = [_between(top, 1.0) if top < 1.0 else 1.0 for top in candidates[-1:]]
        thresholds = [0.0, *map(_between, candidates[:-1], candidates[1:]), *above]
    rows = []
    for threshold in sorted(set(float(t) for t in thresholds)):
        table = apply_relevance(dev, model, threshold)
        summary = summarize(table, with_ci=False)
        rows.append({"threshold": threshold, "balanced_accuracy": balanced_accuracy(table),
                     "accuracy": summary["accuracy"],
                     "abstention_accuracy": summary.get("abstention_accuracy", math.nan),
                     "false_abstention_rate": summary.get("false_abstention_rate", math.nan),
                     "overruled": float(table["relevance_overruled"].mean()),
                     **({"most_added_in_a_suite": _most_added(table, own)} if per_suite else {})})
    sweep = pd.DataFrame(rows)
    baseline = summarize(dev, with_ci=False).get("false_abstention_rate", math.nan)
    allowed = sweep["false_abstention_rate"].fillna(0.0) <= (0.0 if math.isnan(baseline) else baseline) \
        + max_added_false_abstention + 1e-9
    if per_suite:
        allowed &= sweep["most_added_in_a_suite"].fillna(0.0) <= max_added_false_abstention + 1e-9
    sweep["allowed"] = allowed
    candidates = sweep[allowed] if allowed.any() else sweep.iloc[:1]
    best = candidates["balanced_accuracy"].max()
    threshold = float(candidates.loc[np.isclose(candidates["balanced_accuracy"], best), "threshold"].min())
    chosen = sweep[sweep["threshold"] == threshold].iloc[0]
    dev_figures = {key: round(float(chosen[key]), 6) for key in chosen.index if key not in ("threshold", "allowed")}
    dev_figures["max_added_false_abstention"] = max_added_false_abstention
    if per_suite:
        dev_figures["capped_per_suite"] = True
    return RelevanceChoice(model.with_threshold(min(1.0, threshold), {"rows": len(dev), **dev_figures}), sweep)


def _most_added(table: pd.DataFrame, own: Mapping[str, float]) -> float:
    """The most false abstention a relevance stage adds in one suite of ``table`` over the selection's own there
    (``own``: suite -> its false abstention; NaN where no request needs a call)."""
    added = [summarize(rows, with_ci=False).get("false_abstention_rate", math.nan) - own[name]
             for name, rows in table.groupby(SUITE_COLUMN) if not math.isnan(own[name])]
    return max(added, default=0.0)


def fit_other_language(model: RelevanceModel, part: Mapping[str, pd.DataFrame], signals: Sequence[str], *,
                       C: float = 1.0, cap: FalseAbstentionCap = FalseAbstentionCap()) -> RelevanceModel:
    """``model`` with an ``other_language`` model for requests in another language than the tools' documents:
    fitted on the same train rows (``part["train"]``) with ``signals`` (none that compares words), its threshold
    chosen on the same dev rows by the same rule, then its intercept moved by the difference of the two thresholds'
    log-odds, so that ``model``'s threshold takes the same decisions as its own."""
    if not 0.0 < model.threshold < 1.0:
        raise ToolSelectionError(f"The relevance model's threshold {model.threshold:g} overrules no call or every "
                                 "call, so a model for other languages cannot be set to decide at it: choose its "
                                 "threshold on dev first (choose_threshold).")
    inner = choose_threshold(fit_on_rows(part["train"], signals, C=C, trained_on=model.trained_on), part["dev"],
                             cap=cap).model
    shift = _logit(model.threshold) - _logit(inner.threshold)
    moved = inner.model_dump(exclude_none=True) | {"intercept": stored(inner.intercept + shift),
                                                   "threshold": model.threshold,
                                                   "dev": {**inner.dev, "own_threshold": inner.threshold}}
    return RelevanceModel.model_validate(model.model_dump(exclude_none=True) | {"other_language": moved})


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def _between(low: float, high: float) -> float:
    """The midpoint of two neighbouring probabilities to 6 significant digits (the midpoint itself if rounding
    leaves the gap): a threshold that bits recomputed on another CPU do not move."""
    middle = (low + high) / 2
    rounded = stored(middle)
    return rounded if low < rounded < high else middle


def signal_aurocs(rows: pd.DataFrame, names: Sequence[str], *, only_called: bool = True) -> dict[str, float]:
    """Each signal's AUROC for telling cases that need a call from those that need none (0.5: no signal; below
    0.5: the signal runs the other way), over the rows where the selector called (``only_called``) or all rows."""
    from sklearn.metrics import roc_auc_score

    subset = rows[called(rows)] if only_called else rows
    labels, values = needs_call(subset), signals_of(subset, names)
    aurocs = {}
    for name in names:
        finite = np.isfinite(values[name].to_numpy())
        kinds = set(labels[finite].tolist())
        aurocs[name] = float(roc_auc_score(labels[finite], values[name].to_numpy()[finite])) if len(kinds) == 2 \
            else math.nan
    return aurocs


def compare_on_test(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The selection alone (A) against it with the relevance model (B), paired, on accuracy, abstention and
    false abstention."""
    return compare_paired(before, after, PAIRED_METRICS, lower_is_better=frozenset({"false_abstention_rate"}))


@dataclass(frozen=True)
class RelevanceReport:
    """A relevance model fitted on the runs' train rows, its threshold chosen on their dev rows, and what it does
    on their test rows, per suite and pooled."""

    model: RelevanceModel
    aurocs: pd.DataFrame  # signal x (suite | pooled), on the test rows where the selector called
    sweep: pd.DataFrame  # the dev sweep
    test: pd.DataFrame  # per suite and pooled: before, after, paired differences
    classifiers: pd.DataFrame  # the logistic regression against gradient boosting, same protocol
    groups: Mapping[str, pd.DataFrame] = field(default_factory=dict)  # test rows pooled: bfcl, domains, pooled


def relevance_report(runs: Mapping[str, pd.DataFrame], signals: Sequence[str], *, C: float = 1.0,
                     fit_suites: Sequence[str] | None = None, cap: FalseAbstentionCap = FalseAbstentionCap(),
                     report_signals: Sequence[str] | None = None,
                     whole: Sequence[str] = (), other_language_signals: Sequence[str] = ()) -> RelevanceReport:
    """``runs``: suite name -> its rows (with the signals recorded). The model combines ``signals``; it is fitted
    on the train rows of ``fit_suites`` (default: every suite with train rows), its threshold chosen on their dev
    rows (``choose_threshold``: at most ``cap`` more false abstention on dev), and it is
    reported on every suite's test rows, and on all the rows of the suites in ``whole`` (train and dev included,
    marked so). AUROCs alone: ``report_signals`` (default: ``signals``), where the rows hold them. With
    ``other_language_signals``, the model reads requests in another language with a second model of those
    (``fit_other_language``)."""
    fit_suites = list(fit_suites or [name for name, rows in runs.items() if (rows["split"] == "train").any()])
    unknown = [name for name in fit_suites if name not in runs]
    if unknown:
        raise ToolSelectionError(f"No rows for {', '.join(unknown)} (runs given: {', '.join(runs)}).")
    part = {split: pd.concat([_split(runs[name], split).assign(**{SUITE_COLUMN: name}) for name in fit_suites],
                             ignore_index=True) for split in ("train", "dev")}
    model = fit_on_rows(part["train"], signals, C=C, trained_on={"suites": fit_suites})
    choice = choose_threshold(model, part["dev"], cap=cap)
    if other_language_signals:
        choice = replace(choice, model=fit_other_language(choice.model, part, other_language_signals, C=C, cap=cap))
    tests = test_parts(runs)
    report_signals = list(report_signals or signals)
    aurocs = pd.DataFrame({name: signal_aurocs(rows, [s for s in report_signals if f"{SIGNAL_PREFIX}{s}" in rows])
                           for name, rows in tests.items()}).reindex(report_signals)
    aurocs.loc["combined"] = {name: _combined_auroc(choice.model, rows) for name, rows in tests.items()}
    classifiers = compare_classifiers(choice.model, part, tests, cap)
    tests.update(whole_parts(runs, whole))
    test = pd.DataFrame([_test_row(name, rows, choice.model) for name, rows in tests.items()])
    pooled = {group: tests[group] for group in suite_groups(list(runs)) if group in tests}
    return RelevanceReport(choice.model, aurocs, choice.sweep, test, classifiers, pooled)


@dataclass(frozen=True)
class BoostedRelevance:
    """A gradient-boosted relevance model, scored offline beside the logistic regression (what ships is the
    regression's coefficients as JSON; a boosted model would need its trees saved)."""

    signals: tuple[str, ...]
    classifier: object
    threshold: float = 0.5
    dev: Mapping[str, object] | None = None

    @property
    def reads(self) -> tuple[str, ...]:
        return self.signals

    def probabilities(self, table: pd.DataFrame) -> np.ndarray:
        return self.classifier.predict_proba(table[list(self.signals)].to_numpy(dtype=float))[:, 1]

    def with_threshold(self, threshold: float, dev: Mapping[str, object] | None = None) -> BoostedRelevance:
        return BoostedRelevance(self.signals, self.classifier, float(threshold), dev or {})


BOOSTING_DEPTHS = (2, 3)


def compare_classifiers(model: RelevanceModel, part: Mapping[str, pd.DataFrame], tests: Mapping[str, pd.DataFrame],
                        cap: FalseAbstentionCap = FalseAbstentionCap()) -> pd.DataFrame:
    """The fitted logistic regression beside gradient boosting (scikit-learn's defaults, balanced classes, each
    depth of ``BOOSTING_DEPTHS``), each fitted on the same train rows, its threshold chosen on the same dev rows,
    and read on the pooled test groups: does a classifier that can learn interactions do better?"""
    from sklearn.ensemble import HistGradientBoostingClassifier

    train = part["train"][called(part["train"])]
    x, y = signals_of(train, model.signals).to_numpy(dtype=float), needs_call(train)
    candidates: dict[str, object] = {"logistic regression (the model above)": model}
    for depth in BOOSTING_DEPTHS:
        boosted = HistGradientBoostingClassifier(max_depth=depth, class_weight="balanced", random_state=0).fit(x, y)
        candidates[f"gradient boosting, depth {depth}"] = choose_threshold(
            BoostedRelevance(tuple(model.signals), boosted), part["dev"], cap=cap).model
    groups = [name for name in ("bfcl", "domains", "pooled") if name in tests] or list(tests)
    rows = []
    for name, candidate in candidates.items():
        row: dict[str, object] = {"classifier": name, "dev balanced": candidate.dev.get("balanced_accuracy")}
        for group in groups:
            scored = _test_row(group, tests[group], candidate)
            row |= {f"{group} accuracy": scored.get("accuracy_after"),
                    f"{group} abstention": scored.get("abstention_accuracy_after"),
                    f"{group} false abstention": scored.get("false_abstention_rate_after")}
        rows.append(row)
    return pd.DataFrame(rows)


def test_parts(runs: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each suite's test rows, then the groups of them pooled (``suite_groups``)."""
    tests = {name: _split(rows, "test") for name, rows in runs.items()}
    for group, members in suite_groups(list(runs)).items():
        tests[group] = pd.concat([tests[name] for name in members], ignore_index=True)
    return tests


def whole_categories(runs: Mapping[str, pd.DataFrame]) -> list[str]:
    """The BFCL categories whose rows hold more than one split: scored whole too, as the leaderboard scores them."""
    return [name for name, rows in runs.items() if name.startswith("bfcl") and rows["split"].nunique() > 1]


def whole_parts(runs: Mapping[str, pd.DataFrame], names: Sequence[str]) -> dict[str, pd.DataFrame]:
    """All the rows of each suite in ``names``, marked ``(all splits)``."""
    return {f"{name} (all splits)": runs[name].reset_index(drop=True) for name in names}


def suite_groups(names: Sequence[str]) -> dict[str, list[str]]:
    """The pooled rows a report adds after the suites: BFCL's categories together (``multiple`` and
    ``irrelevance`` hold one kind of case each, so only together do they tell the kinds apart), the other suites
    together, and everything; a group of one suite, or the same as another group, is left out."""
    bfcl = [name for name in names if name.startswith("bfcl")]
    others = [name for name in names if name not in bfcl]
    groups = {"pooled": list(names), "bfcl": bfcl, "domains": others}  # the first of two equal groups is kept
    kept: dict[str, list[str]] = {}
    for group, members in groups.items():
        if len(members) > 1 and members not in kept.values():
            kept[group] = members
    return {group: kept[group] for group in ("bfcl", "domains", "pooled") if group in kept}


def _split(rows: pd.DataFrame, split: str) -> pd.DataFrame:
    return rows[rows["split"] == split].reset_index(drop=True)


def _combined_auroc(model: RelevanceModel, rows: pd.DataFrame) -> float:
    from sklearn.metrics import roc_auc_score

    subset = rows[called(rows)]
    labels = needs_call(subset)
    if len(set(labels.tolist())) < 2:
        return math.nan
    return float(roc_auc_score(labels, model.probabilities(signals_of(subset, model.reads))))


def _test_row(name: str, before: pd.DataFrame, model: RelevanceModel) -> dict[str, object]:
    after = apply_relevance(before, model)
    row: dict[str, object] = {"suite": name, "cases": len(before), "overruled": float(after["relevance_overruled"].mean())}
    paired = compare_on_test(before, after).set_index("metric")
    for metric in PAIRED_METRICS:
        if metric in paired.index:
            entry = paired.loc[metric]
            row.update({f"{metric}_before": entry["a"], f"{metric}_after": entry["b"],
                        f"{metric}_diff": entry["difference"], f"{metric}_ci": (entry["ci_low"], entry["ci_high"]),
                        f"{metric}_p": entry["p_value"]})
    row["balanced_accuracy_before"], row["balanced_accuracy_after"] = balanced_accuracy(before), balanced_accuracy(after)
    return row
