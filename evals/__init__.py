"""The evaluation harness, built on ``tool_selection``: suites, metrics, the runner, optimizers and benchmarks.

    from evals import evaluate, optimize, compare_runs, run_sweep
    result = evaluate("finance", "local:qwen2.5-coder-0.5b", split="test")   # an EvalResult
    result.summary["accuracy"], result.results, result.by_tag

Names load on first use, so that importing one light module (``evals.cli`` for ``toolsel eval --help``) does not
load DSPy and pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_selection._lazy import lazy_getattr

if TYPE_CHECKING:
    from evals.evaluation import evaluate
    from evals.optimization import OptimizeResult, optimize
    from evals.runner import EvalResult, Evaluator, load_results
    from evals.stats import compare_runs
    from evals.stuck_bench import BenchResult, run_stuck_bench
    from evals.suite import Case, Suite, available_suites, load_suite
    from evals.sweep import SweepPlan, SweepResult, run_sweep

_LAZY = {
    **dict.fromkeys(["EvalResult", "Evaluator", "load_results"], "evals.runner"),
    **dict.fromkeys(["Case", "Suite", "available_suites", "load_suite"], "evals.suite"),
    **dict.fromkeys(["OptimizeResult", "optimize"], "evals.optimization"),
    **dict.fromkeys(["BenchResult", "run_stuck_bench"], "evals.stuck_bench"),
    **dict.fromkeys(["SweepPlan", "SweepResult", "run_sweep"], "evals.sweep"),
    "compare_runs": "evals.stats",
    "evaluate": "evals.evaluation",
}

__all__ = [
    "BenchResult",
    "Case",
    "EvalResult",
    "Evaluator",
    "OptimizeResult",
    "Suite",
    "SweepPlan",
    "SweepResult",
    "available_suites",
    "compare_runs",
    "evaluate",
    "load_results",
    "load_suite",
    "optimize",
    "run_stuck_bench",
    "run_sweep",
]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
