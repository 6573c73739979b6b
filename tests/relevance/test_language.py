"""Requests in another language than their tools: the ``other_language`` signal, the relevance model that reads
such requests without the signals that compare words, and its fit on the same rows as the main model."""

import importlib.util
import json

import numpy as np
import pandas as pd
import pytest

from evals.relevance import apply_relevance, choose_threshold, fit_on_rows, fit_other_language
from tests.evals.test_relevance import row
from tests.relevance.test_signals import TOOLS, call
from tool_selection import ToolSelectionError
from tool_selection.interop import from_openai
from tool_selection.relevance import Evidence, RelevanceModel, compute_signals
from tool_selection.relevance.language import catalog_language, in_other_language

pytest.importorskip("py3langid", reason="the other_language signal needs py3langid (the retrieval extra)")

CLIMA = from_openai([{"name": "consultar_tiempo", "description": "Consulta el tiempo actual de una ciudad.",
                      "parameters": {"type": "object", "properties": {"ciudad": {"type": "string"}}}}], name="clima")


@pytest.mark.parametrize(("request_text", "other"), [
    ("What's the weather in Oslo right now?", False),
    ("How much is one share of ACME trading at today?", False),
    ("¿Qué tiempo hace ahora mismo en Oslo?", True),
    ("奥斯陆现在的天气怎么样?", True),
    ("Wie ist das Wetter gerade in Oslo?", True),
])
def test_a_request_is_in_another_language_than_english_tools(request_text, other):
    assert catalog_language(TOOLS) == "en"
    assert in_other_language(request_text, TOOLS) is other
    evidence = Evidence(request=request_text, registry=TOOLS, decision=call("get_weather", city="Oslo"))
    assert compute_signals(evidence, ["other_language"])["other_language"] == float(other)


def test_the_catalogs_own_language_is_not_another_one():
    assert catalog_language(CLIMA) == "es"
    assert not in_other_language("¿Qué tiempo hace ahora mismo en Oslo?", CLIMA)
    assert in_other_language("奥斯陆现在的天气怎么样?", CLIMA)


def test_without_py3langid_the_error_names_the_extra(monkeypatch):
    from tool_selection.relevance import language

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "py3langid" else real(name, *a))
    language._identifier.cache_clear()
    try:
        with pytest.raises(ToolSelectionError, match=r"other_language relevance signal needs the 'py3langid' package"
                                                     r".*tool-selection\[retrieval\]"):
            language.language_probabilities("hello")
    finally:
        language._identifier.cache_clear()


def _model(signal, coefficient, intercept=0.0, threshold=0.5, **more):
    return RelevanceModel(signals=(signal,), means=(0.0,), scales=(1.0,), coefficients=(coefficient,),
                          intercept=intercept, threshold=threshold, **more)


def test_requests_in_another_language_are_read_by_the_other_model(tmp_path):
    inner = _model("call_open", 1.0)
    model = _model("dense_best", 5.0, other_language=inner.model_dump())
    assert model.reads == ("dense_best", "call_open", "other_language")
    english, spanish = {"dense_best": -1.0, "call_open": 2.0, "other_language": 0.0}, {"other_language": 1.0}
    assert model.probability(english) == pytest.approx(1 / (1 + np.exp(5.0)))  # dense_best decides
    assert model.probability({**english, **spanish}) == pytest.approx(1 / (1 + np.exp(-2.0)))  # call_open does
    assert RelevanceModel.load(model.save(tmp_path / "m.json")) == model
    plain = _model("dense_best", 5.0)
    assert "other_language" not in json.loads(plain.save(tmp_path / "p.json").read_text())  # older files unchanged
    table = pd.DataFrame([{"rel_dense_best": -1.0, "rel_call_open": 2.0, "rel_other_language": v} for v in (0, 1)])
    assert model.probabilities(table) == pytest.approx([model.probability(english), 1 / (1 + np.exp(-2.0))])


@pytest.mark.parametrize("inner", [{"signals": ["bm25_best"]}, {"signals": ["other_language"]},
                                   {"other_language": _model("call_open", 1.0).model_dump()}])
def test_the_other_model_compares_no_words_and_has_no_other_model_of_its_own(inner):
    nested = _model("call_open", 1.0).model_dump() | inner
    with pytest.raises(ValueError, match="cannot have one of its own or weigh other_language or a signal that compares"):
        _model("dense_best", 5.0, other_language=nested)


def test_the_other_model_is_fitted_on_the_same_rows_and_decides_at_the_main_threshold():
    def rows(split, seed):  # dense_best and call_open each separate the cases that need a call, with overlap
        rng = np.random.default_rng(seed)
        frame = pd.DataFrame([row(f"{split}-{i}", split, i % 2 == 0, True, float(rng.normal(0.5 * (i % 2 == 0), 0.4)))
                              for i in range(40)])
        needs = frame["abstention_correct"].isna().to_numpy()
        return frame.assign(rel_call_open=np.where(needs, 1.0, -1.0) + rng.normal(0, 0.8, len(frame)),
                            rel_other_language=1.0)

    part = {"train": rows("train", 0), "dev": rows("dev", 1)}
    main = choose_threshold(fit_on_rows(part["train"], ["dense_best"]), part["dev"]).model
    model = fit_other_language(main, part, ["call_open"])
    inner = model.other_language
    assert inner.threshold == main.threshold and model.signals == main.signals and model.threshold == main.threshold
    own = choose_threshold(fit_on_rows(part["train"], ["call_open"]), part["dev"]).model
    assert inner.dev["own_threshold"] == own.threshold and inner.coefficients == own.coefficients
    test = rows("test", 2)
    assert (apply_relevance(test, model)["relevance_overruled"] == apply_relevance(test, own)["relevance_overruled"]).all()
    english = test.assign(rel_other_language=0.0)  # the main model reads them
    assert (apply_relevance(english, model)["relevance_p"] == apply_relevance(english, main)["relevance_p"]).all()
    with pytest.raises(ToolSelectionError, match="threshold 0 overrules no call or every call"):
        fit_other_language(main.with_threshold(0.0), part, ["call_open"])
