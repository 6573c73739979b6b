"""The tables of docs/results/conversations.md, from a discussion's transcript and a debate's state file.

    python -m evals.benchmarks.conversations_report --discussion runs/real/discussion.json \
        --debate runs/real/debate-state.json

Per discussion turn and per speaker: tool calls, failed calls, limit hits, model steps, escalations to the pair's
secondary, tokens and seconds. Per debate agent and phase: the same, summed over rounds; and the stop reasons and
errors of every contribution.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from tool_selection.conversations.state import DebateState, DiscussionTranscript
from tool_selection.conversations.summary import debate_rows, discussion_rows, format_table, grouped, totals

__all__ = ["debate_tables", "discussion_tables", "main"]

FIGURES = ("tool_calls", "failed_calls", "limit_hits", "iterations", "escalations", "tokens_in", "tokens_out",
           "seconds", "cpu_seconds", "tools")


def discussion_tables(transcript: DiscussionTranscript) -> str:
    rows = discussion_rows(transcript)
    for row, turn in zip(rows, transcript.turns, strict=True):
        row["words"] = len(turn.content.split())
        row["stuck scores"] = ", ".join("-" if s is None else f"{s:.2f}" for s in turn.metadata.stuck_scores)
    per_turn = format_table(rows, ("turn", "agent", "role", "model", "words", *FIGURES, "stuck scores", "stop"))
    per_speaker = format_table(grouped(rows, ("agent", "role")), ("agent", "role", "contributions", *FIGURES))
    return f"{per_turn}\n\n{per_speaker}\n\n{_totals(rows, transcript.status, transcript.seconds)}"


def debate_tables(state: DebateState) -> str:
    rows = debate_rows(state)
    by_phase = format_table(grouped(rows, ("agent", "phase")), ("agent", "phase", "contributions", "answered",
                                                                *FIGURES))
    ends = Counter(f"{row['stop']}" + (" (error)" if row["error"] else "") for row in rows)
    stops = ", ".join(f"{name} {count}" for name, count in ends.most_common())
    return f"{by_phase}\n\nHow contributions ended: {stops}.\n\n{_totals(rows, state.status, state.seconds)}"


def _totals(rows: list[dict], status: str, seconds: float) -> str:
    total = totals(rows)
    return (f"Status {status}; {int(total['contributions'])} contributions, {int(total['tool_calls'])} tool calls "
            f"({int(total['failed_calls'])} failed), {int(total['limit_hits'])} limit hits, "
            f"{int(total['escalations'])} escalations, {int(total['tokens_in'])} input and {int(total['tokens_out'])} "
            f"output tokens, {seconds:.0f} s speaking.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--discussion", type=Path, help="A discussion transcript (toolsel discuss run --out).")
    parser.add_argument("--debate", type=Path, help="A debate state file (toolsel debate run --state).")
    args = parser.parse_args(argv)
    if args.discussion:
        print("## Discussion\n")
        print(discussion_tables(DiscussionTranscript.load(args.discussion)))
    if args.debate:
        print("\n## Debate\n")
        print(debate_tables(DebateState.load(args.debate)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
