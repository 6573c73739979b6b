"""The relevance model: fitted on train rows, a calibrated probability, saved as JSON and checked on load."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from tool_selection.relevance import (
    RelevanceModel,
    RelevanceModelError,
    fit_relevance_model,
    resolve_relevance,
    shipped_relevance_model,
    shipped_relevance_models,
)
from tool_selection.strict_files import FileFormatError


def table(n=200, seed=0):
    rng = np.random.default_rng(seed)
    relevant = rng.integers(0, 2, n)
    return pd.DataFrame({"dense_best": relevant * 0.4 + rng.normal(0.2, 0.1, n),
                         "unlisted": (1 - relevant) * (rng.random(n) < 0.5),
                         "verify": rng.normal(0, 1, n)}), relevant


def test_a_fitted_model_ranks_by_its_signals_and_ignores_noise():
    x, y = table()
    model = fit_relevance_model(x, y, ["dense_best", "unlisted", "verify"], trained_on={"suites": ["s"]})
    weights = dict(zip(model.signals, model.coefficients))
    assert weights["dense_best"] > 1 and weights["unlisted"] < 0 and abs(weights["verify"]) < 0.5
    p = model.probabilities(x)
    assert ((p > 0.5) == (y == 1)).mean() > 0.9
    assert model.trained_on == {"suites": ["s"], "rows": 200, "relevant": int(y.sum())}


def test_a_missing_signal_counts_as_its_training_mean():
    x, y = table()
    model = fit_relevance_model(x, y, ["dense_best", "verify"])
    mean = dict(zip(model.signals, model.means))
    assert model.probability({"dense_best": math.nan, "verify": mean["verify"]}) == pytest.approx(
        model.probability({"dense_best": mean["dense_best"], "verify": mean["verify"]}))
    assert model.probability({}) == pytest.approx(1 / (1 + math.exp(-model.intercept)))


def test_fitting_needs_both_kinds_of_rows():
    x, _ = table(20)
    with pytest.raises(RelevanceModelError, match="both kinds"):
        fit_relevance_model(x, [1] * 20, ["dense_best"])


def test_save_and_load_round_trip_and_refuse_what_is_not_a_model(tmp_path):
    x, y = table()
    model = fit_relevance_model(x, y, ["dense_best", "unlisted"]).with_threshold(0.4, {"balanced_accuracy": 0.9})
    path = model.save(tmp_path / "relevance.json")
    assert RelevanceModel.load(path) == model and RelevanceModel.load(path).fingerprint == model.fingerprint
    data = json.loads(path.read_text())
    for broken, message in ((dict(data, format=9), "not a relevance model"),
                            (dict(data, coefficients=[1.0]), "one entry per signal"),
                            (dict(data, scales=[0.0, 1.0]), "scales positive"),
                            (dict(data, signals=["dense_best", "telepathy"]), "telepathy"),
                            (dict(data, threshold=1.5), "threshold"),
                            (dict(data, extra_code="import os"), "extra_code")):
        path.write_text(json.dumps(broken))
        with pytest.raises(RelevanceModelError, match=message):
            RelevanceModel.load(path)
    path.write_bytes(b"\xff\xfe not json")
    with pytest.raises(FileFormatError, match="relevance.json, line 1: is not UTF-8"):
        RelevanceModel.load(path)


def test_auto_takes_the_model_shipped_for_that_model_only(tmp_path, monkeypatch):
    from tool_selection.relevance import model as relevance_model

    x, y = table()
    shipped = fit_relevance_model(x, y, ["dense_best", "unlisted"]).with_threshold(0.3)
    shipped.save(tmp_path / "qwen2.5-coder-0.5b.json")
    monkeypatch.setattr(relevance_model, "SHIPPED_DIR", tmp_path)
    assert shipped_relevance_models() == ["qwen2.5-coder-0.5b"]
    assert resolve_relevance("auto", "local:qwen2.5-coder-0.5b") == shipped
    assert resolve_relevance("auto", "qwen2.5-coder-0.5b") == shipped
    assert resolve_relevance("auto", "local:qwen2.5-coder-1.5b") is None  # fitted on another model's signals
    assert resolve_relevance("none", "local:qwen2.5-coder-0.5b") is None
    assert resolve_relevance(None, "local:qwen2.5-coder-0.5b") is None
    assert resolve_relevance(str(tmp_path / "qwen2.5-coder-0.5b.json"), "openai/gpt-4o") == shipped
    with pytest.raises(RelevanceModelError, match="Cannot read"):
        resolve_relevance("automatic", "local:qwen2.5-coder-0.5b")


def test_every_shipped_model_loads_and_uses_no_signal_that_asks_the_model_again():
    for name in shipped_relevance_models():
        model = shipped_relevance_model(name)
        assert model is not None and model.trained_on.get("suites") and model.dev.get("rows")
        assert not {"verify", "gate"} & set(model.signals)


def test_auto_warns_and_runs_without_a_model_whose_retrieval_scores_cannot_be_computed(tmp_path, monkeypatch):
    import importlib.util

    from tool_selection.relevance import model as relevance_model

    x, y = table()
    fit_relevance_model(x.assign(bm25_best=x["dense_best"]), y, ["bm25_best", "unlisted"]).save(tmp_path / "m.json")
    monkeypatch.setattr(relevance_model, "SHIPPED_DIR", tmp_path)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bm25s" else real(name, *a))
    with pytest.warns(UserWarning, match=r"bm25s is not installed.*tool-selection\[retrieval\].*--relevance none"):
        assert resolve_relevance("auto", "local:m") is None


def test_a_refit_on_signals_that_differ_in_their_last_bits_is_the_same_model():
    x, y = table()
    nudged = x.assign(dense_best=x["dense_best"] * (1 + 1e-13))  # as dense scores recomputed on another CPU
    first, second = (fit_relevance_model(t, y, ["dense_best", "unlisted"]) for t in (x, nudged))
    assert first.fingerprint == second.fingerprint
    assert all(float(f"{c:.6g}") == c for c in first.coefficients)  # stored to 6 significant digits


def test_a_threshold_given_replaces_the_models_own_and_needs_a_model(tmp_path, monkeypatch):
    from pydantic import ValidationError

    from tool_selection.errors import ToolSelectionError
    from tool_selection.relevance import model as relevance_model
    from tool_selection.selector import MultiToolSelector
    from tool_selection.spec import SelectorSpec

    x, y = table()
    fit_relevance_model(x, y, ["dense_best", "unlisted"]).with_threshold(0.3).save(tmp_path / "qwen2.5-coder-0.5b.json")
    monkeypatch.setattr(relevance_model, "SHIPPED_DIR", tmp_path)
    spec = SelectorSpec(strategy="json-cot", relevance="auto", relevance_threshold=0.1)
    selector = MultiToolSelector.from_spec(spec, model="local:qwen2.5-coder-0.5b")
    assert selector.relevance.model.threshold == 0.1 and "P < 0.100" in selector.relevance.describe()
    assert MultiToolSelector.from_spec(spec.model_copy(update={"relevance_threshold": None}),
                                       model="local:qwen2.5-coder-0.5b").relevance.model.threshold == 0.3
    with pytest.raises(ToolSelectionError, match="finds none for local:qwen2.5-coder-1.5b"):
        MultiToolSelector.from_spec(spec, model="local:qwen2.5-coder-1.5b")
    with pytest.raises(ValidationError, match="not with relevance 'none'"):
        SelectorSpec(relevance="none", relevance_threshold=0.1)
