"""Tool use per agent and phase (debates) or per turn and speaker (discussions), from the saved records: rows,
totals, and a plain-text table. Pure functions; printing and logging happen elsewhere."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from tool_selection.conversations.state import Contribution, DebateState, DiscussionTranscript

__all__ = ["COUNTS", "contribution_row", "debate_rows", "discussion_rows", "format_table", "grouped", "totals"]

COUNTS = ("contributions", "answered", "tool_calls", "failed_calls", "limit_hits", "iterations", "escalations",
          "tokens_in", "tokens_out", "seconds", "cpu_seconds")
"""The figures summed when rows are grouped."""


def contribution_row(contribution: Contribution) -> dict[str, Any]:
    """One contribution's figures."""
    meta = contribution.metadata
    names = Counter(call.tool_name for call in meta.tool_calls)
    return {
        "agent": contribution.agent_id, "role": contribution.agent_role, "model": meta.model,
        "contributions": 1, "answered": int(bool(contribution.content)),
        "tool_calls": len(meta.tool_calls), "failed_calls": meta.failed_calls, "limit_hits": int(meta.limit_hit),
        "iterations": meta.iterations, "escalations": len(meta.escalations),
        "tokens_in": sum(t["input"] for t in meta.tokens.values()),
        "tokens_out": sum(t["output"] for t in meta.tokens.values()),
        "seconds": round(meta.seconds, 1), "cpu_seconds": round(meta.cpu_seconds, 1),
        "tools": dict(sorted(names.items())),
        "stop": meta.stop_reason, "error": meta.error or "",
    }


def debate_rows(state: DebateState) -> list[dict[str, Any]]:
    """One row per contribution: round, phase, agent and its figures."""
    return [{"round": r.number, "phase": c.type, **contribution_row(c)} for r in state.rounds for c in r.contributions]


def discussion_rows(transcript: DiscussionTranscript) -> list[dict[str, Any]]:
    """One row per turn."""
    return [{"turn": number, **contribution_row(turn)} for number, turn in enumerate(transcript.turns, start=1)]


def grouped(rows: Iterable[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Rows summed by ``keys`` (in first-seen order), the per-tool counts merged."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(row[k] for k in keys)
        group = groups.setdefault(key, {**{k: row[k] for k in keys}, **dict.fromkeys(COUNTS, 0), "tools": Counter()})
        for name in COUNTS:
            group[name] += row[name]
        group["tools"].update(row["tools"])
    for group in groups.values():
        group["seconds"], group["cpu_seconds"] = round(group["seconds"], 1), round(group["cpu_seconds"], 1)
        group["tools"] = dict(sorted(group["tools"].items()))
    return list(groups.values())


def totals(rows: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Every count summed over ``rows`` (what is logged as metrics)."""
    result = dict.fromkeys(COUNTS, 0.0)
    for row in rows:
        for name in COUNTS:
            result[name] += row[name]
    result["seconds"], result["cpu_seconds"] = round(result["seconds"], 1), round(result["cpu_seconds"], 1)
    return result


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A Markdown table of ``columns`` (also readable as plain text)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, dict):  # per-tool counts
        return ", ".join(f"{name} x{count}" for name, count in value.items())
    return str(value).replace("|", "/").replace("\n", " ")
