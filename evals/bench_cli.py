"""``toolsel bench stuck``: the stuck-detection benchmark per model pair (see ``evals.stuck_bench``)."""

from __future__ import annotations

import argparse

from evals.cli_experiment import EXPERIMENT_TYPE, add_run_flags, run_config, selector_spec, spec_type
from tool_selection.cli import add_deferred_command
from tool_selection.errors import ToolSelectionError
from tool_selection.flags import add_field_flag, count
from tool_selection.lm.specs import ModelSpec, ModelSpecError
from tool_selection.run_config import add_tracking_flag

__all__ = ["register"]

# tool_selection.collaboration.COLLABORATION_STRATEGIES, written out so that building the parser loads no DSPy
# (tests pin the two equal)
LIVE_STRATEGIES = ("delegate", "guide")


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser(
        "bench", help="Benchmarks (stuck detection and model collaboration).",
        description="Benchmarks that compare strategies across models. 'toolsel bench stuck --help' for details.",
    )
    bench.set_defaults(handler=lambda args: _help(bench))
    sub = bench.add_subparsers(dest="bench_command", metavar="stuck|gate|relevance|scale|bfcl-agreement")

    _register_stuck(sub)

    gate = sub.add_parser(
        "gate", help="Choose the relevance gate's threshold on dev, offline, and report it on test.",
        description="Read two runs of a gate+NAME strategy made with the gate open (--gate-threshold -inf): sweep "
                    "thresholds on the dev run, choose the most accurate, and report the test run at that threshold "
                    "against the open gate, with the paired difference.",
        epilog="example: toolsel bench gate --dev runs/bfcl-dev-... --test runs/bfcl-test-...")
    gate.add_argument("--dev", required=True, help="Run directory (or MLflow run id) of the dev split.")
    gate.add_argument("--test", required=True, help="Run directory (or MLflow run id) of the test split.")
    gate.add_argument("--dev-split", default="dev", help="Rows of --dev used to choose (default: dev).")
    gate.add_argument("--test-split", default="test", help="Rows of --test reported (default: test). One run of "
                                                           "--split all can serve as both.")
    add_tracking_flag(gate)
    gate.set_defaults(handler=_gate)

    add_deferred_command(sub, "relevance", module="evals.benchmarks.relevance",
                         help="Fit a relevance model on recorded signals and report it.")
    add_deferred_command(sub, "scale", module="evals.benchmarks.scale",
                         help="Selection over registries of 10 to 2,000+ tools, with retrieval.")
    add_deferred_command(sub, "bfcl-agreement", module="evals.bfcl_agreement",
                         help="Agreement of our BFCL scoring with BFCL's own AST checker.")



BENCH_SKIPS = ("serve", "ray", "temperature", "n_ctx", "fresh", "experiment", "sample", "seed")
"""Run settings the stuck benchmark does not take (its own --temperature is the consistency samples')."""


def _register_stuck(sub: argparse._SubParsersAction) -> None:
    stuck = sub.add_parser(
        "stuck", help="Which stuck detector, at which threshold, routes best from a small model to a larger one.",
        description="Evaluate each model alone once per split, score every primary decision with each stuck "
                    "detector, and sweep thresholds offline (delegate strategy: the stuck cases take the secondary's "
                    "answer). Reports accuracy, escalation rate, price and measured seconds per threshold, AUROC, APGR, "
                    "the escalation needed to recover 50%/80% of the accuracy gap, the threshold recommended on dev "
                    "(the cheapest in seconds within 1 point of the secondary), and per detector whether the cascade "
                    "pays on test (not significantly below the secondary, paired, at fewer seconds per case). The "
                    "guide strategy needs live runs: add --live-threshold T --live-strategy guide.",
        epilog="example: toolsel bench stuck --suite events --pair local:qwen2.5-coder-0.5b,local:qwen2.5-coder-1.5b "
               "--detectors validation,confidence,heuristic --thresholds 0:1:0.05",
    )
    add_field_flag(stuck, EXPERIMENT_TYPE, "suite")
    stuck.add_argument("--pair", action="append", required=True, metavar="PRIMARY,SECONDARY",
                       help="A model pair: the small primary, then the larger secondary (repeat for more pairs).")
    stuck.add_argument("--detectors", help="Comma-separated detectors (default: every registered one: heuristic, "
                                           "validation, confidence, ...; an unknown name lists them).")
    stuck.add_argument("--thresholds", default="0:1:0.05",
                       help="START:STOP:STEP (inclusive) or a comma-separated list, within [0, 1] (default: 0:1:0.05).")
    stuck.add_argument("--dev-split", default="dev", help="Split the threshold is chosen on (default: dev).")
    stuck.add_argument("--test-split", default="test",
                       help="Split the chosen threshold is reported on (default: test).")
    stuck.add_argument("--consistency-k", type=count(2, 32), default=3,
                       help="Samples per decision for consistency (default: 3).")
    stuck.add_argument("--temperature", type=float, default=0.7,
                       help="Sampling temperature of consistency samples and retries (default: 0.7).")
    stuck.add_argument("--router", metavar="ROUTER_JSON|MODEL",
                       help="The learned detector's router: a router file, or the model a router ships for (default: "
                            "the one shipped for each primary).")
    stuck.add_argument("--live-threshold", type=float,
                       help="Also run the collaboration protocol live on the test split at this threshold.")
    stuck.add_argument("--live-strategy", choices=LIVE_STRATEGIES, default="guide",
                       help="Strategy of the live run (default: guide; delegate live checks the offline sweep).")
    stuck.add_argument("--live-detector", help="Detector of the live run (default: each pair's recommended one).")
    selector = stuck.add_argument_group("the selector (a SelectorSpec: the benchmark asks both models in its "
                                        "strategy)")
    add_field_flag(selector, spec_type(), "strategy")
    add_field_flag(selector, spec_type(), "relevance")
    add_run_flags(stuck, skip=BENCH_SKIPS)
    stuck.set_defaults(handler=_stuck)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def parse_pair(text: str) -> tuple[str, str]:
    """``PRIMARY,SECONDARY``: two model specs, each checked by ``ModelSpec.parse`` (and written as it writes them)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ToolSelectionError(f"--pair {text!r}: write PRIMARY,SECONDARY, e.g. "
                                 "local:qwen2.5-coder-0.5b,local:qwen2.5-coder-1.5b")
    try:
        return str(ModelSpec.parse(parts[0])), str(ModelSpec.parse(parts[1]))
    except ModelSpecError as error:
        raise ToolSelectionError(f"--pair {text!r}: {error}") from None


def _stuck(args: argparse.Namespace) -> int:
    from evals.stuck_bench import format_report, run_stuck_bench

    result = run_stuck_bench(
        args.suite or EXPERIMENT_TYPE.model_fields["suite"].default, [parse_pair(p) for p in args.pair],
        selector=selector_spec(args), run=run_config(args),
        **({"detectors": args.detectors.split(",")} if args.detectors else {}),
        thresholds=args.thresholds, dev_split=args.dev_split, test_split=args.test_split,
        consistency_k=args.consistency_k, temperature=args.temperature, router=args.router,
        live_threshold=args.live_threshold,
        strategy=args.live_strategy, live_detector=args.live_detector,
    )
    print(format_report(result))
    print(f"\nresults: {result.out_dir} (sweep, summary, recommendations, curves, cases; plots as PNG)")
    if result.mlflow_run_id:
        print(f"MLflow run: {result.mlflow_run_id}")
    return 0


def _gate(args: argparse.Namespace) -> int:
    from evals.cli import _load
    from evals.eval_report import format_summary
    from evals.gate import choose_threshold, gated_results
    from evals.metrics import summarize
    from evals.stats import compare_runs

    dev = _rows_of_split(_load(args.dev, args.tracking_uri), args.dev_split)
    test = _rows_of_split(_load(args.test, args.tracking_uri), args.test_split)
    choice = choose_threshold(dev)
    print(f"dev ({len(dev)} cases): threshold {choice.threshold:.3f} (best balanced accuracy) gives accuracy "
          f"{100 * choice.dev_accuracy:.1f}%")
    print(choice.dev.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    gated = gated_results(test, choice.threshold)
    print(f"\ntest ({len(test)} cases) at threshold {choice.threshold:.3f} "
          f"(gate closed on {100 * gated['gate_closed'].mean():.1f}% of cases):")
    print(format_summary(summarize(gated)))
    print("\nA = the gate open (selection alone), B = the gate at the dev threshold:")
    print(compare_runs(test, gated).to_string(index=False, na_rep="", float_format=lambda v: f"{v:.3f}"))
    return 0


def _rows_of_split(results, split: str):
    rows = results[results["split"] == split] if "split" in results else results
    if rows.empty:
        raise ToolSelectionError(f"The run has no {split!r} rows (its splits: "
                                 f"{sorted(results['split'].unique()) if 'split' in results else 'none'}).")
    return rows.reset_index(drop=True)
