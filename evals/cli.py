"""``toolsel eval`` (run a suite), ``toolsel eval compare`` (two runs side by side) and ``toolsel suites``."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evals.cli_experiment import add_run_flags, add_selector_flags, count, given, run_config, selector_spec, threshold
from tool_selection.cli import add_deferred_command
from tool_selection.defaults import DEFAULT_MODEL, DEFAULT_SUITE, MAX_CONTEXT, MAX_GENERATED_TOKENS, MAX_THREADS
from tool_selection.errors import ToolSelectionError
from tool_selection.strategies import DEFAULT_STRATEGY

if TYPE_CHECKING:
    import pandas as pd

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
    run.add_argument("--suite", default=DEFAULT_SUITE,
                     help=f"Suite name, bfcl:CATEGORY[+CATEGORY], hf:FOLDER or hf:NAME (a Hugging Face dataset "
                          f"saved to disk or in the local cache), or path to a .jsonl file (default: {DEFAULT_SUITE}).")
    run.add_argument("--model", default=DEFAULT_MODEL, help=f"Model spec (default: {DEFAULT_MODEL}).")
    run.add_argument("--split", default="test", choices=["train", "dev", "test", "all"], help="Split (default: test).")
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
    compare.add_argument("--tracking-uri", help="MLflow tracking URI for run ids.")
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


def _register_loop(sub: argparse._SubParsersAction) -> None:
    loop = sub.add_parser("loop", help="Run multi-step tasks through the tool-calling loop and score how they end.",
                          description="Each task of a loop suite (evals/suites/loop/NAME.jsonl) runs the agent loop: "
                                      "the model decides, tools execute, results go back, until it answers. Scored on "
                                      "the calls made, the tools' state and the final answer; resumable.")
    loop.add_argument("--suite", default="multistep",
                      help="Loop suite name or .jsonl path, or bfcl:multi_turn_CATEGORY[+...] (BFCL's multi-turn "
                           "categories, scored by BFCL's checker) (default: multistep).")
    loop.add_argument("--model", default=DEFAULT_MODEL, help=f"The primary model (default: {DEFAULT_MODEL}).")
    loop.add_argument("--strategy", default=DEFAULT_STRATEGY,
                      help=f"Selection strategy in the loop (default: {DEFAULT_STRATEGY}).")
    loop.add_argument("--split", default="test", choices=["train", "dev", "test", "all"], help="Split (default: test).")
    tasks = loop.add_mutually_exclusive_group()
    tasks.add_argument("--limit", type=count(), help="Only the first N tasks.")
    tasks.add_argument("--sample", type=count(), metavar="N", help="A fixed random sample of N tasks (see --seed).")
    loop.add_argument("--seed", type=int, default=0, help="Seed of --sample (default: 0).")
    loop.add_argument("--n-ctx", type=count(256, MAX_CONTEXT), help="Context of a local model for BFCL multi-turn tasks (default: 16384).")
    loop.add_argument("--secondary", help="A larger model a stuck step escalates to (the loop's stuck detector).")
    loop.add_argument("--escalation", choices=["delegate", "guide"], default="delegate",
                      help="What the secondary does for a stuck step (default: delegate).")
    loop.add_argument("--threshold", type=threshold, default=0.7, help="Stuck score that escalates (default: 0.7).")
    loop.add_argument("--max-tokens", type=count(1, MAX_GENERATED_TOKENS), default=512, help="Generation limit per step (default: 512).")
    loop.add_argument("--first-step", choices=["auto", "required"], default="auto",
                      help="'required' makes each turn's first decision a call (tool_choice; native strategies) "
                           "(default: auto, the model decides).")
    loop.add_argument("--finish", choices=["answer", "tool"], default="answer",
                      help="How a turn ends: an answer without a call (default), or 'tool': every decision is a "
                           "required call and the model ends the turn by calling finish(answer) (native strategies).")
    loop.add_argument("--trajectories", metavar="PATH",
                      help="Solved tasks shown before each task's conversation (the file or folder 'toolsel optimize "
                           "--suite SUITE' wrote for a loop suite or a BFCL multi-turn category).")
    loop.add_argument("--shown", type=count(0, 16), default=2, metavar="N",
                      help="How many of --trajectories open each task: those whose tools the task has (default: 2).")
    loop.add_argument("--trajectories-as", choices=["turns", "text"], default="turns",
                      help="Show --trajectories as earlier turns of the conversation (default) or as examples in "
                           "the system prompt.")
    loop.add_argument("--no-cache", action="store_true", help="Do not use DSPy's cache of model answers.")
    loop.add_argument("--run-dir", help="Where per-task results go (default: runs/loop/<suite>-<split>-<models>).")
    loop.set_defaults(handler=_loop)


def _register_optimize(subparsers: argparse._SubParsersAction) -> None:
    opt = subparsers.add_parser(
        "optimize", help="Optimize a selector's prompt on a suite's train split and save it.",
        description="Optimize a MultiToolSelector with a DSPy optimizer: trains on the suite's train split, selects "
                    "on dev, never touches test; then scores the compiled selector on test and logs it to MLflow.",
    )
    selector = opt.add_argument_group("the suite, the student model and the selector it starts from")
    selector.add_argument("--suite", default=DEFAULT_SUITE,
                          help="Suite name, bfcl:CATEGORY[+...], or .jsonl path. A loop suite (multistep) or a BFCL "
                               "multi-turn category saves its train tasks solved, for 'eval loop --trajectories'.")
    selector.add_argument("--model", default=DEFAULT_MODEL, help="The student model spec.")
    selector.add_argument("--strategy", help=f"Selection strategy to optimize (see 'toolsel strategies'; default: "
                                             f"{DEFAULT_STRATEGY}).")
    selector.add_argument("--adapter", choices=["json", "chat"], help="Former name of the strategy choice: chat = "
                                                                      "--strategy chat-cot.")
    selector.add_argument("--relevance", metavar="auto|none|MODEL_JSON",
                          help="A relevance model to save with the program and apply after its selections ('auto': the "
                               "one shipped for the model); the optimization scores the selection alone.")
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
    search.add_argument("--threads", type=count(1, MAX_THREADS), default=1, help="Parallel evaluations inside the optimizer.")
    search.add_argument("--allow-false-abstention-rise", action="store_true",
                        help="Save the program even if its dev false abstention is more than 10 points above the "
                             "unoptimized selector's (refused by default: such a program gains by refusing).")
    cases = opt.add_argument_group("the cases: train to learn from, dev to choose on, test to score the result")
    cases.add_argument("--train-limit", type=count(), help="Use only the first N train cases.")
    cases.add_argument("--dev-limit", type=count(), help="Use only the first N dev cases.")
    cases.add_argument("--test-limit", type=count(), help="Score only the first N test cases.")
    cases.add_argument("--no-test", action="store_true", help="Skip the final test evaluation.")
    output = opt.add_argument_group("where the compiled selector and its run go")
    output.add_argument("--out", help="Directory for the compiled selector (default: "
                                           "programs/<suite>-<optimizer>[-descriptions]-<model>).")
    output.add_argument("--no-mlflow", action="store_true", help="Do not log to MLflow.")
    output.add_argument("--tracking-uri", help="MLflow tracking URI.")
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

    selector, run = selector_spec(args), run_config(args)  # both checked before the model is loaded
    check_n_ctx(args.model, run.n_ctx)
    check_before_loading(args.suite, model=args.model, program=selector.program, relevance=selector.relevance,
                         tracking_uri=(run.tracking_uri or "") if run.mlflow else None)
    from evals.evaluation import evaluate

    return evaluate(args.suite, args.model, selector=selector, run=run,
                    split=None if args.split == "all" else args.split, tools=tools)


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
    from tool_selection.run_config import RunConfig
    from tool_selection.spec import SelectorSpec

    strategy = "chat-cot" if args.adapter == "chat" and args.strategy is None else args.strategy
    chosen = {"optimizer": args.optimizer} if args.optimizer else {}
    settings = OptimizeSettings.build(  # checked before any model loads
        target=args.target, **chosen, teacher=args.teacher, budget=args.budget,
        max_metric_calls=args.max_metric_calls, train_limit=args.train_limit,
        dev_limit=args.dev_limit, test_limit=args.test_limit, evaluate_test=not args.no_test,
        allow_false_abstention_rise=args.allow_false_abstention_rise)
    result = optimize(args.suite, args.model, settings,
                      selector=SelectorSpec.build(strategy=strategy, relevance=args.relevance or "none"),
                      run=RunConfig.build(run_dir=args.out, threads=args.threads, mlflow=not args.no_mlflow,
                                          tracking_uri=args.tracking_uri))
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
    from evals.loop_eval import load_loop_suite, run_loop_suite
    from evals.naming import slug
    from tool_selection.agent import EscalationPolicy, LoopLimits
    from tool_selection.lm import get_lm, prepare_lm
    from tool_selection.run_config import RunConfig
    from tool_selection.spec import SelectorSpec

    if args.suite.startswith("bfcl:"):
        return _bfcl_multi_turn(args)
    if args.sample is not None or args.n_ctx is not None:
        raise ToolSelectionError("--sample and --n-ctx apply to BFCL multi-turn suites (--suite bfcl:multi_turn_...).")
    setup = _loop_setup(args, LoopLimits())  # the solved tasks read before any model loads
    tasks = [t for t in load_loop_suite(args.suite) if args.split == "all" or t.split == args.split][: args.limit]
    if not tasks:
        raise ToolSelectionError(f"Loop suite {args.suite!r} has no {args.split!r} tasks.")
    lms = [get_lm(spec, max_tokens=args.max_tokens, cache=not args.no_cache) for spec in
           (args.model, *([args.secondary] if args.secondary else []))]
    for lm in lms:
        prepare_lm(lm)
    models = "+".join([args.model] + ([f"{args.escalation}-{args.secondary}"] if args.secondary else []))
    run_dir = args.run_dir or Path("runs") / "loop" / slug(
        f"{args.suite}-{args.split}-{args.strategy}{_limits_label(args)}-{models}")
    escalation = EscalationPolicy(secondary_lm=lms[1] if args.secondary else None, strategy=args.escalation,
                                  threshold=args.threshold)
    result = run_loop_suite(tasks, lms[0], selector=SelectorSpec.build(strategy=args.strategy, relevance="none"),
                            run=RunConfig(run_dir=run_dir), escalation=escalation,
                            progress=lambda line: print(line, flush=True),
                            setup=setup)
    s = result.summary
    print(f"\n{args.suite} ({args.split}, {int(s['tasks'])} tasks), {models}, strategy {args.strategy}"
          f"{_limits_words(args)}")
    print(f"  task success        {100 * s['task_success']:.1f}%  [{100 * s['task_success_ci_low']:.1f}, "
          f"{100 * s['task_success_ci_high']:.1f}]")
    for key, label in (("steps", "steps per task"), ("calls", "tool calls per task"), ("tool_errors", "tool errors"),
                       ("errors_recovered", "errors recovered"), ("escalations", "escalations"),
                       ("seconds", "seconds per task")):
        print(f"  {label:<19} {s[key]:.2f}")
    print(f"\nper-task results: {result.run_dir}")
    return 0


def _loop_setup(args: argparse.Namespace, limits: LoopLimits) -> LoopSetup:
    """How each task's turns run, from the loop flags: ``limits`` with the flags' first step and finish, and the
    solved tasks of --trajectories (read now, so that a wrong path fails before a model loads)."""
    from dataclasses import replace

    from evals.loop_eval import LoopSetup
    from tool_selection.trajectories import load_trajectories

    trajectories = tuple(load_trajectories(args.trajectories)) if args.trajectories else ()
    return LoopSetup(replace(limits, first_step=args.first_step, finish=args.finish), trajectories, args.shown,
                     args.trajectories_as)


def _limits_label(args: argparse.Namespace) -> str:
    """What a loop run changes of how turns run, for its folder and its summary line ("" for the defaults)."""
    return (("-first-step-required" if args.first_step == "required" else "")
            + ("-finish-tool" if args.finish == "tool" else "")
            + (f"-trajectories{args.shown}{'-text' if args.trajectories_as == 'text' else ''}"
               if args.trajectories else ""))


def _limits_words(args: argparse.Namespace) -> str:
    return ((", first step required" if args.first_step == "required" else "")
            + (", turns end by calling finish" if args.finish == "tool" else "")
            + (f", up to {args.shown} solved tasks shown{' as text' if args.trajectories_as == 'text' else ''}"
               if args.trajectories else ""))


def _bfcl_multi_turn(args: argparse.Namespace) -> int:
    from evals.bfcl_multi_turn import TURN_LIMITS, load_multi_turn, multi_turn_n_ctx, run_multi_turn
    from evals.naming import slug
    from tool_selection.agent import EscalationPolicy
    from tool_selection.lm import LocalEngineOptions, get_lm, prepare_lm
    from tool_selection.lm.specs import ModelSpec
    from tool_selection.run_config import RunConfig
    from tool_selection.spec import SelectorSpec

    setup = _loop_setup(args, TURN_LIMITS)
    categories = args.suite.removeprefix("bfcl:").split("+")
    tasks = [t for t in load_multi_turn(categories) if args.split == "all" or t.split == args.split]
    if not tasks:
        raise ToolSelectionError(f"{args.suite!r} has no {args.split!r} tasks.")
    specs = (args.model, *([args.secondary] if args.secondary else []))
    lms = [get_lm(spec, max_tokens=args.max_tokens, cache=not args.no_cache,
                  local=LocalEngineOptions(n_ctx=multi_turn_n_ctx(args.n_ctx)) if ModelSpec.parse(spec).is_local
                  else None) for spec in specs]
    for lm in lms:
        prepare_lm(lm)
    models = "+".join([args.model] + ([f"{args.escalation}-{args.secondary}"] if args.secondary else []))
    sample = f"-sample{args.sample}-seed{args.seed}" if args.sample else ""
    run_dir = args.run_dir or Path("runs") / "loop" / slug(
        f"{args.suite}-{args.split}{sample}-{args.strategy}{_limits_label(args)}-{models}")
    escalation = EscalationPolicy(secondary_lm=lms[1] if args.secondary else None, strategy=args.escalation,
                                  threshold=args.threshold)
    run = RunConfig.build(run_dir=run_dir, max_tokens=args.max_tokens, sample=args.sample, seed=args.seed,
                          limit=args.limit)
    table, s = run_multi_turn(tasks, lms[0], selector=SelectorSpec.build(strategy=args.strategy, relevance="none"),
                              run=run, escalation=escalation, progress=lambda line: print(line, flush=True),
                              setup=setup)
    print(f"\n{args.suite} ({args.split}{', ' + sample[1:] if sample else ''}, {int(s['tasks'])} tasks), {models}, "
          f"strategy {args.strategy}{_limits_words(args)}; scored by BFCL's multi-turn checker")
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
