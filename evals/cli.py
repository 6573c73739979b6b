"""``toolsel eval`` (run a suite; its compare, rescore and loop), ``toolsel optimize``, and the commands of the
harness that register here (``strategies``, ``suites``, the reports, ``sweep``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evals.cli_experiment import (
    add_experiment_flags,
    add_run_flags,
    add_selector_flags,
    experiment,
    optimization_section,
)
from evals.eval_report import fmt, print_report
from evals.loop_cli import optimize_loop, register_loop
from evals.optimize_settings import OptimizeSettings
from evals.suites_cli import register_listings
from tool_selection.cli import add_deferred_command
from tool_selection.defaults import DEFAULT_MODEL, DEFAULT_SUITE
from tool_selection.errors import ToolSelectionError
from tool_selection.flags import add_flags, given
from tool_selection.joined_numbers import LISTED_NUMBERS
from tool_selection.optional_arguments import OPTIONAL_ARGUMENTS
from tool_selection.packed_values import PACKED_VALUES
from tool_selection.rates import RATES
from tool_selection.respective_values import RESPECTIVELY
from tool_selection.run_config import add_tracking_flag

if TYPE_CHECKING:
    import pandas as pd



def register(subparsers: argparse._SubParsersAction) -> None:
    """``toolsel eval`` (with compare, rescore and loop), ``optimize``, ``strategies``, ``suites`` and the
    report commands."""
    run = subparsers.add_parser(
        "eval", help="Evaluate a selector on a suite (or compare two runs).",
        description="Evaluate a tool selector on an evaluation suite. Per-case results go to the run directory "
                    "(resumable) and to MLflow. 'toolsel eval compare A B' compares two runs.",
    )
    add_experiment_flags(run)
    run.add_argument("--mcp", type=given, metavar="CMD_OR_URL",
                     help="Evaluate over an MCP server's tools (a command line or a URL): every case's catalog is "
                          "the server's tool list, and its expected calls name those tools.")
    run.set_defaults(handler=_eval)

    sub = run.add_subparsers(dest="eval_command", metavar="compare|loop|rescore|splice")
    compare = sub.add_parser("compare", help="Two runs' metrics side by side, with confidence intervals.",
                             description="Compare two evaluation runs (run directories or MLflow run ids): "
                                         "each metric with its 95% CI, and the paired difference B - A.")
    compare.add_argument("run_a", help="Run directory or MLflow run id.")
    compare.add_argument("run_b", help="Run directory or MLflow run id.")
    add_tracking_flag(compare)
    compare.add_argument("--plot", metavar="FILE", help="Also draw B - A per metric, with its interval (PNG or SVG).")
    compare.set_defaults(handler=_compare)

    _register_rescore(sub)
    _register_splice(sub)
    register_loop(sub)
    _register_optimize(subparsers)

    register_listings(subparsers)

    from evals.reports.cli import register as register_reports

    register_reports(subparsers)
    add_deferred_command(subparsers, "sweep", module="evals.sweep_cli",
                         help="Suites x models x strategies (and other settings) in one command: a table with "
                              "intervals, paired comparisons and a figure.")


READINGS = {"undeclared_arguments": ("drop",), "rates": RATES, "optional_arguments": OPTIONAL_ARGUMENTS,
            "respectively": RESPECTIVELY, "listed_numbers": LISTED_NUMBERS, "packed_values": PACKED_VALUES}
"""Selector settings that only read a run's answers (no model call): rescore writes a copy read with them."""


def _reading_flags() -> str:
    flags = ["--" + name.replace("_", "-") for name in READINGS]
    return ", ".join(flags[:-1]) + " or " + flags[-1]


def _register_rescore(sub: argparse._SubParsersAction) -> None:
    rescore = sub.add_parser("rescore", help="Score a finished run again with today's parsers and scoring.",
                             description="Re-read the raw answer each parse failure kept, with the run's strategy "
                                         "and today's parsers, check and score every other row's calls again, and "
                                         "rewrite the run's rows and summaries; no model call (greedy answers do "
                                         "not change; latency and tokens stay measured).")
    rescore.add_argument("run_dirs", nargs="+", help="Run directories of 'toolsel eval'.")
    rescore.add_argument("--suite", help="The suite the runs were made on, for runs that do not record where it is "
                                         "(runs on a .jsonl file made before suite_ref was recorded).")
    for name, choices in READINGS.items():
        flag = "--" + name.replace("_", "-")
        rescore.add_argument(flag, choices=choices,
                             help=f"Score the run as 'toolsel eval {flag} ...' would have (the option reads the same "
                                  "answers differently): written to a copy, --into DIR.")
    rescore.add_argument("--into", metavar="DIR", help=f"With {_reading_flags()}: the copy's directory.")
    rescore.set_defaults(handler=_rescore)


def _register_splice(sub: argparse._SubParsersAction) -> None:
    splice = sub.add_parser(
        "splice", help="A run with some of its cases answered again (toolsel eval --ids) in place of its own rows.",
        description="Copy a finished run with the rows of another run in place of its own for the cases that run "
                    "answered: a setting that can change only some answers is run on those cases (--ids) and "
                    "spliced into the run it would otherwise repeat. Both must have run the same suite, split and "
                    "model; the copy records what it was spliced from.")
    splice.add_argument("base", help="The finished run whose other rows are kept.")
    splice.add_argument("rerun", help="The run of some of its cases by id, under the new setting.")
    splice.add_argument("--into", metavar="DIR", required=True, help="The spliced run's directory (new).")
    splice.set_defaults(handler=_splice)


def _splice(args: argparse.Namespace) -> int:
    from evals.rescore import splice_run

    replaced = splice_run(args.base, args.rerun, args.into)
    print(f"{args.into}: {replaced} row(s) of {args.base} replaced by {args.rerun}'s")
    return 0


OPTIMIZE_SKIPS = ("program", "allow_tool_changes", "gate_model", "gate_threshold", "retrieve", "retriever", "rerank",
                  "groups", *READINGS, "relevance_signals")
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
    add_flags(opt.add_argument_group("the optimization (an OptimizeSettings): train to learn from, dev to choose "
                                     "on, test to score the result"), OptimizeSettings)
    opt.add_argument("--out", help="Directory for the compiled selector (default: "
                                   "programs/<suite>-<optimizer>[-descriptions]-<model>).")
    add_run_flags(opt, skip=("run_dir", "limit", "sample", "seed", "fresh", "serve", "ray"))
    opt.set_defaults(handler=_optimize)


def _eval(args: argparse.Namespace) -> int:
    if args.mcp:
        from tool_selection.mcp import connect_mcp

        with connect_mcp(args.mcp) as server:
            return print_report(_run_eval(args, tools=server.tool_set().registry()))
    return print_report(_run_eval(args))


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
    from evals.suite import load_suite, suite_source
    from tool_selection.defaults import DEFAULT_RELEVANCE, NO_RELEVANCE
    from tool_selection.lm.endpoint import check_model_route
    from tool_selection.tracking import check_scheme

    if tracking_uri is not None:
        check_scheme(tracking_uri or None)
    if suite_source(suite).light:
        load_suite(suite)
    if program is not None and not Path(program).exists():
        raise ToolSelectionError(f"{program} is missing: give a compiled selector's folder or program file "
                                 "('toolsel optimize' writes one).")
    if relevance not in (None, DEFAULT_RELEVANCE, NO_RELEVANCE):  # a file, or invariant: what ships for the model
        from tool_selection.relevance.model import resolve_relevance

        resolve_relevance(relevance, model or DEFAULT_MODEL)
    if model is not None:
        check_model_route(model)


def _optimize(args: argparse.Namespace) -> int:
    from evals.suite import suite_form

    if suite_form(args.suite) == "tasks":
        return optimize_loop(args)
    check_before_loading(args.suite, model=args.model)
    from evals.optimization import optimize

    chosen = experiment(args, selector_defaults={"relevance": "none"},  # checked before any model loads
                        optimizer=optimization_section(args))
    settings = chosen.optimizer
    result = optimize(chosen.suite, chosen.model, settings, selector=chosen.selector,
                      run=chosen.run.replace(run_dir=args.out) if args.out else chosen.run)
    print(f"\ncompiled selector: {result.out_dir}")
    budget = f"{settings.max_metric_calls} metric calls" if settings.max_metric_calls else settings.budget
    print(f"optimizer {settings.optimizer} ({budget}{', descriptions' if settings.target == 'descriptions' else ''}): "
          f"{result.wall_time_s:.0f} s, {result.model_calls} model calls")
    for name, value in result.manifest.scores.items():
        print(f"  {name:<16} {fmt(value)}")
    if result.mlflow_run_id:
        print(f"MLflow run: {result.mlflow_run_id}")
    return 0


def _load(ref: str, uri: str | None) -> pd.DataFrame:
    from evals.runs import open_run

    return open_run(ref, uri).rows


def _rescore(args: argparse.Namespace) -> int:
    from evals.rescore import main, rescore_as

    settings = {name: value for name in READINGS if (value := getattr(args, name))}
    if settings or args.into:
        if not (settings and args.into) or len(args.run_dirs) != 1:
            raise ToolSelectionError(f"{_reading_flags()} goes with --into DIR, and one run directory.")
        changed = rescore_as(args.run_dirs[0], args.into, settings, suite=args.suite)
        read = ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in settings.items())
        print(f"{args.into}: {changed} row(s) scored differently read with {read}")
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

