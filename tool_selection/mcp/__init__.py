"""MCP in and out, with the official MCP Python SDK.

Out: ``ToolServer`` serves a tool set over stdio or streamable HTTP (``toolsel mcp serve TOOLSET``). In:
``connect_mcp`` opens a session with any MCP server and imports its tools as a ``ToolSet`` that executes
remotely (``toolsel mcp list "CMD ..."|URL``).
"""

from tool_selection.mcp.client import McpConnection, McpProtocolError, RemoteTool, connect_mcp, list_mcp_tools
from tool_selection.mcp.server import ToolServer, listen

__all__ = ["McpConnection", "McpProtocolError", "RemoteTool", "ToolServer", "connect_mcp", "list_mcp_tools", "listen"]
