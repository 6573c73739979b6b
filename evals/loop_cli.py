"""``toolsel eval loop`` (tasks through the tool-calling loop, a loop suite's or BFCL multi-turn's) and the
optimization of a loop suite (its train tasks solved, saved as trajectories)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evals.cli_experiment import EXPERIMENT_TYPE, add_run_flags, add_selector_flags, experiment
from evals.experiment import add_loop_flags, loop_section
from tool_selection.defaults import DEFAULT_MODEL
from tool_selection.errors import ToolSelectionError
from tool_selection.flags import add_field_flag
from tool_selection.strategies import DEFAULT_STRATEGY

if TYPE_CHECKING:
    from evals.experiment import Experiment, LoopSection
    from evals.loop_eval import LoopSetup
    from tool_selection.agent import LoopLimits
    from tool_selection.escalation import EscalationPolicy

__all__ = ["optimize_loop", "register_loop"]


LOOP_SKIPS = ("threads", "serve", "ray", "temperature", "mlflow", "tracking_uri", "experiment", "fresh", "progress")
"""Run settings the loop does not take: its tasks run one at a time, greedily, without MLflow."""


def register_loop(sub: argparse._SubParsersAction) -> None:
    loop = sub.add_parser("loop", help="Run multi-step tasks through the tool-calling loop and score how they end.",
                          description="Each task of a loop suite (evals/suites/loop/NAME.jsonl) runs the agent loop: "
                                      "the model decides, tools execute, results go back, until it answers. Scored on "
                                      "the calls made, the tools' state and the final answer; resumable.")
    loop.add_argument("--suite", default="multistep",
                      help="Loop suite name or .jsonl path, or bfcl:multi_turn_CATEGORY[+...] (BFCL's multi-turn "
                           "categories, scored by BFCL's checker) (default: multistep).")
    loop.add_argument("--model", default=DEFAULT_MODEL, help=f"The primary model (default: {DEFAULT_MODEL}).")
    add_field_flag(loop, EXPERIMENT_TYPE, "split")
    add_selector_flags(loop)
    add_run_flags(loop, skip=LOOP_SKIPS)
    add_loop_flags(loop)
    loop.set_defaults(handler=_loop)


def optimize_loop(args: argparse.Namespace) -> int:
    """A loop suite's optimization: its train tasks solved (a loop suite's verified oracles, BFCL multi-turn's
    ground-truth first turns), saved as trajectories for 'eval loop'."""
    from evals.naming import slug
    from evals.suite import suite_source
    from tool_selection.trajectories import save_trajectories

    if args.teacher or args.optimizer not in (None, "bootstrap") or args.target not in (None, "program"):
        raise ToolSelectionError("A loop suite is optimized by showing its train tasks solved (no teacher, optimizer "
                                 "or target to choose): leave --teacher, --optimizer and --target out.")
    if suite_source(args.suite, "tasks").name == "bfcl-multi-turn":
        from evals.bfcl_multi_turn import ground_truth_trajectories, load_multi_turn

        train = [t for t in load_multi_turn(args.suite.removeprefix("bfcl:").split("+"))
                 if t.split == "train"][: args.train_limit]
        trajectories, source = ground_truth_trajectories(train), "ground_truth"
        what = "ground-truth first turns run on their back ends without a failure"
    else:
        from evals.loop_eval import load_loop_suite, oracle_trajectories

        train = [t for t in load_loop_suite(args.suite) if t.split == "train"][: args.train_limit]
        trajectories, source, what = oracle_trajectories(train), "oracle", "oracles pass their task's check"
    out = Path(args.out or f"programs/{slug(args.suite)}-trajectories")
    path = save_trajectories(trajectories, out / "trajectories.json", suite=args.suite, split="train", source=source)
    print(f"{len(trajectories)} of {len(train)} train tasks' {what}: saved as trajectories in {path}\n"
          f"use them with: toolsel eval loop --suite {args.suite} --trajectories {path.parent}")
    return 0


def _loop(args: argparse.Namespace) -> int:
    from evals.suite import suite_source

    chosen = experiment(args, selector_defaults={"relevance": "none"}, loop=loop_section(args))
    if suite_source(chosen.suite, "tasks").name == "bfcl-multi-turn":
        return _bfcl_multi_turn(chosen)
    return _loop_suite(chosen)


def _loop_suite(chosen: Experiment) -> int:
    from evals.loop_eval import load_loop_suite, run_loop_suite
    from evals.naming import slug
    from tool_selection.agent import LoopLimits
    from tool_selection.lm import get_lm, prepare_lm
    from tool_selection.run_config import RunConfig

    loop, run = chosen.loop, chosen.run
    strategy = chosen.selector.strategy or DEFAULT_STRATEGY
    if run.sample is not None or run.n_ctx is not None:
        raise ToolSelectionError("--sample and --n-ctx apply to BFCL multi-turn suites (--suite bfcl:multi_turn_...).")
    setup = _loop_setup(loop, LoopLimits())  # the solved tasks read before any model loads
    tasks = [t for t in load_loop_suite(chosen.suite) if chosen.split == "all" or t.split == chosen.split][: run.limit]
    if not tasks:
        raise ToolSelectionError(f"Loop suite {chosen.suite!r} has no {chosen.split!r} tasks.")
    lms = [get_lm(spec, max_tokens=run.max_tokens, cache=run.cache) for spec in
           (chosen.model, *([loop.secondary] if loop.secondary else []))]
    for lm in lms:
        prepare_lm(lm)
    models = _models_label(chosen)
    run_dir = run.run_dir or Path("runs") / "loop" / slug(
        f"{chosen.suite}-{chosen.split}-{strategy}{_limits_label(loop)}-{models}")
    escalation = _escalation(loop, lms)
    result = run_loop_suite(tasks, lms[0], selector=chosen.selector,
                            run=RunConfig(run_dir=run_dir), escalation=escalation,
                            progress=lambda line: print(line, flush=True),
                            setup=setup)
    s = result.summary
    print(f"\n{chosen.suite} ({chosen.split}, {int(s['tasks'])} tasks), {models}, strategy {strategy}"
          f"{_limits_words(loop)}")
    print(f"  task success        {100 * s['task_success']:.1f}%  [{100 * s['task_success_ci_low']:.1f}, "
          f"{100 * s['task_success_ci_high']:.1f}]")
    for key, label in (("steps", "steps per task"), ("calls", "tool calls per task"), ("tool_errors", "tool errors"),
                       ("errors_recovered", "errors recovered"), ("escalations", "escalations"),
                       ("seconds", "seconds per task")):
        print(f"  {label:<19} {s[key]:.2f}")
    print(f"\nper-task results: {result.run_dir}")
    return 0


def _models_label(chosen: Experiment) -> str:
    """The models of a loop run, for its folder and its summary: the primary, and how and to whom it escalates."""
    loop = chosen.loop
    return "+".join([chosen.model] + ([f"{loop.escalation}-{loop.secondary}"] if loop.secondary else []))


def _escalation(loop: LoopSection, lms: list) -> EscalationPolicy:
    """The escalation policy of the loop flags: to the secondary's LM (``lms[1]``), if any; the policy's own
    threshold unless one is given."""
    from tool_selection.escalation import EscalationPolicy  # lazy: 'toolsel --help' builds this module's parser

    return EscalationPolicy(secondary_lm=lms[1] if loop.secondary else None, strategy=loop.escalation,
                            **({"threshold": loop.threshold} if loop.threshold is not None else {}))


def _loop_setup(loop: LoopSection, limits: LoopLimits) -> LoopSetup:
    """How each task's turns run, from the loop flags: ``limits`` with the flags' first step and finish, and the
    solved tasks of --trajectories (read now, so that a wrong path fails before a model loads)."""
    from dataclasses import replace

    from evals.loop_eval import LoopSetup
    from tool_selection.trajectories import load_trajectories

    trajectories = tuple(load_trajectories(loop.trajectories)) if loop.trajectories else ()
    return LoopSetup(replace(limits, first_step=loop.first_step, finish=loop.finish), trajectories, loop.shown,
                     loop.trajectories_as)


def _limits_label(loop: LoopSection) -> str:
    """What a loop run changes of how turns run, for its folder and its summary line ("" for the defaults)."""
    return (("-first-step-required" if loop.first_step == "required" else "")
            + ("-finish-tool" if loop.finish == "tool" else "")
            + (f"-trajectories{loop.shown}{'-text' if loop.trajectories_as == 'text' else ''}"
               if loop.trajectories else ""))


def _limits_words(loop: LoopSection) -> str:
    return ((", first step required" if loop.first_step == "required" else "")
            + (", turns end by calling finish" if loop.finish == "tool" else "")
            + (f", up to {loop.shown} solved tasks shown{' as text' if loop.trajectories_as == 'text' else ''}"
               if loop.trajectories else ""))


def _bfcl_multi_turn(chosen: Experiment) -> int:
    from evals.bfcl_multi_turn import TURN_LIMITS, load_multi_turn, multi_turn_n_ctx, run_multi_turn
    from evals.naming import slug
    from tool_selection.lm import LocalEngineOptions, get_lm, prepare_lm
    from tool_selection.lm.specs import ModelSpec
    from tool_selection.run_config import RunConfig

    loop, run = chosen.loop, chosen.run
    strategy = chosen.selector.strategy or DEFAULT_STRATEGY
    setup = _loop_setup(loop, TURN_LIMITS)
    categories = chosen.suite.removeprefix("bfcl:").split("+")
    tasks = [t for t in load_multi_turn(categories) if chosen.split == "all" or t.split == chosen.split]
    if not tasks:
        raise ToolSelectionError(f"{chosen.suite!r} has no {chosen.split!r} tasks.")
    specs = (chosen.model, *([loop.secondary] if loop.secondary else []))
    lms = [get_lm(spec, max_tokens=run.max_tokens, cache=run.cache,
                  local=LocalEngineOptions(n_ctx=multi_turn_n_ctx(run.n_ctx)) if ModelSpec.parse(spec).is_local
                  else None) for spec in specs]
    for lm in lms:
        prepare_lm(lm)
    models = _models_label(chosen)
    sample = f"-sample{run.sample}-seed{run.seed}" if run.sample else ""
    run_dir = run.run_dir or Path("runs") / "loop" / slug(
        f"{chosen.suite}-{chosen.split}{sample}-{strategy}{_limits_label(loop)}-{models}")
    escalation = _escalation(loop, lms)
    run = RunConfig.build(run_dir=run_dir, max_tokens=run.max_tokens, sample=run.sample, seed=run.seed,
                          limit=run.limit)
    table, s = run_multi_turn(tasks, lms[0], selector=chosen.selector,
                              run=run, escalation=escalation, progress=lambda line: print(line, flush=True),
                              setup=setup)
    print(f"\n{chosen.suite} ({chosen.split}{', ' + sample[1:] if sample else ''}, {int(s['tasks'])} tasks), {models}, "
          f"strategy {strategy}{_limits_words(loop)}; scored by BFCL's multi-turn checker")
    print(f"  task success        {100 * s['task_success']:.1f}%  [{100 * s['task_success_ci_low']:.1f}, "
          f"{100 * s['task_success_ci_high']:.1f}]")
    print(f"  turn success        {100 * s['turn_success']:.1f}%  (turns passed before a task's first failure)")
    positions = sorted(int(k.split("_")[1]) for k in s if k.startswith("turn_") and k.endswith("_passed"))
    print("  per turn            " + "  ".join(f"{p}: {100 * s[f'turn_{p}_passed']:.0f}%" for p in positions))
    for key, label in (("steps", "steps per task"), ("calls", "tool calls per task"), ("tool_errors", "tool errors"),
                       ("errors_recovered", "errors recovered"), ("escalations", "escalations"),
                       ("reminders", "reminders"), ("turns_summarised", "turns summarised"),
                       ("seconds", "seconds per task")):
        print(f"  {label:<19} {s[key]:.2f}")
    if len(table):
        print("  failures            " + ", ".join(f"{k.removeprefix('multi_turn:')} {v}" for k, v in
                                                   table["error_type"].dropna().value_counts().items()))
    print(f"\nper-task results: {run_dir}")
    return 0
