"""``notifications/tools/list_changed`` end to end: a server process whose tools change while clients watch."""

import shlex

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.mcp.servers import CHANGING_STDIO
from tool_selection.mcp import McpProtocolError, connect_mcp

TIMEOUT = 20


@pytest.fixture(params=["stdio", "http"])
def changing_server(request):
    return shlex.join(CHANGING_STDIO) if request.param == "stdio" else request.getfixturevalue("changing_url")


def test_the_client_sees_each_change_and_the_new_list(changing_server):
    with connect_mcp(changing_server, timeout=TIMEOUT) as connection:
        tools = connection.tool_set()
        assert tools.names() == ["unlock_bonus", "lock_bonus"]

        before = connection.tools_version
        assert tools.registry().execute("unlock_bonus") == "bonus unlocked"
        assert connection.wait_for_tools_changed(since=before, timeout=TIMEOUT)
        tools = connection.tool_set()
        assert tools.names() == ["unlock_bonus", "lock_bonus", "bonus"]
        assert tools.registry().execute("bonus", {"number": 21}) == "42"

        before = connection.tools_version
        assert tools.registry().execute("lock_bonus") == "bonus locked"
        assert connection.wait_for_tools_changed(since=before, timeout=TIMEOUT)
        assert [tool.name for tool in connection.list_tools()] == ["unlock_bonus", "lock_bonus"]
        with pytest.raises(McpProtocolError, match="Unknown tool 'bonus'"):
            tools.registry().execute("bonus", {"number": 21})  # the stale set's tool is gone on the server


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_handshake_era_clients_are_notified_on_the_connection(transport, request):
    """Clients that connect with `initialize` (2025-11-25 and older) get the notification without listening."""
    target = (StdioServerParameters(command=CHANGING_STDIO[0], args=CHANGING_STDIO[1:]) if transport == "stdio"
              else request.getfixturevalue("changing_url"))
    changes = 0
    changed = anyio.Event()

    async def on_message(message):
        nonlocal changes
        if isinstance(message, types.ToolListChangedNotification):
            changes += 1
            changed.set()

    async with Client(target, mode="legacy", message_handler=on_message, read_timeout_seconds=TIMEOUT,
                      cache=None) as client:
        assert client.protocol_version == "2025-11-25"
        await client.call_tool("unlock_bonus", {})
        with anyio.fail_after(TIMEOUT):
            await changed.wait()
        assert [tool.name for tool in (await client.list_tools()).tools] == ["unlock_bonus", "lock_bonus", "bonus"]
        changed = anyio.Event()
        await client.call_tool("lock_bonus", {})
        with anyio.fail_after(TIMEOUT):
            await changed.wait()
        assert [tool.name for tool in (await client.list_tools()).tools] == ["unlock_bonus", "lock_bonus"]
    assert changes == 2
