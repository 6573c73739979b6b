"""Evaluation: suites, metrics, the runner, optimizers and benchmarks."""

from evals.evaluate import evaluate
from evals.runner import EvalResult, Evaluator, load_results
from evals.suite import Case, Suite, available_suites, load_suite

__all__ = ["Case", "EvalResult", "Evaluator", "Suite", "available_suites", "evaluate", "load_results", "load_suite"]
