"""Evaluation: suites, metrics, the runner, optimizers and benchmarks.

``evaluate`` (module ``evals.evaluate``) is reached as ``tool_selection.evaluate``; the package does not re-export
it, so that ``evals.evaluate`` stays the module. Names load on first use, so that importing one light module
(``evals.cli`` for ``toolsel eval --help``) does not load DSPy and pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_selection._lazy import lazy_getattr

if TYPE_CHECKING:
    from evals.runner import EvalResult, Evaluator, load_results
    from evals.suite import Case, Suite, available_suites, load_suite

_LAZY = {
    **dict.fromkeys(["EvalResult", "Evaluator", "load_results"], "evals.runner"),
    **dict.fromkeys(["Case", "Suite", "available_suites", "load_suite"], "evals.suite"),
}

__all__ = ["Case", "EvalResult", "Evaluator", "Suite", "available_suites", "load_results", "load_suite"]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
