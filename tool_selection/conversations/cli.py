"""``toolsel discuss run CONFIG`` and ``toolsel debate run CONFIG`` / ``toolsel debate show STATE``."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tool_selection.cli_output import print_json
from tool_selection.run_config import add_tracking_flag

if TYPE_CHECKING:  # the commands import the conversations (DSPy, the tools) when they run, not for --help
    from tool_selection.conversations.state import Contribution

__all__ = ["register_debate", "register_discuss"]

TURN_COLUMNS = ("turn", "agent", "role", "tool_calls", "failed_calls", "limit_hits", "escalations", "tokens_in",
                "tokens_out", "seconds", "cpu_seconds", "tools")
GROUP_COLUMNS = ("contributions", "answered", "tool_calls", "failed_calls", "limit_hits", "iterations",
                 "escalations", "tokens_in", "tokens_out", "seconds", "cpu_seconds", "tools")
PREVIEW_CHARS = 300


def register_discuss(subparsers: argparse._SubParsersAction) -> None:
    discuss = subparsers.add_parser("discuss", help="Discussions between two models with tools.",
                                    description="Discussions between two models (one plays the human, one the "
                                                "assistant) toward a goal, with tools and collaboration pairs.")
    discuss.set_defaults(handler=lambda args: discuss.print_help() or 0)
    sub = discuss.add_subparsers(dest="discuss_command", metavar="SUBCOMMAND")
    run = sub.add_parser("run", help="Run a discussion from its YAML config.",
                         description="Run a discussion: the human-role model opens, the two alternate; the "
                                     "transcript is saved after every turn and logged to MLflow.",
                         epilog="example: toolsel discuss run examples/discussion.yaml --turns 3")
    run.add_argument("config", metavar="CONFIG", help="A YAML (or JSON) file with a 'discussion' section.")
    run.add_argument("--turns", type=_positive, metavar="N", help="Messages to run (default: the config's).")
    run.add_argument("--out", type=Path, metavar="PATH",
                     help="Transcript file (default: runs/discussion-STEM-TIME.json).")
    run.add_argument("--verbose", action="store_true", help="Print each tool call and its result as it happens.")
    _common(run)
    run.set_defaults(handler=_discuss)


def register_debate(subparsers: argparse._SubParsersAction) -> None:
    debate = subparsers.add_parser("debate", help="Debates in phases between agents with tools.",
                                   description="Debates: agents with their own models, tools and tool-call limits "
                                               "answer a topic in rounds of proposal, critique and refinement.")
    debate.set_defaults(handler=lambda args: debate.print_help() or 0)
    sub = debate.add_subparsers(dest="debate_command", metavar="SUBCOMMAND")
    run = sub.add_parser("run", help="Run (or resume) a debate from its JSON config.",
                         description="Run a debate, saving its state after every contribution; run again with the "
                                     "same config and state file to resume where it stopped.",
                         epilog="example: toolsel debate run examples/debate.json --rounds 1 --verbose")
    run.add_argument("config", metavar="CONFIG", help="A JSON (or YAML) file with a 'debate' section.")
    run.add_argument("--rounds", type=_positive, metavar="N", help="Rounds to run (default: the config's).")
    run.add_argument("--verbose", action="store_true", help="Print each tool call and its result as it happens.")
    run.add_argument("--state", type=Path, metavar="PATH",
                     help="State file (default: runs/debate-STEM/state.json); resumed when it exists.")
    run.add_argument("--fresh", action="store_true", help="Start over even if the state file exists.")
    _common(run)
    run.set_defaults(handler=_debate)

    show = sub.add_parser("show", help="Tool use per agent and phase in a debate's state file.",
                          description="Summarise a debate's state file: tool calls, failures, limit hits, "
                                      "escalations, tokens and seconds per agent and phase.")
    show.add_argument("state", type=Path, metavar="STATE", help="A debate state file.")
    show.add_argument("--by", choices=("phase", "contribution"), default="phase",
                      help="One row per agent and phase (default) or per contribution.")
    show.add_argument("--json", action="store_true", help="Print the rows as JSON.")
    show.set_defaults(handler=_show)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-cache", action="store_true", help="Turn DSPy's response cache off.")
    parser.add_argument("--no-mlflow", action="store_true", help="Do not log the run to MLflow.")
    add_tracking_flag(parser)


# ------------------------------------------------------------------------------------------------ discussions
def _discuss(args: argparse.Namespace) -> int:
    from tool_selection.conversations.config import load_discussion_config
    from tool_selection.conversations.discussion import DiscussionManager
    from tool_selection.conversations.summary import discussion_rows, format_table, grouped

    config = load_discussion_config(args.config)
    if args.no_cache:
        config = config.model_copy(update={"cache": False})
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or Path("runs") / f"discussion-{Path(args.config).stem}-{stamp}.json"
    manager = DiscussionManager(config, out=out, on_turn=_print_turn, on_call=_print_call if args.verbose else None)
    if manager.transcript.skipped_tools:
        print(f"skipped tools: {', '.join(manager.transcript.skipped_tools)}")
    transcript = manager.run(args.turns)
    rows = discussion_rows(transcript)
    print()
    print(format_table(rows, TURN_COLUMNS))
    print()
    print(format_table(grouped(rows, ("agent", "role")), ("agent", "role", *GROUP_COLUMNS)))
    print(f"\ntranscript: {out}")
    if not args.no_mlflow:
        params = {"goal": config.goal, "turns": len(transcript.turns), "cache": config.cache,
                  **{f"model.{k}": f"{m.type} ({m.role}, {m.strategy})" for k, m in config.models.items()},
                  "tools": ",".join(e.name for e in config.tools.registry if e.enabled) if config.tools.enabled
                  else "off",
                  "pairs": ";".join(f"{p.primary}->{p.secondary} {p.detector}@{p.threshold} {p.strategy} "
                                    f"x{p.max_retries}" for p in config.collaboration.pairs)
                  if config.collaboration.enabled else "off"}
        print(f"mlflow run: {_log('discussion', params, rows, out, f'discussion-{Path(args.config).stem}', args)}")
    return 0


def _print_turn(turn: Contribution) -> None:
    meta = turn.metadata
    failed = f", {meta.failed_calls} failed" if meta.failed_calls else ""
    extra = (f"{len(meta.tool_calls)} tool call(s){failed}" + (", limit hit" if meta.limit_hit else "")
             + (f", {len(meta.escalations)} escalation(s)" if meta.escalations else "")
             + (f", error: {meta.error[:120]}" if meta.error else ""))
    print(f"[{turn.agent_id} / {turn.agent_role}] {_preview(turn.content)}\n    ({extra}; {meta.seconds:.1f} s)",
          flush=True)


def _print_call(speaker: str, record: Any) -> None:
    arguments = json.dumps(record.arguments, ensure_ascii=False, default=str)
    result = json.dumps(record.result, ensure_ascii=False, default=str)
    print(f"    {speaker} -> {record.tool_name}({_preview(arguments, 200)}) "
          f"{'ok' if record.ok else 'FAILED'}: {_preview(result, 300)}", flush=True)


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    text = " ".join(text.split()) or "(no answer)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------------------------------------ debates
def _debate(args: argparse.Namespace) -> int:
    from tool_selection.conversations.config import load_debate_config
    from tool_selection.conversations.debate import DebateRunner, default_state_path
    from tool_selection.conversations.state import DebateState
    from tool_selection.conversations.summary import debate_rows, format_table, grouped

    config = load_debate_config(args.config)
    if args.no_cache:
        config = config.model_copy(update={"cache": False})
    state_path = args.state or default_state_path(args.config)
    state = DebateState.load(state_path) if state_path.exists() and not args.fresh else None
    if state is not None:
        done = sum(len(r.contributions) for r in state.rounds)
        print(f"resuming {state_path}: {done} contribution(s) made, status {state.status}")

    def contributed(number: int, contribution: Contribution) -> None:
        print(f"round {number} {contribution.type}: ", end="")
        _print_turn(contribution)

    runner = DebateRunner(config, state=state, state_path=state_path, on_contribution=contributed,
                          on_call=_print_call if args.verbose else None)
    state = runner.run(args.rounds)
    rows = debate_rows(state)
    print()
    print(format_table(grouped(rows, ("agent", "phase")), ("agent", "phase", *GROUP_COLUMNS)))
    print(f"\nstate: {state_path}")
    if not args.no_mlflow:
        params = {"topic": config.topic, "rounds": state.rounds_planned, "cache": config.cache,
                  **{f"agent.{a.id}": f"{a.model} ({a.role}; tools {_tool_names(a.tools)}; limit {a.tool_call_limit}; "
                                      f"T={a.temperature})" for a in config.agents}}
        print(f"mlflow run: {_log('debate', params, rows, state_path, f'debate-{Path(args.config).stem}', args)}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from tool_selection.conversations.state import DebateState
    from tool_selection.conversations.summary import debate_rows, format_table, grouped, totals

    state = DebateState.load(args.state)
    rows = debate_rows(state)
    table = rows if args.by == "contribution" else grouped(rows, ("agent", "phase"))
    if args.json:
        print_json(table)
        return 0
    done = sum(len(r.completed_phases) for r in state.rounds)
    print(f"topic: {state.config.topic}\nstatus: {state.status}; {done} of {3 * state.rounds_planned} phases done; "
          f"{state.seconds:.0f} s speaking\n")
    keys = ("round", "phase", "agent") if args.by == "contribution" else ("agent", "phase")
    extra = ("stop", "error") if args.by == "contribution" else ()
    print(format_table(table, (*keys, *GROUP_COLUMNS, *extra)))
    print()
    print(format_table([{"total": "all", **totals(rows)}], ("total", *GROUP_COLUMNS[:-1])))
    return 0


# ------------------------------------------------------------------------------------------------ shared
def _log(kind: str, params: dict[str, Any], rows: list[dict[str, Any]], artifact: Path, run_name: str,
         args: argparse.Namespace) -> str:
    from tool_selection.conversations.summary import grouped, totals
    from tool_selection.conversations.tracking import log_conversation

    metrics = totals(rows)
    for group in grouped(rows, ("agent",)):
        metrics.update({f"{group['agent']}.{name}": group[name] for name in ("tool_calls", "failed_calls",
                                                                             "limit_hits", "escalations", "seconds",
                                                                             "cpu_seconds")})
    return log_conversation(kind=kind, params=params, metrics=metrics, artifact=artifact, run_name=run_name,
                            uri=args.tracking_uri)


def _tool_names(schemas: list[dict[str, Any]]) -> str:
    return ",".join((s.get("function") or s)["name"] for s in schemas) or "none"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
