"""The synchronous client facade against real server processes (stdio and HTTP)."""

import shlex
import sys

import mcp_types as types
import pytest

from tests.mcp.servers import TREASURE_STDIO, free_port
from tool_selection.errors import ToolSelectionError
from tool_selection.mcp import McpProtocolError, RemoteTool, connect_mcp
from tool_selection.mcp.client import result_value
from tool_selection.toolset import load_tool_set
from tool_sets.treasure_hunt import ExamineLocation, Move

TREASURE = load_tool_set("treasure_hunt")
TIMEOUT = 20


@pytest.fixture(scope="module")
def stdio_connection():
    with connect_mcp(shlex.join(TREASURE_STDIO), timeout=TIMEOUT) as connection:
        yield connection


class TestStdioConnection:
    def test_list_tools_follows_every_page(self, stdio_connection):
        """The server pages by 5; the client returns all 12 tools, in the server's order."""
        assert [tool.name for tool in stdio_connection.list_tools()] == TREASURE.names()

    def test_tool_set_imports_names_descriptions_and_schemas(self, stdio_connection):
        tool_set = stdio_connection.tool_set()
        assert tool_set.name == "toolsel-treasure_hunt"
        assert tool_set.names() == TREASURE.names()
        assert {tool.category for tool in tool_set} == {"toolsel-treasure_hunt"}  # one catalog per server
        for remote, local in zip(tool_set, TREASURE, strict=True):
            assert issubclass(remote, RemoteTool)
            assert (remote.description, remote.input_schema()) == (local.description, local.input_schema())

    def test_remote_tools_return_what_the_local_tools_return(self, stdio_connection):
        registry = stdio_connection.tool_set().registry()
        assert registry.execute("examine_location") == ExamineLocation().validate_and_execute()
        assert registry.execute("move", {"direction": "up"}) == Move().validate_and_execute(direction="up")

    def test_arguments_are_validated_locally_with_each_problem_named(self, stdio_connection):
        outcome = stdio_connection.tool_set().registry().try_execute("move", {"direction": 3, "speed": "fast"})
        assert outcome["ok"] is False and outcome["error"] == "invalid_arguments"
        assert {problem["field"] for problem in outcome["problems"]} == {"direction", "speed"}

    def test_an_unknown_tool_is_a_protocol_error(self, stdio_connection):
        with pytest.raises(McpProtocolError, match="Did you mean 'move'") as error:
            stdio_connection.call_tool("mvoe", {"direction": "north"})
        assert error.value.code == types.INVALID_PARAMS


def test_http_connection_lists_and_calls(treasure_url):
    with connect_mcp(treasure_url, timeout=TIMEOUT) as connection:
        tool_set = connection.tool_set(name="island")
        assert (tool_set.name, tool_set.names()) == ("island", TREASURE.names())
        assert {tool.category for tool in tool_set} == {"island"}
        result = connection.call_tool("move", {"direction": "sideways"})
        assert result.is_error
        assert result_value(result) == {
            "ok": False, "error": "tool_error", "suggestions": [],
            "message": result.content[0].text,
        }
        assert tool_set.registry().execute("examine_location")["name"] == "Sandy Cove"


def test_result_values():
    text = types.TextContent(type="text", text="42")
    assert result_value(types.CallToolResult(content=[text])) == "42"
    assert result_value(types.CallToolResult(content=[text], structured_content={"n": 42})) == {"n": 42}
    failure = {"ok": False, "error": "empty", "message": "Nothing here."}
    assert result_value(types.CallToolResult(content=[text], structured_content=failure, is_error=True)) == failure
    assert result_value(types.CallToolResult(content=[], is_error=True))["message"] == (
        "The tool reported an error without a message.")


@pytest.mark.parametrize(("server", "cause"), [
    ("no-such-mcp-server-command", "FileNotFoundError"),
    ([sys.executable, "-c", "pass"], "Connection closed"),
])
def test_a_server_that_cannot_be_reached_is_one_clear_error(server, cause):
    with pytest.raises(McpProtocolError, match=f"Could not connect to MCP server .*{cause}"):
        connect_mcp(server, timeout=TIMEOUT)


def test_a_refused_url_is_one_clear_error():
    with pytest.raises(McpProtocolError, match="Could not connect to MCP server 'http://127.0.0.1:"):
        connect_mcp(f"http://127.0.0.1:{free_port()}/mcp", timeout=TIMEOUT)


def test_an_empty_server_is_refused():
    with pytest.raises(ToolSelectionError, match="An MCP server is a URL"):
        connect_mcp("  ")
