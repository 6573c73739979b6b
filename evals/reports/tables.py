"""The report's tables in markdown: the strategy tables (``evals.benchmarks.strategy_report``: accuracy with
intervals, the relevance gate, paired differences, the fastest per correct decision) and the loop table
(``evals.benchmarks.loop_report``), from the runs ``collect`` gathered."""

from __future__ import annotations

from evals.reports.collect import Collected

__all__ = ["markdown_report"]


def markdown_report(collected: Collected) -> str:
    from evals.benchmarks import loop_report, strategy_report

    sections = []
    runs = collected.frames
    if runs:
        sections.append("## Strategies\n\n" + strategy_report.strategy_table(runs))
        gate = strategy_report.gate_table(runs)
        if gate.count("\n") > 1:
            sections.append("## Relevance gate (threshold chosen on BFCL dev, reported on BFCL test)\n\n" + gate)
        for a, b in strategy_report.strategy_pairs(runs):
            table = strategy_report.paired_table(runs, a, b)
            if table.count("\n") > 1:  # more than the header: the two ran some of the same cases
                sections.append(f"## Paired: {strategy_report.pair_heading(a, b)}, same cases\n\n{table}")
        sections.append("## Fastest per correct decision\n\n" + strategy_report.fastest_per_correct(runs))
    if collected.loops:
        sections.append("## Tool-calling loop\n\n" + loop_report.loop_table(collected.loops))
    return "\n\n".join(sections)
