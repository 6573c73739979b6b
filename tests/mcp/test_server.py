"""ToolServer against the official SDK client: real server processes (stdio and HTTP, both protocol eras), and
in-process servers for the failures no shipped tool set produces."""

import json

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import Field

from tests.mcp.servers import TREASURE_STDIO
from tool_selection import BaseTool, StrictArguments
from tool_selection.errors import DuplicateToolError, ToolSelectionError, UnknownToolError
from tool_selection.interop import to_mcp
from tool_selection.mcp import ToolServer
from tool_selection.toolset import load_tool_set
from tool_sets.treasure_hunt import ExamineLocation, GiveHint, Move

pytestmark = pytest.mark.anyio

TREASURE = load_tool_set("treasure_hunt")
TIMEOUT = 20


def sdk_client(target, mode: str) -> Client:
    return Client(target, mode=mode, read_timeout_seconds=TIMEOUT, cache=None)


async def list_pages(client: Client) -> list[types.ListToolsResult]:
    pages = [await client.list_tools()]
    while pages[-1].next_cursor:
        pages.append(await client.list_tools(cursor=pages[-1].next_cursor))
    return pages


async def check_treasure_server(client: Client) -> None:
    pages = await list_pages(client)
    assert [len(page.tools) for page in pages] == [5, 5, 2]
    listed = [tool for page in pages for tool in page.tools]
    assert [tool.name for tool in listed] == TREASURE.names()
    assert [tool.input_schema for tool in listed] == [to_mcp(tool).input_schema for tool in TREASURE]

    result = await client.call_tool("examine_location", {})
    assert not result.is_error
    assert result.structured_content == ExamineLocation().validate_and_execute()
    assert json.loads(result.content[0].text) == result.structured_content

    invalid = await client.call_tool("move", {"direction": "sideways"})
    assert invalid.is_error
    assert invalid.content[0].text.startswith("Invalid arguments for tool 'move' (1 problem(s)):\n  - direction: ")

    failed = await client.call_tool("move", {"direction": "up"})
    assert failed.is_error
    assert failed.structured_content == Move().validate_and_execute(direction="up")
    assert "There is no way up from the Sandy Cove." in failed.content[0].text

    with pytest.raises(MCPError) as unknown:
        await client.call_tool("mvoe", {"direction": "north"})
    assert unknown.value.code == types.INVALID_PARAMS
    assert unknown.value.message == "Unknown tool 'mvoe' in MCP server 'toolsel-treasure_hunt'. Did you mean 'move'?"

    with pytest.raises(MCPError) as bad_cursor:
        await client.list_tools(cursor="not-a-cursor")
    assert bad_cursor.value.code == types.INVALID_PARAMS


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_server_lists_pages_calls_and_reports_errors(mode):
    """`toolsel mcp serve treasure_hunt --page-size 5` over stdio, for 2026-07-28 and handshake-era clients."""
    target = StdioServerParameters(command=TREASURE_STDIO[0], args=TREASURE_STDIO[1:])
    async with sdk_client(target, mode) as client:
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        assert client.server_capabilities.tools.list_changed
        await check_treasure_server(client)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_http_server_lists_pages_calls_and_reports_errors(treasure_url, mode):
    """The same server over streamable HTTP."""
    async with sdk_client(treasure_url, mode) as client:
        await check_treasure_server(client)


# ----------------------------------------------------------------------------- in process


class Explode(BaseTool):
    NAME = "explode"
    description = "Always raise."
    category = "test"

    def execute(self) -> None:
        raise RuntimeError("boom")


class Configured(BaseTool):
    NAME = "configured"
    description = "Needs a setting to be created."
    category = "test"
    setting: str = Field(description="A required setting.")

    class Arguments(StrictArguments):
        word: str = Field(description="A word to echo.")

    def execute(self, word: str) -> str:
        return f"{self.setting}: {word}"


async def test_an_exception_inside_execute_is_an_error_result():
    async with sdk_client(ToolServer([Explode]).server, "auto") as client:
        result = await client.call_tool("explode", {})
    assert result.is_error
    assert result.content[0].text == "Tool 'explode' failed: RuntimeError: boom"


async def test_a_tool_that_cannot_be_created_is_a_server_error_unless_instantiate_configures_it():
    async with sdk_client(ToolServer([Configured]).server, "auto") as client:
        with pytest.raises(MCPError) as error:
            await client.call_tool("configured", {"word": "hi"})
    assert error.value.code == types.INTERNAL_ERROR
    assert "Tool 'configured' cannot be created" in error.value.message

    server = ToolServer([Configured], instantiate=lambda tool: tool(setting="set"))
    async with sdk_client(server.server, "auto") as client:
        result = await client.call_tool("configured", {"word": "hi"})
    assert (result.is_error, result.content[0].text, result.structured_content) == (False, "set: hi", None)


async def test_a_cursor_from_before_a_change_is_refused():
    server = ToolServer(TREASURE, page_size=5)
    async with sdk_client(server.server, "auto") as client:
        first = await client.list_tools()
        await server.remove_tools("give_hint")
        with pytest.raises(MCPError, match="changed since this cursor was issued"):
            await client.list_tools(cursor=first.next_cursor)
        names = [tool.name for page in await list_pages(client) for tool in page.tools]
    assert names == [name for name in TREASURE.names() if name != "give_hint"]


async def test_changes_are_all_or_nothing_and_name_their_problem():
    server = ToolServer([ExamineLocation, Move])
    renamed_move = type("OtherMove", (Move,), {"NAME": "move"})
    with pytest.raises(DuplicateToolError, match="Tool name 'move' in MCP server 'toolsel-tools'"):
        await server.add_tools(GiveHint, renamed_move)
    with pytest.raises(UnknownToolError, match="Unknown tool 'mvoe' in MCP server 'toolsel-tools'"):
        await server.remove_tools("examine_location", "mvoe")
    assert server.tools() == [ExamineLocation, Move]
    await server.add_tools(renamed_move, replace=True)
    assert server.tools() == [ExamineLocation, renamed_move]


def test_page_size_must_be_positive():
    with pytest.raises(ToolSelectionError, match="page_size must be a positive integer or None, got 0"):
        ToolServer(TREASURE, page_size=0)
