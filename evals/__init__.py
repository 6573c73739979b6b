"""Evaluation: suites, metrics, the runner, optimizers and benchmarks.

``evaluate`` (module ``evals.evaluate``) is reached as ``tool_selection.evaluate``; the package does not re-export
it, so that ``evals.evaluate`` stays the module.
"""

from evals.runner import EvalResult, Evaluator, load_results
from evals.suite import Case, Suite, available_suites, load_suite

__all__ = ["Case", "EvalResult", "Evaluator", "Suite", "available_suites", "load_results", "load_suite"]
