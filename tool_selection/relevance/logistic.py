"""A logistic regression over relevance signals, stored as data: what the relevance model and the learned stuck
detector's router share.

The fit standardises each signal with its training mean and spread (a missing value counts as the mean, adding
nothing, and optionally moves the answer by a learned per-signal ``missing`` weight); applying it needs only the
stored numbers, so a saved model is a small JSON file, never a pickle, validated on load.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tool_selection.errors import ToolSelectionError
from tool_selection.relevance.signals import SIGNAL_PREFIX, check_signals
from tool_selection.strict_files import read_json

__all__ = ["FILE_FORMAT", "LogisticModel", "fit_logistic", "model_file_stem", "shipped_names", "signal_number", "stored"]

FILE_FORMAT = 1
# Fitted numbers are stored to 6 significant digits: signals recomputed on another CPU differ in their last bits,
# and a refit from the same rows should give the same file (and fingerprint), not a near copy.
STORED_DIGITS = 6
MAX_FILE_BYTES = 1 << 20  # a model holds a few numbers per signal and its provenance


class LogisticModel(BaseModel):
    """``probability(signals)`` of a logistic regression over standardised relevance signals, and ``threshold``
    the probability a decision is taken at. A subclass names what it is (``what``), how to write one (``write_fix``)
    and its error class (``error``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    what: ClassVar[str] = "logistic model"
    write_fix: ClassVar[str] = "Write one with its save method."
    error: ClassVar[type[Exception]] = ToolSelectionError

    signals: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    threshold: float = Field(0.5, ge=0.0, le=1.0)
    trained_on: dict[str, Any] = Field(default_factory=dict)  # suites, splits, row counts: provenance, not used
    dev: dict[str, Any] = Field(default_factory=dict)  # the threshold's dev figures

    @field_validator("signals")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return cls.check_inputs(value)

    @classmethod
    def check_inputs(cls, names: Sequence[str]) -> tuple[str, ...]:
        """``names`` if the model can read each of them (relevance signals; a subclass may read more), else an
        error naming the unknown ones."""
        return check_signals(names)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        sizes = {len(self.signals), len(self.means), len(self.scales), len(self.coefficients),
                 *((len(missing),) if (missing := self.missing_weights()) is not None else ())}
        if len(sizes) != 1:
            raise ValueError("signals, means, scales and coefficients must have one entry per signal")
        numbers = [*self.means, *self.scales, *self.coefficients, *(self.missing_weights() or ()), self.intercept]
        if not all(math.isfinite(x) for x in numbers) or any(s <= 0 for s in self.scales):
            raise ValueError("coefficients, means and intercept must be finite, and scales positive")
        return self

    def missing_weights(self) -> tuple[float, ...] | None:
        """What a missing value of each signal adds to the log-odds (None: nothing; a subclass may store them)."""
        return None

    def probability(self, values: Mapping[str, float]) -> float:
        """The probability for one request's signal values; a missing or NaN signal counts as its training mean
        (plus its ``missing`` weight where the model has them)."""
        z = self.intercept
        missing = self.missing_weights()
        for index, (name, mean, scale, weight) in enumerate(zip(self.signals, self.means, self.scales,
                                                                self.coefficients)):
            value = values.get(name, math.nan)
            if value is not None and math.isfinite(value):
                z += weight * (value - mean) / scale
            elif missing is not None:
                z += missing[index]
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    @property
    def reads(self) -> tuple[str, ...]:
        """Every signal ``probability`` reads (a subclass may read more than it weighs)."""
        return self.signals

    def probabilities(self, table: Any) -> np.ndarray:
        """The probability per row of a table (pandas) holding one column per signal (or ``rel_<signal>``)."""
        columns = {name: _column_name(table, name) for name in self.reads}
        return np.array([self.probability({name: signal_number(row.get(column)) for name, column in columns.items()})
                         for row in table.to_dict("records")])

    def with_threshold(self, threshold: float, dev: dict[str, Any] | None = None) -> Self:
        return self.model_copy(update={"threshold": float(threshold), "dev": dev or {}})

    @property
    def fingerprint(self) -> str:  # an optional part left unset is left out, so older files keep their fingerprint
        return hashlib.sha256(self.model_dump_json(exclude_none=True).encode()).hexdigest()[:12]

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        data = self.model_dump(mode="json", exclude_none=True)
        path.write_text(json.dumps({"format": FILE_FORMAT, **data}, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Self:
        path = Path(path)
        if not path.is_file():
            raise cls.error(f"Cannot read the {cls.what} {path}: "
                            f"{'it is a directory' if path.is_dir() else 'no such file'}; {cls.load_fix()}")
        data = read_json(path, what=cls.what, max_bytes=MAX_FILE_BYTES, fix=cls.write_fix)
        if not isinstance(data, dict) or data.pop("format", None) != FILE_FORMAT:
            raise cls.error(f"{path} is not a {cls.what} file (format {FILE_FORMAT}); {cls.write_fix[0].lower()}"
                            f"{cls.write_fix[1:]}")
        try:
            return cls.model_validate(data)
        except ValueError as error:
            raise cls.error(f"The {cls.what} {path} is invalid: {error}") from None

    @classmethod
    def load_fix(cls) -> str:
        """What to give instead of a file that cannot be read."""
        return f"give a {cls.what} file."

    @classmethod
    def shipped(cls, directory: Path, model: str) -> Self | None:
        """The model shipped in ``directory`` for ``model`` (a spec such as ``local:qwen2.5-coder-0.5b``, or its
        name), or None: each is fitted on one model's own signals."""
        name = model_file_stem(model)
        path = directory / f"{name}.json"
        return cls.load(path) if name and path.is_file() else None


def shipped_names(directory: Path) -> list[str]:
    """The models something ships for in ``directory``: the names of its ``<model>.json`` files."""
    return sorted(path.stem for path in directory.glob("*.json"))


def model_file_stem(model: str) -> str:
    """The name a model's shipped files are named by: a spec's model name, without ``local:`` or ``.gguf``."""
    return model.rsplit(":", 1)[-1].removesuffix(".gguf")


def signal_number(value: Any) -> float:
    """A signal's value as a float; anything that is not a number is NaN (missing)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def stored(value: float) -> float:
    """``value`` to the ``STORED_DIGITS`` significant digits a stored model keeps."""
    return float(f"{float(value):.{STORED_DIGITS}g}")


def _rounded(values: Sequence[float]) -> tuple[float, ...]:
    return tuple(stored(value) for value in values)


def fit_logistic(table: Any, labels: Sequence[int], signals: Sequence[str], *, C: float = 1.0,
                 balanced: bool = False, missing_weights: bool = False,
                 check: Callable[[Sequence[str]], tuple[str, ...]] = check_signals) -> dict[str, Any]:
    """The stored fields of a logistic regression of ``labels`` (0/1) on the ``signals`` columns of ``table`` (named
    as the signal or ``rel_<signal>``): each signal standardised with its training mean and spread, a missing value
    counted as the mean; with ``missing_weights``, one more feature per signal (1 where it is missing) whose
    weights are returned as ``missing``; ``balanced`` weights the two classes equally; ``check``: the names the
    model may read (``LogisticModel.check_inputs``)."""
    from sklearn.linear_model import LogisticRegression

    signals = check(signals)
    y = np.asarray(labels, dtype=int)
    x = np.column_stack([_column(table, name, len(y)) for name in signals])
    means = np.array([np.nanmean(col) if np.isfinite(col).any() else 0.0 for col in x.T])
    scales = np.array([np.nanstd(col) if np.isfinite(col).any() else 0.0 for col in x.T])
    scales = np.where(scales > 1e-9, scales, 1.0)
    standard = np.where(np.isfinite(x), (x - means) / scales, 0.0)
    if missing_weights:
        standard = np.column_stack([standard, (~np.isfinite(x)).astype(float)])
    classifier = LogisticRegression(C=C, class_weight="balanced" if balanced else None, max_iter=1000)
    weights = classifier.fit(standard, y).coef_[0]
    fields = {"signals": signals, "means": _rounded(means), "scales": _rounded(scales),
              "coefficients": _rounded(weights[:len(signals)]), "intercept": stored(classifier.intercept_[0])}
    if missing_weights:
        fields["missing"] = _rounded(weights[len(signals):])
    return fields


def _column_name(table: Any, name: str) -> str:
    """A signal's column in ``table``: the signal's own name, else its results-row name (``rel_<signal>``)."""
    return name if name in table else f"{SIGNAL_PREFIX}{name}"


def _column(table: Any, name: str, rows: int) -> np.ndarray:
    column = _column_name(table, name)
    if column not in table:
        return np.full(rows, math.nan)
    return np.array([signal_number(v) for v in table[column]], dtype=float)
