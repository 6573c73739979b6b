"""Paired comparisons of two runs on the same cases: what every "A beats B" claim in this project rests on.

Two selectors scored on the same cases are compared case by case, not by whether their separate intervals
overlap: the paired bootstrap interval of the mean difference (scipy's ``bootstrap`` over the per-case
differences) and, for a 0/1 metric, McNemar's exact test (a binomial test on the discordant cases). One
implementation serves ``toolsel eval compare``, the notebooks and the README's reports.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["PairedComparison", "compare_paired", "compare_runs", "mcnemar_exact", "paired_bootstrap_ci"]

CONFIDENCE = 0.95
RESAMPLES = 5000


@dataclass(frozen=True)
class PairedComparison:
    """B - A on the cases both runs scored."""

    metric: str
    n: int
    a: float
    b: float
    difference: float
    ci_low: float
    ci_high: float
    p_value: float | None  # McNemar's exact test, for 0/1 metrics
    a_only: int | None  # cases A got right and B wrong (0/1 metrics)
    b_only: int | None
    higher_is_better: bool = True

    @property
    def significant(self) -> bool:
        """The interval excludes zero (and, for a 0/1 metric, McNemar's p < 0.05)."""
        excludes_zero = self.ci_low > 0 or self.ci_high < 0
        return excludes_zero and (self.p_value is None or self.p_value < 1 - CONFIDENCE)

    def verdict(self) -> str:
        if not self.significant:
            return "not significant"
        return "B better" if (self.difference > 0) == self.higher_is_better else "A better"

    def as_row(self) -> dict:
        return {**asdict(self), "significant": self.significant, "verdict": self.verdict()}


def paired_bootstrap_ci(differences: np.ndarray, *, confidence: float = CONFIDENCE, n_resamples: int = RESAMPLES,
                        seed: int = 0) -> tuple[float, float]:
    """The percentile-bootstrap interval of the mean of per-case differences."""
    differences = np.asarray(differences, dtype=float)
    differences = differences[~np.isnan(differences)]
    if differences.size == 0:
        return float("nan"), float("nan")
    if np.all(differences == differences[0]):  # no spread: every resample has the same mean
        return float(differences[0]), float(differences[0])
    result = stats.bootstrap((differences,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                             method="percentile", random_state=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> tuple[float, int, int]:
    """McNemar's exact test of two paired 0/1 outcomes: (two-sided p, A-only successes, B-only successes)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a_only, b_only = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    discordant = a_only + b_only
    if discordant == 0:
        return 1.0, a_only, b_only
    return float(stats.binomtest(min(a_only, b_only), discordant, 0.5).pvalue), a_only, b_only


def _binary(values: np.ndarray) -> bool:
    finite = values[~np.isnan(values)]
    return finite.size > 0 and bool(np.isin(finite, (0.0, 1.0)).all())


def compare_paired(a: pd.DataFrame, b: pd.DataFrame, columns: dict[str, str], *, seed: int = 0,
                   lower_is_better: frozenset[str] = frozenset()) -> pd.DataFrame:
    """One row per metric (``{name: per-case column}``): A, B, B - A with its paired interval, McNemar's p for
    0/1 metrics, and a verdict (for the metrics named in ``lower_is_better``, a drop is the better run). Only
    cases both runs scored (by ``id``) and where both have a value count."""
    shared = sorted(set(a["id"]) & set(b["id"]))
    a_rows, b_rows = a.set_index("id").loc[shared], b.set_index("id").loc[shared]
    rows = []
    for name, column in columns.items():
        if column not in a_rows or column not in b_rows:
            continue
        va = pd.to_numeric(a_rows[column], errors="coerce").to_numpy(dtype=float)
        vb = pd.to_numeric(b_rows[column], errors="coerce").to_numpy(dtype=float)
        both = ~np.isnan(va) & ~np.isnan(vb)
        va, vb = va[both], vb[both]
        if not va.size:
            continue
        low, high = paired_bootstrap_ci(vb - va, seed=seed)
        p_value = a_only = b_only = None
        if _binary(va) and _binary(vb):
            p_value, a_only, b_only = mcnemar_exact(va, vb)
        rows.append(PairedComparison(name, int(va.size), float(va.mean()), float(vb.mean()), float((vb - va).mean()),
                                     low, high, p_value, a_only, b_only, name not in lower_is_better).as_row())
    return pd.DataFrame(rows)


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per metric over the cases both runs scored: A, B, the paired difference B - A with its 95% bootstrap
    interval, McNemar's exact p for 0/1 metrics, and whether the difference is significant (``evals.stats``)."""
    from evals.metrics import LOWER_IS_BETTER, METRICS

    columns = {name: column for name, (column, _) in METRICS.items()}
    table = compare_paired(a, b, columns, seed=seed, lower_is_better=LOWER_IS_BETTER)
    if table.empty:
        return table
    return pd.DataFrame({
        "metric": table["metric"], "cases": table["n"], "A": table["a"], "B": table["b"], "B-A": table["difference"],
        "B-A 95% CI": [_signed_interval(lo, hi, name) for lo, hi, name in
                       zip(table["ci_low"], table["ci_high"], table["metric"], strict=True)],
        "McNemar p": table["p_value"], "verdict": table["verdict"],
    })


def _signed_interval(low: float, high: float, metric: str) -> str:
    scale = 1 if metric in ("latency_s", "input_tokens", "output_tokens") else 100  # rates in points
    return f"[{scale * low:+.1f}, {scale * high:+.1f}]"
