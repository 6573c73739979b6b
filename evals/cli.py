"""``toolsel eval`` (run a suite), ``toolsel eval compare`` (two runs side by side) and ``toolsel suites``."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evals.cli_experiment import (
    EXPERIMENT_TYPE,
    add_loop_flags,
    add_run_flags,
    add_selector_flags,
    experiment,
    given,
    loop_section,
    run_config,
    selector_spec,
)
from tool_selection.cli import add_deferred_command
from tool_selection.defaults import DEFAULT_MODEL, DEFAULT_SUITE
from tool_selection.errors import ToolSelectionError
from tool_selection.flags import add_field_flag, count
from tool_selection.run_config import add_tracking_flag
from tool_selection.strategies import DEFAULT_STRATEGY

if TYPE_CHECKING:
    import pandas as pd

    from evals.experiment import Experiment, LoopSection
    from evals.loop_eval import LoopSetup
    from tool_selection.agent import LoopLimits



def register(subparsers: argparse._SubParsersAction) -> None:
    """``toolsel eval`` (with compare, rescore and loop), ``optimize``, ``strategies``, ``suites`` and the
    report commands."""
    run = subparsers.add_parser(
        "eval", help="Evaluate a selector on a suite (or compare two runs).",
        description="Evaluate a tool selector on an evaluation suite. Per-case results go to the run directory "
                    "(resumable) and to MLflow. 'toolsel eval compare A B' compares two runs.",
    )
    add_field_flag(run, EXPERIMENT_TYPE, "suite")
    add_field_flag(run, EXPERIMENT_TYPE, "model")
    add_field_flag(run, EXPERIMENT_TYPE, "split")
    run.add_argument("--mcp", type=given, metavar="CMD_OR_URL",
                     help="Evaluate over an MCP server's tools (a command line or a URL): every case's catalog is "
                          "the server's tool list, and its expected calls name those tools.")
    add_selector_flags(run)
    add_run_flags(run)
    run.set_defaults(handler=_eval)

    sub = run.add_subparsers(dest="eval_command", metavar="compare|loop|rescore")
    compare = sub.add_parser("compare", help="Two runs' metrics side by side, with confidence intervals.",
                             description="Compare two evaluation runs (run directories or MLflow run ids): "
                                         "each metric with its 95% CI, and the paired difference B - A.")
    compare.add_argument("run_a", help="Run directory or MLflow run id.")
    compare.add_argument("run_b", help="Run directory or MLflow run id.")
    add_tracking_flag(compare)
    compare.add_argument("--plot", metavar="FILE", help="Also draw B - A per metric, with its interval (PNG or SVG).")
    compare.set_defaults(handler=_compare)

    _register_rescore(sub)
    _register_loop(sub)
    _register_optimize(subparsers)

    strategies = subparsers.add_parser("strategies", help="List the selection strategies.",
                                       description="The selection strategies a selector can use (--strategy NAME; "
                                                   "gate+NAME adds the relevance gate).")
    strategies.set_defaults(handler=_strategies)

    suites = subparsers.add_parser("suites", help="List the available suites and their composition.",
                                   description="List the available suites with case, tag and split counts.")
    suites.add_argument("name", nargs="?", help="Show one suite's tag and split counts.")
    suites.add_argument("--card", metavar="NAME", help="Print a suite's card: size per split and tag (counted now), "
                                                       "its tools, sources and how the cases were written.")
    suites.add_argument("--export", metavar="FOLDER", help="Save the named suite as a Hugging Face dataset in FOLDER "
                                                           "(save_to_disk; it loads back as --suite hf:FOLDER).")
    suites.set_defaults(handler=_suites)

    from evals.reports.cli import register as register_reports

    register_reports(subparsers)
    add_deferred_command(subparsers, "sweep", module="evals.sweep_cli",
                         help="Suites x models x strategies (and other settings) in one command: a table with "
                              "intervals, paired comparisons and a figure.")


def _register_rescore(sub: argparse._SubParsersAction) -> None:
    rescore = sub.add_parser("rescore", help="Score a finished run again with today's parsers and scoring.",
                             description="Re-read the raw answer each parse failure kept, with the run's strategy "
                                         "and today's parsers, check and score every other row's calls again, and "
                                         "rewrite the run's rows and summaries; no model call (greedy answers do "
                                         "not change; latency and tokens stay measured).")
    rescore.add_argument("run_dirs", nargs="+", help="Run directories of 'toolsel eval'.")
    rescore.add_argument("--suite", help="The suite the runs were made on, for runs that do not record where it is "
                                         "(runs on a .jsonl file made before suite_ref was recorded).")
    rescore.add_argument("--undeclared-arguments", choices=["drop"],
                         help="Score the run as 'toolsel eval --undeclared-arguments drop' would have (the option "
                              "reads the same answers differently): written to a copy, --into DIR.")
    rescore.add_argument("--into", metavar="DIR", help="With --undeclared-arguments: the copy's directory.")
    rescore.set_defaults(handler=_rescore)


LOOP_SKIPS = ("threads", "serve", "ray", "temperature", "mlflow", "tracking_uri", "experiment", "fresh", "progress")
"""Run settings the loop does not take: its tasks run one at a time, greedily, without MLflow."""


def _register_loop(sub: argparse._SubParsersAction) -> None:
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


OPTIMIZE_SKIPS = ("program", "allow_tool_changes", "gate_model", "gate_threshold", "retrieve", "retriever", "rerank",
                  "undeclared_arguments", "relevance_signals")
"""Selector fields an optimization does not take: it compiles a zero-shot selector's prompt, with its strategy,
decoding and relevance model, and scores the selection."""


def _register_optimize(subparsers: argparse._SubParsersAction) -> None:
    opt = subparsers.add_parser(
        "optimize", help="Optimize a selector's prompt on a suite's train split and save it.",
        description="Optimize a MultiToolSelector with a DSPy optimizer: trains on the suite's train split, selects "
                    "on dev, never touches test; then scores the compiled selector on test and logs it to MLflow.",
    )
    opt.add_argument("--suite", default=DEFAULT_SUITE,
                     help="Suite name, bfcl:CATEGORY[+...], or .jsonl path. A loop suite (multistep) or a BFCL "
                          "multi-turn category saves its train tasks solved, for 'eval loop --trajectories'.")
    opt.add_argument("--model", default=DEFAULT_MODEL, help="The student model spec.")
    add_selector_flags(opt, skip=OPTIMIZE_SKIPS)  # the selector it starts from
    search = opt.add_argument_group("the optimizer and its budget")
    search.add_argument("--target", choices=["program", "descriptions"], default="program",
                        help="What is optimized: the selector's prompt (default), or the descriptions its tools show "
                             "(GEPA; the tool set is untouched).")
    search.add_argument("--optimizer",
                        help="DSPy optimizer (default: bootstrap, gepa with --target descriptions; an unknown name lists "
                             "the registered ones).")
    search.add_argument("--teacher", help="A model spec that generates demonstrations / reflects (default: the student).")
    search.add_argument("--budget", choices=["light", "medium", "heavy"], default="light", help="Search budget.")
    search.add_argument("--max-metric-calls", type=count(), metavar="N",
                        help="GEPA only: stop its search after N metric calls instead of the budget's number.")
    search.add_argument("--allow-false-abstention-rise", action="store_true",
                        help="Save the program even if its dev false abstention is more than 10 points above the "
                             "unoptimized selector's (refused by default: such a program gains by refusing).")
    cases = opt.add_argument_group("the cases: train to learn from, dev to choose on, test to score the result")
    cases.add_argument("--train-limit", type=count(), help="Use only the first N train cases.")
    cases.add_argument("--dev-limit", type=count(), help="Use only the first N dev cases.")
    cases.add_argument("--test-limit", type=count(), help="Score only the first N test cases.")
    cases.add_argument("--no-test", action="store_true", help="Skip the final test evaluation.")
    opt.add_argument("--out", help="Directory for the compiled selector (default: "
                                   "programs/<suite>-<optimizer>[-descriptions]-<model>).")
    add_run_flags(opt, skip=("run_dir", "limit", "sample", "seed", "fresh", "serve", "ray"))
    opt.set_defaults(handler=_optimize)


def _optimize_loop(args: argparse.Namespace) -> int:
    """A loop suite's optimization: its train tasks solved (a loop suite's verified oracles, BFCL multi-turn's
    ground-truth first turns), saved as trajectories for 'eval loop'."""
    from evals.naming import slug
    from tool_selection.trajectories import save_trajectories

    if args.teacher or args.optimizer not in (None, "bootstrap") or args.target != "program":
        raise ToolSelectionError("A loop suite is optimized by showing its train tasks solved (no teacher, optimizer "
                                 "or target to choose): leave --teacher, --optimizer and --target out.")
    if args.suite.startswith("bfcl:"):
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


def _eval(args: argparse.Namespace) -> int:
    if args.mcp:
        from tool_selection.mcp import connect_mcp

        with connect_mcp(args.mcp) as server:
            return _report(_run_eval(args, tools=server.tool_set().registry()))
    return _report(_run_eval(args))


def _run_eval(args: argparse.Namespace, tools=None):
    from tool_selection.lm.specs import check_n_ctx

    chosen = experiment(args)  # checked before the model is loaded
    selector, run = chosen.selector, chosen.run
    check_n_ctx(chosen.model, run.n_ctx)
    check_before_loading(chosen.suite, model=chosen.model, program=selector.program, relevance=selector.relevance,
                         tracking_uri=(run.tracking_uri or "") if run.mlflow else None)
    return chosen.evaluate(tools=tools)


def check_before_loading(suite: str, *, model: str | None = None, program: str | None = None,
                         relevance: str | None = None, tracking_uri: str | None = None) -> None:
    """What a run names that can be checked before the heavy libraries load (a second or more), so that a mistake
    answers at once: a suite of this repository or a file (read and validated), a program and a relevance model
    file, the MLflow store's scheme (``tracking_uri``: "" for the default, None for no MLflow), and the server a
    model string is sent to."""
    from evals.suite import load_suite
    from tool_selection.defaults import DEFAULT_RELEVANCE
    from tool_selection.lm.endpoint import check_model_route
    from tool_selection.tracking import check_scheme

    if tracking_uri is not None:
        check_scheme(tracking_uri or None)
    if not suite.startswith(("bfcl:", "hf:")):
        load_suite(suite)
    if program is not None and not Path(program).exists():
        raise ToolSelectionError(f"{program} is missing: give a compiled selector's folder or program file "
                                 "('toolsel optimize' writes one).")
    if relevance not in (None, DEFAULT_RELEVANCE, "none"):
        from tool_selection.relevance.model import RelevanceModel

        RelevanceModel.load(relevance)
    if model is not None:
        check_model_route(model)


def _report(result) -> int:
    print()
    print(f"suite {result.params['suite']} ({result.params['split']}, {len(result.results)} cases), "
          f"model {result.params['model']}, strategy {result.params['strategy']}, program {result.params['program']}")
    if "strategy_reason" in result.params:
        print(result.params["strategy_reason"])
    if "relevance" in result.params:
        print(_relevance_line(result))
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
    return _every_call_failed(result.results)


def _every_call_failed(rows) -> int:
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


def _optimize(args: argparse.Namespace) -> int:
    from evals.suite import LOOP_SUITES

    if (LOOP_SUITES / f"{args.suite}.jsonl").is_file() or args.suite.startswith("bfcl:multi_turn"):
        return _optimize_loop(args)
    check_before_loading(args.suite, model=args.model)
    from evals.optimization import OptimizeSettings, optimize

    chosen = {"optimizer": args.optimizer} if args.optimizer else {}
    settings = OptimizeSettings.build(  # checked before any model loads
        target=args.target, **chosen, teacher=args.teacher, budget=args.budget,
        max_metric_calls=args.max_metric_calls, train_limit=args.train_limit,
        dev_limit=args.dev_limit, test_limit=args.test_limit, evaluate_test=not args.no_test,
        allow_false_abstention_rise=args.allow_false_abstention_rise)
    result = optimize(args.suite, args.model, settings,
                      selector=selector_spec(args, defaults={"relevance": "none"}),
                      run=run_config(args, run_dir=args.out))
    print(f"\ncompiled selector: {result.out_dir}")
    budget = f"{args.max_metric_calls} metric calls" if args.max_metric_calls else args.budget
    print(f"optimizer {settings.optimizer} ({budget}{', descriptions' if args.target == 'descriptions' else ''}): "
          f"{result.wall_time_s:.0f} s, {result.model_calls} model calls")
    for name, value in result.manifest.scores.items():
        print(f"  {name:<16} {_fmt(value)}")
    if result.mlflow_run_id:
        print(f"MLflow run: {result.mlflow_run_id}")
    return 0


def _fmt(value: float, percent: bool = True) -> str:
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
            shown[column] = shown[column].map(lambda v: _fmt(v, percent=False))
        elif column != "tag":
            shown[column] = shown[column].map(_fmt)
    return shown.to_string(index=False)


def format_summary(summary: dict[str, float]) -> str:
    from evals.metrics import METRICS

    lines = []
    for name, (_, description) in METRICS.items():
        if name not in summary:
            continue
        percent = name not in ("latency_s", "input_tokens", "output_tokens")
        value = _fmt(summary[name], percent)
        if f"{name}_ci_low" in summary and not math.isnan(summary[f"{name}_ci_low"]):
            value += f"  [{_fmt(summary[f'{name}_ci_low'])}, {_fmt(summary[f'{name}_ci_high'])}]"
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


def _load(ref: str, uri: str | None) -> pd.DataFrame:
    from evals.runs import open_run

    return open_run(ref, uri).rows


def _rescore(args: argparse.Namespace) -> int:
    from evals.rescore import main, rescore_dropping

    if args.undeclared_arguments or args.into:
        if not (args.undeclared_arguments and args.into) or len(args.run_dirs) != 1:
            raise ToolSelectionError("--undeclared-arguments drop and --into DIR go together, with one run directory.")
        changed = rescore_dropping(args.run_dirs[0], args.into, suite=args.suite)
        print(f"{args.into}: {changed} row(s) scored differently with undeclared arguments dropped")
        return 0
    return main(args.run_dirs, suite=args.suite)


def _compare(args: argparse.Namespace) -> int:
    from evals.runs import check_run_ref

    check_run_ref(args.run_a)  # before the heavy imports
    check_run_ref(args.run_b)
    from evals.reports.compare import comparison, format_comparison
    from evals.runs import open_run

    if args.plot:
        from evals.reports.figures import check_figure_path

        check_figure_path(args.plot)
    a, b = open_run(args.run_a, args.tracking_uri), open_run(args.run_b, args.tracking_uri)
    result = comparison(a, b)
    print(format_comparison(result))
    if args.plot:
        from evals.reports.figures import paired_figure, save_figure

        print(f"\nfigure: {save_figure(paired_figure(result), args.plot)}")
    return 0


def _strategies(args: argparse.Namespace) -> int:
    from tool_selection.named_registry import format_listing
    from tool_selection.strategies import STRATEGIES

    rows = [(name, summary + (" (default)" if name == DEFAULT_STRATEGY else ""))
            for name, summary in STRATEGIES.listing(lambda strategy: strategy.summary)]
    rows.append(("gate+NAME", "a relevance question first (Yes/No, scored by log-probabilities); no call below "
                              "--gate-threshold"))
    print(format_listing(rows))
    return 0


def _card(name: str) -> int:
    from evals.suite import SUITES_DIR, load_suite

    suite = load_suite(name)
    tags = sorted(suite.tag_counts())
    splits = ["train", "dev", "test"]
    counts = {split: suite.split(split).tag_counts() for split in splits}
    print(f"# {suite.name}: {len(suite)} cases\n")
    print("| tag | " + " | ".join(splits) + " | all |\n|---|" + "---|" * (len(splits) + 1))
    print("| cases | " + " | ".join(str(len(suite.split(s))) for s in splits) + f" | {len(suite)} |")
    for tag in tags:
        print(f"| {tag} | " + " | ".join(str(counts[s][tag]) for s in splits) + f" | {suite.tag_counts()[tag]} |")
    tool_sets = sorted({c.tool_set for c in suite.cases if c.tool_set})
    if tool_sets:
        from tool_selection import load_tool_set

        for tool_set in tool_sets:
            print(f"\ntools ({tool_set}): {', '.join(load_tool_set(tool_set).names())}")
    card = SUITES_DIR / f"{name}.card.md"
    if card.is_file():
        print("\n" + card.read_text(encoding="utf-8"))
    else:
        print(f"\n(no card file {card.name}: the counts above are all there is)")
    return 0


def _suites(args: argparse.Namespace) -> int:
    from evals.suite import available_suites, load_suite

    if args.card:
        return _card(args.card)
    if args.export:
        if not args.name:
            raise ToolSelectionError("--export saves one suite: name it, e.g. toolsel suites finance --export FOLDER.")
        suite = load_suite(args.name)
        suite.to_dataset().save_to_disk(args.export)
        print(f"{len(suite)} cases of {suite.name} saved to {args.export}; load them with --suite hf:{args.export}")
        return 0

    from tool_selection.named_registry import format_listing

    rows = []
    for name in [args.name] if args.name else available_suites():
        try:
            suite = load_suite(name)
        except ToolSelectionError as error:
            if args.name:
                raise
            rows.append((name, f"(unavailable: {str(error).splitlines()[0]})"))
            continue
        splits = ", ".join(f"{k} {v}" for k, v in sorted(suite.split_counts().items()))
        rows.append((name, f"{len(suite):>4} cases  ({splits})"))
    print(format_listing(rows))
    if args.name:
        print(format_listing([(tag, str(count)) for tag, count in suite.tag_counts().most_common()], indent="  "))
    return 0


def _loop(args: argparse.Namespace) -> int:
    chosen = experiment(args, selector_defaults={"relevance": "none"}, loop=loop_section(args))
    if chosen.suite.startswith("bfcl:"):
        return _bfcl_multi_turn(chosen)
    return _loop_suite(chosen)


def _loop_suite(chosen: Experiment) -> int:
    from evals.loop_eval import load_loop_suite, run_loop_suite
    from evals.naming import slug
    from tool_selection.agent import LoopEscalation, LoopLimits
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
    models = "+".join([chosen.model] + ([f"{loop.escalation}-{loop.secondary}"] if loop.secondary else []))
    run_dir = run.run_dir or Path("runs") / "loop" / slug(
        f"{chosen.suite}-{chosen.split}-{strategy}{_limits_label(loop)}-{models}")
    escalation = LoopEscalation(secondary_lm=lms[1] if loop.secondary else None, strategy=loop.escalation,
                                threshold=loop.threshold)
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
    from tool_selection.agent import LoopEscalation
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
    models = "+".join([chosen.model] + ([f"{loop.escalation}-{loop.secondary}"] if loop.secondary else []))
    sample = f"-sample{run.sample}-seed{run.seed}" if run.sample else ""
    run_dir = run.run_dir or Path("runs") / "loop" / slug(
        f"{chosen.suite}-{chosen.split}{sample}-{strategy}{_limits_label(loop)}-{models}")
    escalation = LoopEscalation(secondary_lm=lms[1] if loop.secondary else None, strategy=loop.escalation,
                                threshold=loop.threshold)
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
