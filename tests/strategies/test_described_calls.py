"""An answer that describes a call instead of making it gets the call opened for it (scripted models)."""

import pytest

from tests.strategies.test_split import EUR, TOOLS, _json, _strict_selector_run
from tool_selection.lm.strict_calls import described_call

FUNCTIONS = ("get_exchange_rate", "search", "math.gcd")


@pytest.mark.parametrize(("answer", "describes"), [
    ('To find it, call the `get_exchange_rate` function with {"base": "EUR", "quote": "USD"}.', True),
    ("math.gcd(36, 48) gives the answer.", True),
    ("Use `search` with the city's name.", True),  # a plain-word name counts where it is quoted
    ("<tools></tools>", True),
    ("", True),
    ("None of the available functions can do this.", False),
    ("You could search the web for it, or ask a librarian.", False),  # the word, not the function
    ("get_exchange_rates is not listed, so I cannot help.", False),  # another name that begins the same
])
def test_an_answer_describes_a_call_where_it_names_a_listed_function_or_has_no_words(answer, describes):
    assert described_call(answer, FUNCTIONS) is describes


PROSE = "To get it, you can call the `get_exchange_rate` function with the EUR as base."


def test_a_described_call_is_opened_for_the_model(tmp_path):
    prediction, llama = _strict_selector_run(tmp_path, [PROSE, _json(EUR), ""],
                                             strategy="native-strict-cover",
                                             request="What is the EUR to USD rate?")
    assert prediction.decision.tool_calls == [EUR]
    forced = llama.calls[1]
    assert forced["prompt"].endswith("<tool_call>\n") and PROSE not in forced["prompt"]
    assert forced["grammar"] is not None


def test_both_answers_count_as_written_and_only_the_call_is_scored(tmp_path):
    from dspy.lm15 import Config, FunctionTool, Message, Request

    from tests.lm.conftest import StagedLlama
    from tool_selection.lm import LocalEngine
    from tool_selection.lm.strict_calls import DESCRIBED_CALLS
    from tool_selection.strategies.native import call_schema, openai_tools

    llama = StagedLlama([PROSE, _json(EUR), ""])
    engine = LocalEngine(tmp_path / "m.gguf", llama=llama)
    tools = openai_tools(TOOLS)
    response = engine.complete(Request(
        model="local:m", messages=(Message.user("What is the EUR to USD rate?"),),
        tools=tuple(FunctionTool(name=t["function"]["name"], description=t["function"]["description"],
                                 parameters=t["function"]["parameters"]) for t in tools),
        config=Config(max_tokens=500, logprobs=1, response_format={"type": "json_schema", "schema": call_schema(tools)},
                      extensions={"metadata": {DESCRIBED_CALLS: True}})))
    assert response.usage.output_tokens == len(PROSE) + len(_json(EUR))
    scored = "".join(score.token for score in response.logprobs or [])
    assert scored == PROSE[0] + _json(EUR)  # the model's own first token (it opened no call), then the call


@pytest.mark.parametrize("strategy", ["native-strict-more", "native-strict-cover"])
def test_an_answer_that_declines_stays_without_a_call(tmp_path, strategy):
    prediction, llama = _strict_selector_run(tmp_path, ["None of the available functions can do this.", _json(EUR)],
                                             strategy=strategy, request="What is the EUR to USD rate?")
    assert prediction.decision.abstained and len(llama.calls) == 1


def test_only_the_cover_strategy_opens_a_described_call(tmp_path):
    prediction, llama = _strict_selector_run(tmp_path, [PROSE, _json(EUR)], strategy="native-strict-more",
                                             request="What is the EUR to USD rate?")
    assert prediction.decision.abstained and len(llama.calls) == 1
