"""The invariant relevance models: a request's probability nearly the same whether its right tool is listed
alone or beside four unrelated tools, with the model's answer held fixed (the signals of the answer are the
same; the ones that read the tools are computed again)."""

import pytest

from tool_selection.decision import MultiToolDecision, ToolCall
from tool_selection.interop import from_openai
from tool_selection.relevance import Evidence, compute_signals
from tool_selection.relevance.model import (
    INVARIANT_DIR,
    RelevanceModel,
    RelevanceModelError,
    resolve_relevance,
    shipped_relevance_model,
)

pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def tool(name, description, **arguments):
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": {k: {"type": "string", "description": v}
                                                              for k, v in arguments.items()},
                           "required": list(arguments)}}


UNRELATED = [tool("get_stock_price", "Latest trading price of a stock.", symbol="Ticker symbol."),
             tool("send_email", "Send an email message to a recipient.", to="Address.", body="Message text."),
             tool("translate_text", "Translate text into another language.", text="Text.", target="Language."),
             tool("book_flight", "Book a flight between two airports.", origin="From.", destination="To.")]
PAIRS = [  # request, its right tool, the call a model makes for it
    ("What's the weather like in Oslo right now?",
     tool("get_current_weather", "Get the current weather in a given location.", location="City name."),
     ToolCall(tool_name="get_current_weather", arguments={"location": "Oslo"})),
    ("Find me a recipe for pad thai",
     tool("search_recipes", "Search recipes by dish name or ingredients.", query="What to search for."),
     ToolCall(tool_name="search_recipes", arguments={"query": "pad thai"})),
    ("How many calories are in 200 grams of banana?",
     tool("nutrition_facts", "Calories and nutrients of a food, for an amount in grams.", food="Food.",
          grams="Amount in grams."),
     ToolCall(tool_name="nutrition_facts", arguments={"food": "banana", "grams": "200"})),
]
ANSWER = {"call_open": 3.0, "name_logprob": -0.2, "name_logprob_min": -0.6}  # one confident answer, held fixed


def probability(model, request, tools, call):
    evidence = Evidence(request=request, registry=from_openai(tools, name=f"pair-{len(tools)}"),
                        decision=MultiToolDecision(tool_calls=[call]))
    reads = [name for name in model.reads if name not in ANSWER and name != "other_language"]
    return model.probability({**compute_signals(evidence, reads), **ANSWER})


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize(("request_text", "right", "call"), PAIRS, ids=["weather", "recipe", "calories"])
def test_the_probability_does_not_move_with_four_unrelated_tools_beside(name, request_text, right, call):
    model = resolve_relevance("invariant", name)
    alone = probability(model, request_text, [right], call)
    beside = probability(model, request_text, [right, *UNRELATED], call)
    assert abs(beside - alone) < 0.05, (alone, beside)
    assert (alone < model.threshold) == (beside < model.threshold)


@pytest.mark.parametrize("name", MODELS)
def test_invariant_models_ship_beside_the_default_and_read_no_listed_idf(name):
    model, default = resolve_relevance("invariant", f"local:{name}"), shipped_relevance_model(name)
    assert isinstance(model, RelevanceModel) and model.fingerprint != default.fingerprint
    assert "bm25_anchored" in model.signals and "bm25_best" not in model.reads
    assert model.trained_on["suites"] == default.trained_on["suites"] and model.trained_on["split"] == "train"


def test_a_model_without_an_invariant_relevance_model_is_told_what_ships():
    with pytest.raises(RelevanceModelError, match="No invariant relevance model ships for local:other.*"
                                                  "qwen2.5-coder-0.5b.*--relevance auto"):
        resolve_relevance("invariant", "local:other")
    assert sorted(path.stem for path in INVARIANT_DIR.glob("*.json")) == list(MODELS)
