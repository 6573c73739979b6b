"""demos: each request shown the K most similar solved train requests with their expected calls (a spec field: a
flag, a sweep axis and a param with no other edit)."""

import pytest

from tool_selection.decision import ToolCall
from tool_selection.demo_pool import Demo, DemoPool, leaving_out
from tool_selection.errors import ToolSelectionError
from tool_selection.interop import from_openai


def _tool(name, description, argument):
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": {argument: {"type": "string"}}, "required": [argument]}}


RATE, WEATHER = _tool("get_rate", "Exchange rate of a currency pair.", "pair"), _tool("get_weather", "Weather.", "city")
TOOLS = from_openai([RATE, WEATHER], name="mixed")


def _call(name, **arguments):
    return ToolCall(tool_name=name, arguments=arguments)


CURRENCY = Demo("What is the EUR to USD exchange rate?", (_call("get_rate", pair="EURUSD"),), "train-rate")
TWO_CITIES = Demo("Weather in Paris and in Rome?", (_call("get_weather", city="Paris"),
                                                    _call("get_weather", city="Rome")), "train-cities")
JOKE = Demo("Tell me a joke about cats", (), "train-joke")
POOL = DemoPool([CURRENCY, TWO_CITIES, JOKE])


def test_the_nearest_demos_are_the_most_similar_and_ties_keep_the_pool_order():
    assert POOL.nearest("Convert: the GBP to USD exchange rate", 1) == [CURRENCY]
    assert POOL.nearest("Weather in Oslo and in Lima?", 1) == [TWO_CITIES]
    assert POOL.nearest("zzz", 3) == [CURRENCY, TWO_CITIES, JOKE]  # nothing in common: the pool's order


def test_a_request_is_never_its_own_demo():
    assert CURRENCY not in POOL.nearest("  what is the EUR to USD   exchange rate?", 3)  # spacing and case aside
    with leaving_out("train-cities"):
        assert POOL.nearest("Weather in Paris and in Rome, please", 3) == [CURRENCY, JOKE]
    assert POOL.nearest("Weather in Paris and in Rome, please", 1) == [TWO_CITIES]


def test_an_empty_pool_is_refused():
    with pytest.raises(ToolSelectionError, match="at least one solved request"):
        DemoPool([])


