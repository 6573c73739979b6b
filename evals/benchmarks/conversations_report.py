"""docs/results/conversations.md, generated from a kept discussion transcript and debate state file.

    python -m evals.benchmarks.conversations_report --results results/conversations \
        --write docs/results/conversations.md
    python -m evals.benchmarks.conversations_report --discussion runs/discussion.json --debate runs/state.json

The results folder holds ``discussion.json`` (``toolsel discuss run --out``), ``debate-state.json`` (``toolsel
debate run --state``), ``provenance.json`` (a list of ``{what, kept, command, commit, machine, date, notes}``, one
per run) and optionally ``notes.md`` (what the runs show, written by hand; put on the page as it is).

Per discussion turn and per speaker: tool calls, failed calls, limit hits, model steps, escalations to the pair's
secondary, tokens and seconds. Per debate agent and phase: the same, summed over rounds; the stop reasons and
errors of every contribution; and what each turn or contribution said, shortened.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from evals.benchmarks.provenance import PROVENANCE_FIELDS, provenance_table
from tool_selection.conversations.state import Contribution, DebateState, DiscussionTranscript
from tool_selection.conversations.summary import debate_rows, discussion_rows, format_table, grouped, totals

__all__ = ["PROVENANCE_FIELDS", "debate_tables", "discussion_tables", "excerpts", "main", "results_page"]

FIGURES = ("tool_calls", "failed_calls", "limit_hits", "iterations", "escalations", "tokens_in", "tokens_out",
           "seconds", "cpu_seconds", "tools")
EXCERPT_CHARS = 240
COMMAND = ("python -m evals.benchmarks.conversations_report --results results/conversations "
           "--write docs/results/conversations.md")


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


def excerpts(contributions: list[tuple[str, Contribution]], chars: int = EXCERPT_CHARS) -> str:
    """What each contribution said (its first ``chars`` characters) and the tools it called, labelled."""
    rows = []
    for label, contribution in contributions:
        text = " ".join(contribution.content.split())
        said = text if len(text) <= chars else text[:chars].rstrip() + "..."
        calls = "; ".join(f"{c.tool_name}({_arguments(c.arguments)})" + ("" if c.ok else " failed")
                          for c in contribution.metadata.tool_calls)
        rows.append({"": label, "agent": contribution.agent_id, "said": said or f"(no message: "
                     f"{contribution.metadata.error or contribution.metadata.stop_reason})", "tool calls": calls})
    return format_table(rows, ("", "agent", "said", "tool calls"))


def _arguments(arguments: dict) -> str:
    text = ", ".join(f"{name}={json.dumps(value)}" for name, value in arguments.items())
    return text if len(text) <= 80 else text[:80] + "..."


def _totals(rows: list[dict], status: str, seconds: float) -> str:
    total = totals(rows)
    return (f"Status {status}; {int(total['contributions'])} contributions, {int(total['tool_calls'])} tool calls "
            f"({int(total['failed_calls'])} failed), {int(total['limit_hits'])} limit hits, "
            f"{int(total['escalations'])} escalations, {int(total['tokens_in'])} input and {int(total['tokens_out'])} "
            f"output tokens, {seconds:.0f} s speaking.")


def results_page(results: Path) -> str:
    """The whole results page from ``results`` (see the module's docstring for what it holds)."""
    discussion = DiscussionTranscript.load(results / "discussion.json")
    debate = DebateState.load(results / "debate-state.json")
    setup = discussion.config.get("discussion", discussion.config)
    models = ", ".join(f"{m['type']} as {m['role']}" for m in setup["models"].values())
    tools = setup.get("tools", {})
    enabled = [e["name"] for e in tools.get("registry", []) if e.get("enabled", True)] if tools.get(
        "enabled", True) else []
    agents = ", ".join(f"{a.id} ({a.model}, limit {a.tool_call_limit})" for a in debate.config.agents)
    parts = [
        "# Conversations\n",
        "One discussion and one debate run by the shipped examples with the embedded models: tool calls per agent and "
        "phase, limit hits, escalations to a collaboration pair's secondary, tokens and seconds. "
        "How they work: [Conversations](../guide/conversations.md).\n",
        f"<!-- generated by `{COMMAND}` from the kept rows; edit results/conversations/notes.md, not this page -->\n",
    ]
    if (results / "notes.md").is_file():
        parts.append((results / "notes.md").read_text(encoding="utf-8").strip() + "\n")
    parts += [
        f"## Discussion\n\n`examples/discussion.yaml`, {len(discussion.turns)} turns: {models}; goal: "
        f"{setup['goal']!r}. Tools of both models: {', '.join(f'`{n}`' for n in enabled) or 'none'}.\n",
        discussion_tables(discussion) + "\n",
        "What each turn said (the first 240 characters) and the tools it called:\n",
        excerpts([(str(n), turn) for n, turn in enumerate(discussion.turns, start=1)]) + "\n",
        f"## Debate\n\n`examples/debate.json`, {len(debate.rounds)} round(s): {agents}. Topic: "
        f"{debate.config.topic!r}\n",
        debate_tables(debate) + "\n",
        "What each contribution said (the first 240 characters) and the tools it called:\n",
        excerpts([(f"{r.number} {c.type}", c) for r in debate.rounds for c in r.contributions]) + "\n",
        "## Provenance\n",
        provenance_table(results / "provenance.json") + "\n",
        f"The page is generated: `{COMMAND}`.\n",
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, help="A folder of kept runs (see the module's docstring).")
    parser.add_argument("--write", type=Path, help="With --results: write the page here instead of printing it.")
    parser.add_argument("--discussion", type=Path, help="A discussion transcript (toolsel discuss run --out).")
    parser.add_argument("--debate", type=Path, help="A debate state file (toolsel debate run --state).")
    args = parser.parse_args(argv)
    if args.write and not args.results:
        parser.error("--write needs --results (the folder the page is generated from)")
    if args.results:
        page = results_page(args.results)
        if args.write:
            args.write.write_text(page, encoding="utf-8")
        else:
            print(page)
    if args.discussion:
        print("## Discussion\n")
        print(discussion_tables(DiscussionTranscript.load(args.discussion)))
    if args.debate:
        print("\n## Debate\n")
        print(debate_tables(DebateState.load(args.debate)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
