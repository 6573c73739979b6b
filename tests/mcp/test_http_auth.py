"""MCP over HTTP off loopback, attacked end to end: requests without the bearer token, run_bash on a public
address, host-access tools added while serving publicly."""

import os
import queue
import re
import subprocess
import threading
import time
from contextlib import contextmanager

import anyio
import httpx
import pytest

from tests.mcp.servers import SERVE, free_port, http_server
from tool_selection.errors import ToolSelectionError
from tool_selection.mcp import McpProtocolError, ToolServer, connect_mcp, listen
from tool_selection.toolset import load_tool_set
from tool_sets.code import RunBash

TIMEOUT = 20
TOKEN = "test-token-0123456789"
TOKEN_ENV = "TOOLSEL_MCP_TOKEN"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_the_cli_refuses_to_expose_run_bash_on_a_public_address():
    """``toolsel mcp serve code --http PORT --host 0.0.0.0`` exits with the reason instead of serving run_bash."""
    process = subprocess.run([*SERVE, "code", "--http", str(free_port()), "--host", "0.0.0.0"],
                             capture_output=True, text=True, timeout=60, env=_without_token())
    assert process.returncode == 2
    assert "Refusing to serve MCP on '0.0.0.0'" in process.stderr and "run_bash" in process.stderr


@contextmanager
def _public_server(tool_set: str, *extra: str):
    """``toolsel mcp serve TOOLSET --host 0.0.0.0`` with no token given; yields its URL and the token it printed."""
    port = free_port()
    process = subprocess.Popen([*SERVE, tool_set, "--http", str(port), "--host", "0.0.0.0", *extra],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, env=_without_token())
    try:
        printed_lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [printed_lines.put(line) for line in process.stderr], daemon=True).start()
        lines, deadline = [], time.monotonic() + 60
        while not (lines[-2:-1] and lines[-2].startswith("Clients must send this bearer token")):
            try:
                lines.append(printed_lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        printed = "".join(lines)
        assert "Clients must send this bearer token" in printed, printed
        token = lines[-1].strip()
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", token)
        yield f"http://127.0.0.1:{port}/mcp", token
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_public_server_generates_a_token_and_refuses_requests_without_it():
    with _public_server("finance") as (url, token):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
            response = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=TIMEOUT)
            assert response.status_code == 401, headers
        with pytest.raises(McpProtocolError, match=f"HTTP 401: the server wants a bearer token; .*{TOKEN_ENV}"):
            connect_mcp(url, timeout=TIMEOUT)
        with pytest.raises(McpProtocolError, match="HTTP 401: the server refused this bearer token"):
            connect_mcp(url, timeout=TIMEOUT, token="wrong")
        with connect_mcp(url, timeout=TIMEOUT, token=token) as connection:
            assert "get_stock_price" in [tool.name for tool in connection.list_tools()]


def test_host_access_tools_are_served_off_loopback_only_when_allowed(monkeypatch):
    with _public_server("code", "--allow-host-access") as (url, token):
        monkeypatch.setenv(TOKEN_ENV, token)  # the client's default
        with connect_mcp(url, timeout=TIMEOUT) as connection:
            assert "run_bash" in [tool.name for tool in connection.list_tools()]


def test_a_token_from_the_environment_is_required_on_loopback_too(monkeypatch):
    port = free_port()
    with http_server([*SERVE, "finance", "--http", str(port)], port, env={**os.environ, TOKEN_ENV: TOKEN}) as url:
        assert httpx.post(url, json=INITIALIZE, headers=MCP_HEADERS, timeout=TIMEOUT).status_code == 401
        with connect_mcp(url, timeout=TIMEOUT, token=TOKEN) as connection:
            assert connection.list_tools()


@pytest.mark.anyio
async def test_tool_server_refuses_to_serve_or_add_host_access_tools_off_loopback():
    server = ToolServer(load_tool_set("finance"))
    with pytest.raises(ToolSelectionError, match="needs a bearer token"), anyio.fail_after(10):
        await server.serve_http("0.0.0.0", 0)  # else it would serve every address, with no token
    with listen("0.0.0.0", 0) as listener:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: server.serve_http("0.0.0.0", listener.getsockname()[1], listener=listener,
                                                       token=TOKEN))
            await anyio.sleep(0.5)
            with pytest.raises(ToolSelectionError, match="run_bash run programs or read files"):
                await server.add_tools(RunBash)
            tasks.cancel_scope.cancel()
    assert "run_bash" not in [tool.NAME for tool in server.tools()]


def test_a_token_is_for_http_servers_only():
    with pytest.raises(ToolSelectionError, match="A bearer token is for an MCP server over HTTP"):
        connect_mcp("toolsel mcp serve finance", token=TOKEN)


def _without_token() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != TOKEN_ENV}
