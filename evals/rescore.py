"""Score a finished run again with today's parsers, tool checks and scoring, without calling the model again.

Greedy answers do not change between runs and parsing comes after the model, so re-reading the raw text a run
kept for each parse failure, and checking and scoring the calls of every other row again, gives the rows a fresh
run would give (their latency and tokens stay those measured).

    toolsel eval rescore RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from dspy.utils.exceptions import AdapterParseError

from evals.metrics import score_case, summarize, summarize_by_tag
from evals.runner import RESULTS_FILE, TABLE_FILE, decision_fields, load_rows, rows_to_frame
from evals.suite import Case, Suite, SuiteError, load_suite, registry_for
from evals.tracking import write_json
from tool_selection.decision import ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector, read_values
from tool_selection.spec import SelectorSpec
from tool_selection.strategies import check_decision, drop_undeclared
from tool_selection.strategies.base import as_calls, inner_predict

__all__ = ["cases_of_run", "rescore_as", "rescore_run", "run_params", "splice_run", "suite_of_run"]


def _reparse(selector: MultiToolSelector, raw: str):
    """The calls and prose a strategy reads from ``raw`` now, or None if it still cannot read it."""
    try:
        parsed = selector.strategy.adapter().parse(inner_predict(selector.select).signature, raw)
    except AdapterParseError:
        return None
    return parsed.get("reasoning", "") or "", as_calls(parsed.get("tool_calls") or [])


def _calls(row: dict) -> list[ToolCall]:
    return [ToolCall.model_validate(call) for call in json.loads(row.get("predicted") or "[]")]


def suite_of_run(run_dir: Path, params: dict, suite: str | Path | None) -> Suite:
    """The suite a run was made on: ``suite`` if given, else where the run recorded it, else by its name (a BFCL
    suite is named bfcl_<categories>, loaded as bfcl:<categories>)."""
    name = params["suite"]
    reference = suite or params.get("suite_ref") or ("bfcl:" + name[5:] if name.startswith("bfcl_") else name)
    try:
        return load_suite(reference)
    except SuiteError as error:
        raise SuiteError(f"Cannot load the suite {run_dir} was made on ({reference}): {error}\nA run made on a "
                         "suite file before runs recorded its place needs it given: --suite PATH.") from None


def run_params(run_dir: Path) -> dict:
    """The settings a finished run recorded (its ``summary.json``'s ``params``)."""
    return json.loads((Path(run_dir) / "summary.json").read_text(encoding="utf-8"))["params"]


def cases_of_run(run_dir: Path) -> dict[str, Case]:
    """The cases of the suite a finished run was made on, by id (``suite_of_run``)."""
    return {case.id: case for case in suite_of_run(run_dir, run_params(run_dir), None)}


def _same(before: object, after: object) -> bool:
    both_nan = isinstance(before, float) and isinstance(after, float) and math.isnan(before) and math.isnan(after)
    return both_nan or before == after


def _read_as_run(spec: SelectorSpec, decision, registry, request: str, row: dict, fresh: dict):
    """``decision`` read as the run's selector read it (undeclared arguments, respective values, rates, optional
    arguments) for ``request`` (what the selector was given: the case's prompt), with the counts put in ``fresh``.
    A run made before any of these were read is read as today's default reads it."""
    if spec.undeclared_arguments == "drop":
        decision, dropped = drop_undeclared(decision, registry)
        if dropped or "undeclared_dropped" not in row:  # a drop run stored its rows without them, counted
            fresh["undeclared_dropped"] = float(dropped)
    decision, counts = read_values(spec, decision, registry, request)
    fresh.update({name: count + row.get(name, 0.0) for name, count in counts.items()})  # added to the run's own counts
    return decision


def rescore_run(run_dir: str | Path, suite: str | Path | None = None) -> int:
    """Re-read the run's parse failures and re-check and re-score its other rows; rewrite its results, table,
    summary and tag table. Returns how many rows hold a different value now (a column added to a row, such as
    the count of dropped arguments, is written but not counted). ``suite``: where the run's suite is, for a run
    that does not record it (one made on a suite file before runs recorded ``suite_ref``)."""
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.json"
    if not summary_path.exists():
        raise ToolSelectionError(f"{run_dir} has no summary.json: rescore reads finished runs of 'toolsel eval'.")
    meta = json.loads(summary_path.read_text(encoding="utf-8"))
    params = meta["params"]
    if params.get("tools"):
        raise ToolSelectionError(f"{run_dir} ran over tools given at run time ({params['tools']}); rescore needs "
                                 "the suite's own tools.")
    spec = SelectorSpec.from_params(params)
    selector = MultiToolSelector(strategy=spec.base_strategy)  # a gate's rows: its strategy's
    cases = {case.id: case for case in suite_of_run(run_dir, params, suite)}
    rows = load_rows(run_dir / RESULTS_FILE)
    changed = 0  # rows whose stored values differ now
    rewritten = False  # rows changed, or given a column they lacked
    dropping = spec.undeclared_arguments == "drop"
    for case_id, row in rows.items():
        if row.get("error_message") or case_id not in cases:
            continue
        if row.get("parse_failure"):
            reparsed = _reparse(selector, row["raw_response"]) if row.get("raw_response") else None
            if reparsed is None:
                if dropping and "undeclared_dropped" not in row:  # no calls: nothing dropped, as a live run counts
                    row["undeclared_dropped"] = 0.0
                    rewritten = True
                continue
            reasoning, calls, fresh = reparsed[0], reparsed[1], {"raw_response": None}
        else:
            reasoning, calls, fresh = row.get("reasoning") or "", _calls(row), {}
        case = cases[case_id]
        registry = registry_for(case)
        decision = _read_as_run(spec, check_decision(reasoning, calls, registry), registry, case.prompt, row, fresh)
        fresh.update(score_case(case, decision), **decision_fields(decision))
        differs = any(key in row and not _same(row[key], value) for key, value in fresh.items())
        if differs or not fresh.keys() <= row.keys():
            row.update(fresh)
            changed += differs
            rewritten = True
    if not rewritten:
        return 0
    _write_run(run_dir, list(rows.values()), {**params, "rescored": True})
    return changed


def _write_run(run_dir: Path, rows: list[dict], params: dict) -> None:
    """A run folder's rows, table, tag table and summary, written from ``rows`` and ``params``."""
    (run_dir / RESULTS_FILE).write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n"
                                                for r in rows), encoding="utf-8")
    frame = rows_to_frame(rows)
    frame.to_parquet(run_dir / TABLE_FILE, index=False)
    summarize_by_tag(frame).to_csv(run_dir / "by_tag.csv", index=False)
    write_json(run_dir / "summary.json", {"params": params, "summary": summarize(frame)})


def rescore_as(run_dir: str | Path, into: str | Path, settings: dict[str, str],
               suite: str | Path | None = None) -> int:
    """A copy of a finished run in ``into``, scored as if it had run with ``settings`` (``undeclared_arguments``,
    ``rates``, ``optional_arguments``): these options only change how the same answers are read, so the copy's
    rows are those such a run gives. Returns how many rows changed."""
    source, target = Path(run_dir), Path(into)
    if not (source / "summary.json").exists():
        raise ToolSelectionError(f"{source} has no summary.json: rescore reads finished runs of 'toolsel eval'.")
    if target.exists():
        raise ToolSelectionError(f"{target} exists; give a new directory for the copy.")
    target.mkdir(parents=True)
    for name in (RESULTS_FILE, "summary.json"):
        shutil.copy2(source / name, target / name)
    meta = json.loads((target / "summary.json").read_text(encoding="utf-8"))
    meta["params"] = {**meta["params"], **settings, "derived_from": str(source)}
    write_json(target / "summary.json", meta)
    return rescore_run(target, suite)


SAME_CASES = ("suite", "suite_fingerprint", "split", "model")
"""What a run spliced into another must share with it: the cases and the model that answered them."""
BASE_CASES = ("suite_ref", "limit", "sample", "seed", "cases")
"""What a spliced run records as its base recorded it: where the suite is and which of its cases ran."""


def splice_run(base: str | Path, rerun: str | Path, into: str | Path) -> int:
    """A copy of the finished run ``base`` in ``into`` with the rows of ``rerun`` in place of base's for the cases
    rerun answered: a run of another setting made only on the cases where that setting can answer differently
    (``toolsel eval --ids``), the other cases taken as base answered them. Refused unless both ran the same suite,
    split and model, and rerun chose its cases by id, some of them base's (a re-run of a whole category's cases
    serves a seeded sample of it: the rows of the sample's cases are taken). The copy's params are rerun's (its
    selector) with base's suite reference and case selection (``BASE_CASES``), ``spliced_from``, ``rerun`` and the
    ids taken (``rerun_ids``); its summary is computed again. Returns how many rows were replaced."""
    base, rerun, target = Path(base), Path(rerun), Path(into)
    metas = []
    for run in (base, rerun):
        if not (run / "summary.json").exists():
            raise ToolSelectionError(f"{run} has no summary.json: splice reads finished runs of 'toolsel eval'.")
        metas.append(json.loads((run / "summary.json").read_text(encoding="utf-8"))["params"])
    base_params, rerun_params = metas
    if differ := [key for key in SAME_CASES if base_params.get(key) != rerun_params.get(key)]:
        raise ToolSelectionError(f"{rerun} and {base} differ in {', '.join(differ)}: a splice replaces answers to "
                                 "the same cases by the same model.")
    rows, rerun_rows = load_rows(base / RESULTS_FILE), load_rows(rerun / RESULTS_FILE)
    replacing = {case_id: row for case_id, row in rerun_rows.items() if case_id in rows}
    if "ids" not in rerun_params or not replacing:
        raise ToolSelectionError(f"{rerun} must be a run of cases chosen by id (toolsel eval --ids), some of them "
                                 f"{base}'s.")
    if target.exists():
        raise ToolSelectionError(f"{target} exists; give a new directory for the spliced run.")
    target.mkdir(parents=True)
    chosen = {key: base_params[key] for key in BASE_CASES if key in base_params}
    params = {**{k: v for k, v in rerun_params.items() if k not in ("ids", *BASE_CASES)}, **chosen,
              "spliced_from": base.name, "rerun": rerun.name, "rerun_ids": ",".join(replacing)}
    _write_run(target, [replacing.get(case_id, row) for case_id, row in rows.items()], params)
    return len(replacing)


def main(run_dirs: list[str], suite: str | None = None) -> int:
    for run_dir in run_dirs:
        print(f"{run_dir}: {rescore_run(run_dir, suite)} row(s) scored differently today")
    return 0
