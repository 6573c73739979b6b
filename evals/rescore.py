"""Read a finished run's unreadable answers again with today's parsers, without calling the model again.

Greedy answers do not change between runs and parsing comes after the model, so re-reading the raw text a run
kept for each parse failure gives the row a fresh run would give (its latency and tokens stay those measured).

    toolsel eval rescore RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import json
from pathlib import Path

from dspy.utils.exceptions import AdapterParseError

from evals.metrics import score_case, summarize, summarize_by_tag
from evals.runner import RESULTS_FILE, TABLE_FILE, decision_fields, load_rows, rows_to_frame
from evals.suite import load_suite, registry_for
from evals.tracking import write_json
from tool_selection.errors import ToolSelectionError
from tool_selection.selector import MultiToolSelector
from tool_selection.strategies import GATE_PREFIX, STRUCTURED_STRATEGY, check_decision
from tool_selection.strategies.base import as_calls, inner_predict

__all__ = ["rescore_run"]


def _reparse(selector: MultiToolSelector, raw: str):
    """The calls and prose a strategy reads from ``raw`` now, or None if it still cannot read it."""
    try:
        parsed = selector.strategy.adapter().parse(inner_predict(selector.select).signature, raw)
    except AdapterParseError:
        return None
    return parsed.get("reasoning", "") or "", as_calls(parsed.get("tool_calls") or [])


def rescore_run(run_dir: str | Path) -> int:
    """Re-read the run's parse failures; rewrite its results, table, summary and tag table. Returns how many
    rows changed."""
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.json"
    if not summary_path.exists():
        raise ToolSelectionError(f"{run_dir} has no summary.json: rescore reads finished runs of 'toolsel eval'.")
    meta = json.loads(summary_path.read_text(encoding="utf-8"))
    params = meta["params"]
    if params.get("tools"):
        raise ToolSelectionError(f"{run_dir} ran over tools given at run time ({params['tools']}); rescore needs "
                                 "the suite's own tools.")
    strategy = (params.get("strategy") or STRUCTURED_STRATEGY).removeprefix(GATE_PREFIX)  # a gate's rows: its strategy's
    selector = MultiToolSelector(strategy=strategy)
    name = params["suite"]  # a BFCL suite is named bfcl_<categories>, loaded as bfcl:<categories>
    cases = {case.id: case for case in load_suite("bfcl:" + name[5:] if name.startswith("bfcl_") else name)}
    rows = load_rows(run_dir / RESULTS_FILE)
    changed = 0
    for case_id, row in rows.items():
        raw = row.get("raw_response")
        if not row.get("parse_failure") or not raw or row.get("error_message") or case_id not in cases:
            continue
        reparsed = _reparse(selector, raw)
        if reparsed is None:
            continue
        case = cases[case_id]
        decision = check_decision(reparsed[0], reparsed[1], registry_for(case))
        row.update(score_case(case, decision), **decision_fields(decision), raw_response=None)
        changed += 1
    if not changed:
        return 0
    ordered = list(rows.values())
    (run_dir / RESULTS_FILE).write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n"
                                                for r in ordered), encoding="utf-8")
    frame = rows_to_frame(ordered)
    frame.to_parquet(run_dir / TABLE_FILE, index=False)
    summarize_by_tag(frame).to_csv(run_dir / "by_tag.csv", index=False)
    params = {**params, "rescored": True}
    write_json(summary_path, {"params": params, "summary": summarize(frame)})
    return changed


def main(run_dirs: list[str]) -> int:
    for run_dir in run_dirs:
        print(f"{run_dir}: {rescore_run(run_dir)} parse failure(s) read again")
    return 0
