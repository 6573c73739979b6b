"""The relevance model: relevance signals combined into a calibrated probability that some listed tool fits.

A logistic regression over standardised signals (scikit-learn fits it; applying it needs only its coefficients,
so a saved model is a small JSON file, never a pickle). It is fitted on the rows of train splits only, and its
threshold is chosen on dev with a balanced objective (``choose_threshold``): the mean of accuracy on the cases that
need a call and on those that need none, so that refusing everything cannot win.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tool_selection.defaults import AUTO_RELEVANCE, DEFAULT_RELEVANCE, NO_RELEVANCE
from tool_selection.errors import ToolSelectionError
from tool_selection.relevance.signals import check_signals
from tool_selection.strict_files import read_json

__all__ = ["DEFAULT_RELEVANCE", "RelevanceModel", "RelevanceModelError", "fit_relevance_model", "resolve_relevance",
           "shipped_relevance_model", "shipped_relevance_models"]

FILE_FORMAT = 1
# Fitted numbers are stored to 6 significant digits: signals recomputed on another CPU differ in their last bits,
# and a refit from the same rows should give the same file (and fingerprint), not a near copy.
STORED_DIGITS = 6
SHIPPED_DIR = Path(__file__).parent / "models"  # <model name>.json, fitted by 'toolsel bench relevance --save'
MAX_FILE_BYTES = 1 << 20  # a model holds a few numbers per signal and its provenance


class RelevanceModelError(ToolSelectionError, ValueError):
    """A relevance model that cannot be fitted, read or applied."""


class RelevanceModel(BaseModel):
    """``probability(signals)``: P(some listed tool does what is asked); below ``threshold`` the selector abstains."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
        return check_signals(value)

    @model_validator(mode="after")
    def _consistent(self) -> RelevanceModel:
        sizes = {len(self.signals), len(self.means), len(self.scales), len(self.coefficients)}
        if len(sizes) != 1:
            raise ValueError("signals, means, scales and coefficients must have one entry per signal")
        numbers = [*self.means, *self.scales, *self.coefficients, self.intercept]
        if not all(math.isfinite(x) for x in numbers) or any(s <= 0 for s in self.scales):
            raise ValueError("coefficients, means and intercept must be finite, and scales positive")
        return self

    def probability(self, values: Mapping[str, float]) -> float:
        """P(relevant) for one request's signal values; a missing or NaN signal counts as its training mean."""
        z = self.intercept
        for name, mean, scale, weight in zip(self.signals, self.means, self.scales, self.coefficients):
            value = values.get(name, math.nan)
            if value is not None and math.isfinite(value):
                z += weight * (value - mean) / scale
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def probabilities(self, table: Any) -> np.ndarray:
        """P(relevant) per row of a table (pandas) holding one column per signal."""
        return np.array([self.probability({name: _number(row.get(name)) for name in self.signals})
                         for row in table.to_dict("records")])

    def with_threshold(self, threshold: float, dev: dict[str, Any] | None = None) -> RelevanceModel:
        return self.model_copy(update={"threshold": float(threshold), "dev": dev or {}})

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:12]

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps({"format": FILE_FORMAT, **self.model_dump(mode="json")}, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> RelevanceModel:
        path = Path(path)
        if not path.is_file():
            raise RelevanceModelError(f"Cannot read the relevance model {path}: "
                                      f"{'it is a directory' if path.is_dir() else 'no such file'}; give a relevance "
                                      "model file, auto or none.")
        data = read_json(path, what="relevance model", max_bytes=MAX_FILE_BYTES,
                         fix="Write one with RelevanceModel.save or 'toolsel bench relevance --save'.")
        if not isinstance(data, dict) or data.pop("format", None) != FILE_FORMAT:
            raise RelevanceModelError(f"{path} is not a relevance model file (format {FILE_FORMAT}); write one with "
                                      "RelevanceModel.save or 'toolsel bench relevance --save'.")
        try:
            return cls.model_validate(data)
        except ValueError as error:
            raise RelevanceModelError(f"The relevance model {path} is invalid: {error}") from None


def shipped_relevance_models() -> list[str]:
    """The model names a relevance model ships for."""
    return sorted(path.stem for path in SHIPPED_DIR.glob("*.json"))


def shipped_relevance_model(model: str) -> RelevanceModel | None:
    """The relevance model shipped for ``model`` (a spec such as ``local:qwen2.5-coder-0.5b``, or its name), or
    None: each is fitted on that model's own signals, so it is never applied to another model."""
    name = model.rsplit(":", 1)[-1].removesuffix(".gguf")
    path = SHIPPED_DIR / f"{name}.json"
    return RelevanceModel.load(path) if name and path.is_file() else None


_RETRIEVAL_PACKAGES = ("bm25s", "tokenizers", "safetensors")


def resolve_relevance(relevance: RelevanceModel | str | Path | None, model: str | None, *,
                      own: RelevanceModel | None = None) -> RelevanceModel | None:
    """The relevance model a setting names, the one place ``auto`` and ``none`` are read. ``auto``: the model of
    ``own`` (a compiled selector's stage's model) if there is one, else the one shipped for ``model`` (None: the configured
    LM's) if there is one and the retrieval extra its signals read is installed (else a warning and none);
    ``none`` or None: no relevance model; else a relevance model or the path of one."""
    if relevance is None or isinstance(relevance, RelevanceModel):
        return relevance
    if str(relevance) == NO_RELEVANCE:
        return None
    if str(relevance) == AUTO_RELEVANCE:
        if own is not None:  # a compiled selector's own comes first
            return own
        model = _configured_model() if model is None else model
        shipped = shipped_relevance_model(model)
        missing = [name for name in _RETRIEVAL_PACKAGES if importlib.util.find_spec(name) is None]
        if shipped is not None and missing and {"bm25_best", "dense_best", "dense_chosen"} & set(shipped.signals):
            warnings.warn(f"The relevance model shipped for {model} reads retrieval scores, and {', '.join(missing)} "
                          "is not installed: running without it. Install it with pip install "
                          "'tool-selection[retrieval]', or pass --relevance none to silence this.", stacklevel=2)
            return None
        return shipped
    return RelevanceModel.load(relevance)


def _configured_model() -> str:
    """The configured LM's model, which ``auto`` picks a shipped relevance model for when none is named."""
    import dspy

    if dspy.settings.lm is None:
        raise ToolSelectionError("relevance='auto' applies the relevance model shipped for the model the selector "
                                 "runs with: pass model= to MultiToolSelector.from_spec, configure the LM first "
                                 "(dspy.configure), or set relevance to 'none' or a file.")
    return str(getattr(dspy.settings.lm, "model", ""))


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def stored(value: float) -> float:
    """``value`` to the ``STORED_DIGITS`` significant digits a relevance model keeps."""
    return float(f"{float(value):.{STORED_DIGITS}g}")


def _rounded(values: Sequence[float]) -> tuple[float, ...]:
    return tuple(stored(value) for value in values)


def fit_relevance_model(table: Any, labels: Sequence[int], signals: Sequence[str], *, C: float = 1.0,
                        trained_on: dict[str, Any] | None = None) -> RelevanceModel:
    """A logistic regression of ``labels`` (1 = some tool fits) on ``signals`` columns of ``table``.

    Each signal is standardised with its training mean and spread; a missing value counts as the mean (it then
    adds nothing). Classes are weighted to balance, so a training set with few relevant rows does not push the
    model towards always answering one way."""
    from sklearn.linear_model import LogisticRegression

    signals = check_signals(signals)
    y = np.asarray(labels, dtype=int)
    if len(set(y.tolist())) < 2:
        raise RelevanceModelError("Fitting a relevance model needs rows of both kinds: cases that need a call and "
                                  "cases that need none.")
    x = np.column_stack([np.array([_number(v) for v in table[name]], dtype=float) if name in table
                         else np.full(len(y), math.nan) for name in signals])
    means = np.array([np.nanmean(col) if np.isfinite(col).any() else 0.0 for col in x.T])
    scales = np.array([np.nanstd(col) if np.isfinite(col).any() else 0.0 for col in x.T])
    scales = np.where(scales > 1e-9, scales, 1.0)
    standard = np.where(np.isfinite(x), (x - means) / scales, 0.0)
    classifier = LogisticRegression(C=C, class_weight="balanced", max_iter=1000).fit(standard, y)
    return RelevanceModel(signals=signals, means=_rounded(means), scales=_rounded(scales),
                          coefficients=_rounded(classifier.coef_[0]), intercept=_rounded([classifier.intercept_[0]])[0],
                          trained_on={**(trained_on or {}), "rows": int(len(y)), "relevant": int(y.sum())})
