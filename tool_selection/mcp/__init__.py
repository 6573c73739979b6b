"""MCP in and out, with the official MCP Python SDK.

Out: ``ToolServer`` serves a tool set over stdio or streamable HTTP (``toolsel mcp serve TOOLSET``). In:
``connect_mcp`` opens a session with any MCP server and imports its tools as a ``ToolSet`` that executes
remotely (``toolsel mcp list "CMD ..."|URL``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_selection._lazy import lazy_getattr

if TYPE_CHECKING:
    from tool_selection.mcp.client import McpConnection, McpProtocolError, RemoteTool, connect_mcp, list_mcp_tools
    from tool_selection.mcp.server import ToolServer, listen

# loaded on first use (PEP 562): the MCP SDK takes seconds to import, 'toolsel mcp --help' none of it
_LAZY = {
    **dict.fromkeys(["McpConnection", "McpProtocolError", "RemoteTool", "connect_mcp", "list_mcp_tools"],
                    "tool_selection.mcp.client"),
    **dict.fromkeys(["ToolServer", "listen"], "tool_selection.mcp.server"),
}

__all__ = ["McpConnection", "McpProtocolError", "RemoteTool", "ToolServer", "connect_mcp", "list_mcp_tools", "listen"]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
