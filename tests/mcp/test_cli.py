"""``toolsel mcp list|serve`` through the real command line entry point."""

import json
import shlex
import socket

from tests.mcp.servers import TREASURE_STDIO
from tool_selection.cli import main
from tool_selection.toolset import load_tool_set
from tool_sets.treasure_hunt import Move

TREASURE = load_tool_set("treasure_hunt")


def test_cli_lists_the_tools_of_a_stdio_server(capfd):
    assert main(["mcp", "list", shlex.join(TREASURE_STDIO)]) == 0
    out = capfd.readouterr().out
    assert out.startswith("12 tools\n")
    assert "  move  " in out and "  give_hint  " in out


def test_cli_lists_the_tools_of_an_http_server_as_json(treasure_url, capfd):
    assert main(["mcp", "list", treasure_url, "--json"]) == 0
    tools = json.loads(capfd.readouterr().out)
    assert [tool["name"] for tool in tools] == TREASURE.names()
    assert tools[1]["inputSchema"] == Move.input_schema()


def test_cli_reports_an_unknown_tool_set_in_one_line(capfd):
    assert main(["mcp", "serve", "no_such_set"]) == 2
    assert capfd.readouterr().err.startswith("toolsel: error: Unknown tool set 'no_such_set'; choose one of: ")


def test_cli_reports_a_port_in_use_in_one_line(capfd):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["mcp", "serve", "treasure_hunt", "--http", str(port)]) == 2
    assert capfd.readouterr().err.startswith(f"toolsel: error: Cannot listen on 127.0.0.1:{port}: ")
