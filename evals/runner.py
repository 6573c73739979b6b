"""The evaluation runner: a selector over a suite's cases, scored per case, resumable, tracked in MLflow.

Each finished case is appended (and flushed) to ``results.jsonl`` in the run directory as soon as it is
scored, so an interrupted run loses nothing: running the same evaluation again skips the cases already there.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
import pandas as pd
from tqdm.auto import tqdm

from evals.metrics import score_case, summarize, summarize_by_tag
from evals.suite import Case, Suite, registry_for
from tool_selection.decision import MultiToolDecision
from tool_selection.demo_pool import leaving_out
from tool_selection.errors import ToolSelectionError
from tool_selection.lm.model_errors import MODEL_FAILURES  # a malformed answer never gets there: it is a parse failure
from tool_selection.parsing import safe_value
from tool_selection.registry import ToolRegistry

__all__ = ["EvalAborted", "EvalResult", "Evaluator", "load_results"]

log = logging.getLogger(__name__)


RESULTS_FILE = "results.jsonl"
TABLE_FILE = "results.parquet"
MAX_FIELD_CHARS = 100_000


class EvalAborted(ToolSelectionError):
    """The model failed on every one of the first cases: a setup problem, not a scoring matter."""


@dataclass
class EvalResult:
    """Per-case rows, the aggregate summary (with confidence intervals) and the per-tag table."""

    results: pd.DataFrame
    summary: dict[str, float]
    by_tag: pd.DataFrame
    run_dir: Path | None = None
    mlflow_run_id: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        return self.summary["accuracy"]

    def _repr_html_(self) -> str:
        """The summary with its intervals, the per-tag table, and the cases that failed to parse, in Jupyter."""
        from html import escape

        from evals.metrics import METRICS

        lines = []
        for name, (_, description) in METRICS.items():
            value = self.summary.get(name)
            if value is None or value != value:
                continue
            low, high = self.summary.get(f"{name}_ci_low"), self.summary.get(f"{name}_ci_high")
            interval = f" [{low:.3f}, {high:.3f}]" if low is not None and low == low else ""
            lines.append(f"<tr><td>{name}</td><td>{value:.3f}{interval}</td><td>{escape(description)}</td></tr>")
        title = ", ".join(f"{k} {self.params[k]}" for k in ("suite", "split", "model", "strategy") if k in self.params)
        html = [f"<h4>{escape(title) or 'evaluation'}: {len(self.results)} cases</h4>",
                f"<table><thead><tr><th>metric</th><th>value [95% CI]</th><th></th></tr></thead>"
                f"<tbody>{''.join(lines)}</tbody></table>", self.by_tag.to_html(index=False, float_format="%.3f")]
        if "parse_error" in self.results:
            failed = self.results[self.results["parse_error"].notna()]
            if len(failed):
                html.append(f'<p style="color:#b00">{len(failed)} answer(s) could not be parsed:</p>')
                html.append(failed[["id", "parse_error"]].head(10).to_html(index=False))
        return "".join(html)


class Evaluator:
    """Runs a program over a suite. Keyword-only settings; ``__call__`` takes per-run overrides.

    ``program`` is any callable ``program(request=..., tools=...)`` returning a prediction with a
    ``decision`` (a ``MultiToolSelector``, compiled or not). A prediction's ``row_extras`` dict, if any, is added
    to the case's row (e.g. stuck-detector scores).
    """

    def __init__(self, *, suite: Suite, threads: int = 1, progress: bool = True, abort_after_errors: int = 3,
                 tools: ToolRegistry | None = None, health_check: Callable[[], None] | None = None,
                 submit: Callable[[Case], Future] | None = None, trace: bool = False):
        """``tools``: one catalog for every case (e.g. an MCP server's tools) instead of each case's own.
        ``health_check``: called when a model call fails; it raises if the model's server is gone, which stops the
        run (finished cases kept) instead of scoring every case left as a failure. ``submit``: runs a case
        elsewhere and returns a future of its row (``evals.fanout.RayCases``), in place of the thread pool.
        ``trace``: record each case run here as an MLflow trace in the current experiment (``evals.traces``; its
        id in the row's ``trace_id``)."""
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.suite = suite
        self.threads = threads
        self.progress = progress
        self.abort_after_errors = abort_after_errors
        self.tools = tools
        self.health_check = health_check
        self.submit = submit
        self.trace = trace

    def __call__(
        self,
        program: Callable[..., Any],
        *,
        lm: dspy.BaseLM | None = None,
        run_dir: str | Path | None = None,
        threads: int | None = None,
    ) -> EvalResult:
        run_path = Path(run_dir) if run_dir else None
        done = load_rows(run_path / RESULTS_FILE, finished_only=True) if run_path else {}
        pending = [case for case in self.suite if case.id not in done]
        if run_path:
            run_path.mkdir(parents=True, exist_ok=True)
        if done:
            log.info("Resuming %s: %d of %d cases already scored", run_path, len(done), len(self.suite))
        writer = _RowWriter(run_path / RESULTS_FILE if run_path else None)
        rows = dict(done)
        consecutive_errors = 0
        with ThreadPoolExecutor(max_workers=threads or self.threads) as pool, tqdm(
            total=len(self.suite), initial=len(done), disable=not self.progress, desc=self.suite.name, unit="case",
        ) as bar:
            submit = self.submit or (lambda case: pool.submit(self._run_case, program, case, lm))
            futures = {submit(case): case for case in pending}
            for future in as_completed(futures):
                try:
                    row = future.result()
                except BaseException:  # a setup problem or a bug: stop, keeping the finished cases
                    for other in futures:
                        other.cancel()
                    raise
                rows[row["id"]] = row
                writer.write(row)
                consecutive_errors = consecutive_errors + 1 if row["error_message"] else 0
                bar.set_postfix(acc=f"{_running_accuracy(rows):.2f}")
                bar.update()
                if self.abort_after_errors and consecutive_errors >= self.abort_after_errors and len(rows) == consecutive_errors:
                    for other in futures:
                        other.cancel()
                    raise EvalAborted(
                        f"The first {consecutive_errors} cases all failed in the model call; last error: {row['error_message']}. "
                        "Check the model spec, its server or API key, then run again (finished cases are kept)."
                    )
        ordered = [rows[c.id] for c in self.suite if c.id in rows]
        results = rows_to_frame(ordered)
        return EvalResult(results=results, summary=summarize(results), by_tag=summarize_by_tag(results),
                          run_dir=run_path)

    def _run_case(self, program: Callable[..., Any], case: Case, lm) -> dict[str, Any]:
        registry = self.tools if self.tools is not None else registry_for(case)  # a bad definition stops the run
        if not self.trace:
            return self._decide(program, case, registry, lm)
        from evals.traces import traced_case

        return traced_case(case, registry, lambda: self._decide(program, case, registry, lm))

    def _decide(self, program: Callable[..., Any], case: Case, registry: ToolRegistry, lm) -> dict[str, Any]:
        """The case's row: the program's decision, scored, with its latency and tokens."""
        error = None
        usage: dict[str, Any] = {}
        extras: dict[str, Any] = {}
        start = time.perf_counter()
        try:
            with dspy.context(lm=lm or dspy.settings.lm, track_usage=True), leaving_out(case.id):
                prediction = program(request=case.prompt, tools=registry)
            decision: MultiToolDecision = prediction.decision
            usage = prediction.get_lm_usage() or {}
            extras = dict(getattr(prediction, "row_extras", None) or {})
        except MODEL_FAILURES as exc:  # recorded and scored; anything else (the toolkit's errors, bugs) stops the run
            if self.health_check is not None:
                self.health_check()
            error = f"{type(exc).__name__}: {exc}"[:1000]
            decision = MultiToolDecision(parse_error=f"model call failed: {error[:200]}")
        latency = time.perf_counter() - start
        scores = score_case(case, decision)
        if "retrieved" in extras:  # the selector saw only these tools: did they include the expected ones?
            expected = {c.tool_name for c in case.expected_calls}
            scores["retrieval_recall"] = (len(expected & set(extras["retrieved"])) / len(expected) if expected
                                          else math.nan)
        if error:
            scores["parse_failure"] = 0.0
        raw = getattr(prediction, "raw_response", None) if error is None else None
        return _encodable({
            "id": case.id,
            "split": case.split,
            "tags": list(case.tags),
            "request": case.prompt,
            "expected": json.dumps([c.model_dump() for c in case.expected_calls], ensure_ascii=False),
            **decision_fields(decision),
            "raw_response": raw if decision.parse_error else None,
            "error_message": error,
            **scores,
            "error": float(error is not None),
            "latency_s": latency,
            "input_tokens": _tokens(usage, "prompt_tokens"),
            "output_tokens": _tokens(usage, "completion_tokens"),
            **extras,
        })


def decision_fields(decision: MultiToolDecision) -> dict[str, Any]:
    """The columns of a results row that hold the decision itself."""
    return {"predicted": json.dumps([c.model_dump() for c in decision.tool_calls], ensure_ascii=False, default=str),
            "reasoning": decision.reasoning,
            "problems": json.dumps([p.model_dump() for p in decision.problems], ensure_ascii=False),
            "parse_error": decision.parse_error}


def _encodable(row: dict[str, Any]) -> dict[str, Any]:
    """The row with every string, in lists too (tags), encodable as UTF-8 (a model can answer a lone surrogate,
    which no file takes)."""
    return {key: safe_value(value, limit=MAX_FIELD_CHARS) if isinstance(value, str | list) else value
            for key, value in row.items()}


def _tokens(usage: dict[str, Any], key: str) -> float:
    return float(sum((entry or {}).get(key, 0) or 0 for entry in usage.values()))


def _running_accuracy(rows: dict[str, dict]) -> float:
    return sum(r["full_match"] for r in rows.values()) / max(len(rows), 1)


class _RowWriter:
    """Appends one JSON line per finished case and flushes it to disk at once (thread-safe)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.lock = threading.Lock()
        if path is not None and path.exists() and path.stat().st_size:
            with path.open("rb+") as handle:  # a run killed mid-write leaves a torn line: end it
                handle.seek(-1, 2)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")

    def write(self, row: dict[str, Any]) -> None:
        if self.path is None:
            return
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self.lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()


def load_rows(path: Path, *, finished_only: bool = False) -> dict[str, dict[str, Any]]:
    """Rows of a results file by case id (the last row of a case wins). A damaged line (torn by a kill, not UTF-8,
    not a JSON object with an ``id``) is skipped with a warning. ``finished_only`` leaves out the cases whose
    model call failed, so that a resumed run tries them again (a scored answer, parse failures included, stays)."""
    rows: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return rows
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                row = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                row = None
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                if raw.strip():
                    log.warning("%s line %d is damaged and was skipped: %r", path, number, raw[:80])
                continue
            rows[row["id"]] = row
    if finished_only:
        rows = {case_id: row for case_id, row in rows.items() if not row.get("error_message")}
    return rows


def rows_to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def load_results(run_dir: str | Path) -> pd.DataFrame:
    """Per-case results of a run directory (the parquet table, or the JSON Lines of an unfinished run)."""
    run_dir = Path(run_dir)
    if (run_dir / TABLE_FILE).exists():
        return pd.read_parquet(run_dir / TABLE_FILE)
    rows = load_rows(run_dir / RESULTS_FILE)
    if not rows:
        raise ToolSelectionError(f"No results in {run_dir}: expected {TABLE_FILE} or {RESULTS_FILE}.")
    return rows_to_frame(list(rows.values()))
