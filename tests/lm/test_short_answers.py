"""Yes/No questions asked for two tokens do not warn that their answers were truncated; other calls still do."""

import logging

from tool_selection.lm.short_answers import expected_truncation

from .conftest import FakeLlama


def _warn():
    logging.getLogger("dspy.clients.lm").warning("LM response was truncated; increase max_tokens or inspect history.")


def test_the_truncation_warning_is_dropped_only_where_expected(caplog):
    with caplog.at_level(logging.WARNING, logger="dspy.clients.lm"):
        with expected_truncation():
            _warn()
            logging.getLogger("dspy.clients.lm").warning("another warning")
        _warn()
    messages = [record.getMessage() for record in caplog.records]
    assert messages == ["another warning", "LM response was truncated; increase max_tokens or inspect history."]


def test_the_reranker_asks_without_the_warning(make_lm, caplog):
    from tool_selection.interop import from_openai
    from tool_selection.retrieval import LLMReranker, RetrievedTool

    registry = from_openai([{"name": "get_weather", "description": "Weather for a city.",
                             "parameters": {"type": "object", "properties": {}}}], name="one")
    lm, _ = make_lm(llama=FakeLlama(["Yes", "Yes"], finish_reason="length"), cache=False)  # cut at max_tokens
    with caplog.at_level(logging.WARNING, logger="dspy.clients.lm"):
        LLMReranker(lm).rerank("Weather in Oslo?", registry, [RetrievedTool("get_weather", 1.0)])
        assert not [r for r in caplog.records if "truncated" in r.getMessage()]
        lm("the same cut answer, asked elsewhere")
    assert [r for r in caplog.records if "truncated" in r.getMessage()]
