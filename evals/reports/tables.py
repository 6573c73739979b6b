"""The report's tables in markdown: the strategy tables (``evals.reports.strategies``: accuracy with intervals, the
relevance gate, paired differences, the fastest per correct decision) and the loop table (``evals.reports.loops``),
from the runs ``collect`` gathered."""

from __future__ import annotations

from evals.reports.collect import Collected
from evals.reports.loops import loop_table
from evals.reports.strategies import strategy_sections

__all__ = ["markdown_report"]


def markdown_report(collected: Collected) -> str:
    runs = collected.frames
    sections = strategy_sections(runs) if runs else []
    if collected.loops:
        sections.append("## Tool-calling loop\n\n" + loop_table(collected.loops))
    return "\n\n".join(sections)
