"""Evaluate suites x models x selector settings in one command: one resumable run per cell, then one table with
95% intervals, paired comparisons against a baseline cell, and one figure (see evals.sweep).

Comma lists make the axes (--suite treasure_hunt,events --strategy native,native-strict); a sweep file
(FILE.yaml: name, split, selector, run, axes, baseline) holds the same, and flags given beside it change it."""

from __future__ import annotations

import argparse

from evals.cli_experiment import add_run_flags, spec_type
from tool_selection.errors import ToolSelectionError
from tool_selection.flags import add_flags

__all__ = ["add_arguments", "run_from_args"]

EPILOG = """examples:
  toolsel sweep --suite treasure_hunt,events --strategy native,native-strict --limit 5
  toolsel sweep --suite bfcl:irrelevance --strategy gate+native --gate-threshold=-inf,0.3,0.5 --baseline gate_threshold=-inf
  toolsel sweep evals/sweeps/strategies.yaml --model local:qwen2.5-coder-1.5b
A re-run of the same sweep reads its finished cells back and resumes the others."""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("file", nargs="?", metavar="FILE.yaml", help="A sweep file (see evals/sweeps/); the flags "
                                                                     "below change it.")
    parser.add_argument("--name", help="The sweep's name (default: the file's name, or one made from the axes).")
    parser.add_argument("--out", metavar="DIR", help="The sweep's folder (default: runs/sweeps/NAME).")
    parser.add_argument("--baseline", metavar="AXIS=VALUE[,...]",
                        help="The cell every other is compared with, within each suite and on the same values of "
                             "the axes it does not name (default: each axis' first value), e.g. strategy=native.")
    axes = parser.add_argument_group("axes (comma lists; each value a cell)")
    axes.add_argument("--suite", help="Suites (names, bfcl:CATEGORY, hf:..., or .jsonl paths; default: "
                                      "treasure_hunt).")
    axes.add_argument("--model", help="Model specs (default: local:qwen2.5-coder-0.5b).")
    add_flags(axes, spec_type(), lists=True)  # every selector field is an axis
    parser.add_argument("--split", choices=["train", "dev", "test", "all"], help="Split (default: test).")
    parser.add_argument("--spec", metavar="FILE.yaml", help="The selector spec every cell starts from.")
    add_run_flags(parser)
    for action in parser._actions:
        if action.dest == "run_dir":  # every cell has its own folder under --out
            action.help = argparse.SUPPRESS


def _values(text: str) -> list[str]:
    return [value.strip() for value in text.split(",") if value.strip()]


def sweep_plan(args: argparse.Namespace):
    """The plan the file and the flags describe (checked, but no suite loaded yet)."""
    from evals.cli_experiment import run_config
    from evals.naming import slug
    from evals.sweep_plan import SweepPlan, parse_baseline, selector_axes
    
    if args.run_dir:
        raise ToolSelectionError("--run-dir names one run's folder; a sweep gives every cell its own: name the "
                                 "sweep's folder with --out DIR.")
    base = SweepPlan.load_yaml(args.file) if args.file else None
    axes = dict(base.axes) if base else {}
    for axis in ("suite", "model", *selector_axes(spec_type())):
        if getattr(args, axis, None) is not None:
            axes[axis] = _values(getattr(args, axis))  # typed by the plan, which names a bad value
    flag_run = run_config(args)
    run = flag_run if base is None else base.run.replace(**flag_run.model_dump(exclude_defaults=True))
    kind = spec_type()
    selector = kind.load_yaml(args.spec) if args.spec else (base.selector if base else kind())
    name = args.name or (base.name if base else slug("-".join("+".join(map(str, values)) for values in axes.values()))
                         or "sweep")
    baseline = parse_baseline(args.baseline, kind) if args.baseline else (base.baseline if base else {})
    return SweepPlan.build(name=name, split=args.split or (base.split if base else "test"), selector=selector,
                           run=run, axes=axes, baseline=baseline)


def run_from_args(args: argparse.Namespace) -> int:
    from evals.sweep import run_sweep

    plan = sweep_plan(args)
    result = run_sweep(plan, args.out, progress=lambda line: print(line, flush=True))
    print()
    print(result.markdown())
    print(f"\ntable: {result.out_dir / 'sweep.csv'} (and sweep.md); plan: {result.out_dir / 'sweep.yaml'}")
    if result.figure is not None:
        print(f"figure: {result.figure}")
    failed = int((result.cells["status"] == "failed").sum())
    if failed:
        print(f"\n{failed} of {len(result.cells)} cells failed (see the status column); run the sweep again to retry "
              "them, the finished cells are kept.")
    return 1 if failed else 0
