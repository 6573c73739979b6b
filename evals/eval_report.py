"""What ``toolsel eval`` prints of a finished run: the summary with intervals, the per-tag table, the relevance
stage's work, the cached answers, and exit 1 when no case reached the model."""

from __future__ import annotations

import math
import sys

__all__ = ["cascade_line", "every_call_failed", "fmt", "format_by_tag", "format_summary", "print_report"]


def print_report(result) -> int:
    """The run's summary as 'toolsel eval' prints it; 1 when no case reached the model, else 0."""
    print()
    print(f"suite {result.params['suite']} ({result.params['split']}, {len(result.results)} cases), "
          f"model {result.params['model']}, strategy {result.params['strategy']}, program {result.params['program']}")
    if "strategy_reason" in result.params:
        print(result.params["strategy_reason"])
    if "relevance" in result.params:
        print(_relevance_line(result))
    if "cascade_router" in result.params:
        print(cascade_line(result.params["cascade_router"], result.results))
    print(format_summary(result.summary))
    print()
    print(format_by_tag(result.by_tag))
    cached = _cached_cases(result.results)
    if cached:
        print(f"\nnote: {cached} of {len(result.results)} answers came from DSPy's cache (--cache), which records no "
              f"time or tokens: the time and token figures are over the other "
              f"{len(result.results) - cached} cases{' (none)' if cached == len(result.results) else ''}.")
    print(f"\nper-case results: {result.run_dir / 'results.parquet'}")
    if result.mlflow_run_id:
        print(f"MLflow run: {result.mlflow_run_id}")
    return every_call_failed(result.results)


def every_call_failed(rows) -> int:
    """1, with the first error, when no case reached the model (its scores measure nothing); else 0."""
    if len(rows) == 0 or "error" not in rows or not (rows["error"] == 1).all():
        return 0
    print(f"\nerror: every model call failed, so the scores above measure nothing; the first: "
          f"{rows['error_message'].iloc[0]}", file=sys.stderr)
    return 1


def _relevance_line(result) -> str:
    """What the relevance stage did: its model, how many decisions it overruled, and its seconds per case."""
    rows = result.results
    line = result.params["relevance"]
    if "relevance_overruled" in rows:
        overruled = int(rows["relevance_overruled"].fillna(0).sum())
        line += f"; dropped the calls of {overruled} of {len(rows)} decisions"
    if "relevance_seconds" in rows:
        line += f", {rows['relevance_seconds'].mean():.2f} s per case ('--relevance none' to run without it)"
    return line


def cascade_line(router: str, rows) -> str:
    """What the cascade did: how many decisions it escalated, and each model's seconds per case (the secondary's
    also per escalated case)."""
    escalated = int(rows["cascade_escalated"].fillna(0).sum()) if "cascade_escalated" in rows else 0
    line = f"{router}: escalated {escalated} of {len(rows)} decisions"
    if len(rows):
        line += f" ({100 * escalated / len(rows):.1f}%)"
    if "cascade_primary_seconds" in rows:
        secondary = rows["cascade_secondary_seconds"].fillna(0)
        line += (f"; seconds per case: primary {rows['cascade_primary_seconds'].mean():.2f}, secondary "
                 f"{secondary.mean():.2f}")
        if escalated:
            line += f" ({secondary.sum() / escalated:.2f} per escalated decision)"
    return line


def fmt(value: float, percent: bool = True) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{100 * value:.1f}%" if percent else f"{value:.2f}"


def _cached_cases(results) -> int:
    from evals.runs import cached_cases

    return cached_cases(results)


def format_by_tag(table) -> str:
    """The per-tag table as the summary reads: case counts whole, rates in percent, seconds to two places."""
    shown = table.copy()
    for column in shown.columns:
        if column == "cases":
            shown[column] = shown[column].map(lambda v: f"{v:.0f}")
        elif column == "seconds_per_correct":
            shown[column] = shown[column].map(lambda v: fmt(v, percent=False))
        elif column != "tag":
            shown[column] = shown[column].map(fmt)
    return shown.to_string(index=False)


def format_summary(summary: dict[str, float]) -> str:
    from evals.metrics import METRICS

    lines = []
    for name, (_, description) in METRICS.items():
        if name not in summary:
            continue
        percent = name not in ("latency_s", "input_tokens", "output_tokens")
        value = fmt(summary[name], percent)
        if f"{name}_ci_low" in summary and not math.isnan(summary[f"{name}_ci_low"]):
            value += f"  [{fmt(summary[f'{name}_ci_low'])}, {fmt(summary[f'{name}_ci_high'])}]"
        lines.append(f"  {name:<22} {value:<26} {description}")
    for name, description in (("seconds_per_correct", "seconds spent per fully right decision"),
                              ("tokens_per_correct", "tokens (in + out) per fully right decision"),
                              ("cost_per_correct", "catalog cost per fully right decision")):
        if name in summary:
            lines.append(f"  {name:<22} {summary[name]:<26.4g} {description}")
    if "total_input_tokens" in summary:
        spent = f"{summary['total_input_tokens']:,.0f} in, {summary['total_output_tokens']:,.0f} out"
        if "total_cost" in summary:
            spent += f"; catalog cost {summary['total_cost']:.4g}"
        lines.append(f"  {'spent':<22} {spent} tokens, over the cases the model answered (not the cache)")
    return "\n".join(lines)
