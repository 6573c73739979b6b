"""A suite evaluated over an MCP server's tools: the selector sees the server's catalog, the harness scores as
for local tools (``toolsel eval --mcp``)."""

import json
import shlex

import dspy
from dspy.utils.dummies import DummyLM

from evals.evaluation import evaluate
from evals.suite import load_suite
from tests.mcp.servers import TREASURE_STDIO
from tool_selection.mcp import connect_mcp
from tool_selection.run_config import RunConfig
from tool_selection.spec import SelectorSpec


def test_treasure_hunt_cases_over_the_servers_tools(tmp_path):
    cases = load_suite("treasure_hunt").split("test").limit(2)
    answers = [{"reasoning": "r", "tool_calls": json.dumps([c.model_dump() | {"arguments": {
        k: v[0] for k, v in c.acceptable().items() if v and v[0] != ""}} for c in case.expected_calls])}
        for case in cases]
    lm = DummyLM(answers, adapter=dspy.JSONAdapter())
    with connect_mcp(shlex.join(TREASURE_STDIO)) as server:
        tools = server.tool_set().registry()
        result = evaluate(cases, lm, split=None, tools=tools, selector=SelectorSpec(strategy="json-cot"),
                          run=RunConfig(mlflow=False, progress=False, run_dir=tmp_path / "run"))
    assert result.params["tools"].endswith(f"({len(tools)} tools)")
    assert result.summary["accuracy"] == 1.0 and result.summary["unknown_tool_rate"] == 0.0
    prompt = lm.history[0]["messages"][0]["content"] + lm.history[0]["messages"][-1]["content"]
    assert "move:" in prompt  # the catalog shown to the model is the server's
