"""Use any MCP server's tools from ordinary (synchronous) code, over stdio or streamable HTTP.

    with connect_mcp("toolsel mcp serve treasure_hunt") as server:   # or connect_mcp("http://127.0.0.1:8765/mcp")
        tools = server.tool_set()                  # a ToolSet whose tools run on the server
        tools.registry().try_execute("move", {"direction": "north"})

Arguments are validated locally against each tool's imported schema before ``tools/call`` is sent. A tool's
failure (``isError``) comes back as a ``tool_failure`` result; a protocol error (an unknown tool, a lost
connection) raises ``McpProtocolError``. One session stays open on a background event-loop thread (an anyio
blocking portal) until ``close()``; ``notifications/tools/list_changed`` bumps ``tools_version`` and wakes
``wait_for_tools_changed``.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, ClassVar, TypeVar

import anyio
import anyio.from_thread
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tool_selection.errors import ToolSelectionError
from tool_selection.interop import SchemaOnlyTool, from_mcp
from tool_selection.mcp.access import TOKEN_ENV
from tool_selection.tool_failures import tool_failure
from tool_selection.toolset import ToolSet

__all__ = ["McpConnection", "McpProtocolError", "RemoteTool", "connect_mcp", "list_mcp_tools", "result_value"]

logger = logging.getLogger(__name__)

_MAX_PAGES = 1000  # a server whose cursors never end cannot hang list_tools
_T = TypeVar("_T")


class McpProtocolError(ToolSelectionError):
    """The MCP server answered with a JSON-RPC error (an unknown tool, a bad cursor) or could not be reached."""

    def __init__(self, message: str, code: int | None = None):
        self.code = code
        super().__init__(message)


class RemoteTool(SchemaOnlyTool, abstract=True):
    """A tool imported from an MCP server: validates against its schema locally, executes with ``tools/call``."""

    CONNECTION: ClassVar[McpConnection]
    SOURCE: ClassVar[str] = "mcp"

    def execute(self, **kwargs: Any) -> Any:
        return result_value(self.CONNECTION.call_tool(self.NAME, kwargs))


class McpConnection:
    """An open session with one MCP server. ``server`` is a URL (streamable HTTP) or a command line (stdio),
    as a string (split like a shell) or a list of arguments. ``timeout``: seconds to wait for each response.
    ``env`` adds variables to the server process's environment (the SDK passes it only a safe few). ``token``: the
    bearer token an HTTP server asks for (default: ``$TOOLSEL_MCP_TOKEN``), sent as ``Authorization: Bearer``."""

    def __init__(self, server: str | Sequence[str], *, timeout: float = 30.0, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, token: str | None = None):
        self.server = server if isinstance(server, str) else shlex.join(server)
        self.timeout = timeout
        self._target = _target(server, env=env, cwd=cwd)
        self._token = _bearer_token(self._target, token)
        self._refused = False  # an HTTP 401 came back: said when connecting fails, which the SDK reports without it
        self._tools_version = 0
        self._tools_changed = threading.Condition()
        self._portal_context = anyio.from_thread.start_blocking_portal(name="mcp-client")
        self._portal = self._portal_context.__enter__()
        self._session_context = self._portal.wrap_async_context_manager(self._session())
        try:
            self._client: Client = self._session_context.__enter__()
        except Exception as error:
            self._portal_context.__exit__(None, None, None)
            raise McpProtocolError(f"Could not connect to MCP server {self.server!r}: {_describe(error)}"
                                   f"{self._refusal_hint()}") from error
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    async def _note_refusal(self, response: Any) -> None:
        if response.status_code == 401:
            self._refused = True

    def _refusal_hint(self) -> str:
        if not self._refused:
            return ""
        if self._token:
            return " (HTTP 401: the server refused this bearer token)"
        return (f" (HTTP 401: the server wants a bearer token; pass token=... or --token, or set {TOKEN_ENV})")

    def close(self) -> None:
        """End the session (a stdio server process is shut down) and stop the background thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._session_context.__exit__(None, None, None)
        finally:
            self._portal_context.__exit__(None, None, None)

    def __enter__(self) -> McpConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[Client]:
        async with AsyncExitStack() as stack:
            target: StdioServerParameters | Transport = self._target
            if isinstance(self._target, str):  # the SDK's HTTP client (its timeouts), with the token when there is one
                headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
                http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                http.event_hooks["response"].append(self._note_refusal)
                target = streamable_http_client(self._target, http_client=http)
            client = await stack.enter_async_context(
                Client(target, read_timeout_seconds=self.timeout, message_handler=self._on_message, cache=None))
            tasks = await stack.enter_async_context(anyio.create_task_group())
            tools = client.server_capabilities.tools
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS and tools is not None and tools.list_changed:
                await tasks.start(self._listen_for_changes, client)
            yield client
            tasks.cancel_scope.cancel()

    async def _listen_for_changes(self, client: Client, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Hold a ``subscriptions/listen`` stream open: 2026-07-28 servers send list changes only there. Its
        frames also reach ``_on_message``, which counts them."""
        listening = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                listening = True
                async for _ in subscription:
                    pass
        except (MCPError, SubscriptionLost) as error:
            logger.warning("MCP server %r will not report tool list changes: %s", self.server, error)
            if not listening:
                task_status.started()

    async def _on_message(self, message: Any) -> None:
        """Every server notification: from a listen stream, or (handshake era) on the connection itself."""
        if isinstance(message, types.ToolListChangedNotification):
            self._mark_tools_changed()
        elif isinstance(message, Exception):
            logger.warning("MCP server %r sent an unreadable message: %s", self.server, message)

    def _mark_tools_changed(self) -> None:
        with self._tools_changed:
            self._tools_version += 1
            self._tools_changed.notify_all()

    # ------------------------------------------------------------------ tool list changes
    @property
    def tools_version(self) -> int:
        """How many ``notifications/tools/list_changed`` the server has sent in this session."""
        return self._tools_version

    def wait_for_tools_changed(self, since: int | None = None, timeout: float | None = None) -> bool:
        """Block until the server reports a tool list change after version ``since`` (default: now).
        Returns whether one came within ``timeout`` seconds."""
        with self._tools_changed:
            since = self._tools_version if since is None else since
            return self._tools_changed.wait_for(lambda: self._tools_version > since, timeout)

    # ------------------------------------------------------------------ requests
    def list_tools(self) -> list[types.Tool]:
        """Every tool the server offers, following ``nextCursor`` through all pages."""
        return self._call(self._list_all_tools)

    async def _list_all_tools(self, *, restarted: bool = False) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            try:
                page = await self._client.list_tools(cursor=cursor)
            except MCPError:
                if cursor is None or restarted:
                    raise
                # A server may refuse a cursor issued before its list changed: list once more from the start.
                return await self._list_all_tools(restarted=True)
            tools.extend(page.tools)
            if not page.next_cursor:
                return tools
            if page.next_cursor == cursor:
                raise McpProtocolError(f"MCP server {self.server!r} returned the same tools/list cursor twice")
            cursor = page.next_cursor
        raise McpProtocolError(f"MCP server {self.server!r} listed tools over more than {_MAX_PAGES} pages")

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> types.CallToolResult:
        """The server's ``CallToolResult`` (``is_error`` for a tool's own failure); protocol errors raise."""
        return self._call(self._client.call_tool, name, dict(arguments or {}))

    def tool_set(self, name: str | None = None) -> ToolSet:
        """The server's current tools, in its order, as a ``ToolSet`` whose tools execute on the server (call
        again after a change), each in the category ``name``: the name the server gives itself unless given."""
        name = name or (self._client.server_info.name if self._client.server_info else "") or "mcp"
        listed = self.list_tools()
        imported = from_mcp(listed, name=name, category=name)  # one catalog per server (--retrieve-catalogs)
        remote = tuple(_remote(imported.get(tool.name), self) for tool in listed)
        return ToolSet(name=name, tools=remote, description=f"Tools of the MCP server {self.server!r}")

    def _call(self, function: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        if self._closed:
            raise McpProtocolError(f"The connection to MCP server {self.server!r} is closed")
        try:
            return self._portal.call(function, *args)
        except MCPError as error:
            raise McpProtocolError(f"MCP server {self.server!r}: {error.message}", code=error.code) from error


def connect_mcp(server: str | Sequence[str], *, timeout: float = 30.0, env: Mapping[str, str] | None = None,
                cwd: str | None = None, token: str | None = None) -> McpConnection:
    """Open a session with an MCP server (a URL or a command line); use it in a ``with`` block or ``close()`` it.
    The arguments are ``McpConnection``'s."""
    return McpConnection(server, timeout=timeout, env=env, cwd=cwd, token=token)


def list_mcp_tools(server: str | Sequence[str], *, timeout: float = 30.0, token: str | None = None) -> list[types.Tool]:
    """Connect, list every tool (all pages) and disconnect."""
    with connect_mcp(server, timeout=timeout, token=token) as connection:
        return connection.list_tools()


def result_value(result: types.CallToolResult) -> Any:
    """A ``CallToolResult`` as a tool's return value: its structured content, else its text, else its content
    blocks; an ``isError`` result becomes a ``tool_failure`` (kept as is when the server sent one)."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if result.is_error:
        structured = result.structured_content
        if isinstance(structured, dict) and structured.get("ok") is False:
            return structured
        return tool_failure("tool_error", "\n".join(texts) or "The tool reported an error without a message.")
    if result.structured_content is not None:
        return result.structured_content
    if len(texts) == len(result.content) == 1:
        return texts[0]
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]


def _remote(tool: type[SchemaOnlyTool], connection: McpConnection) -> type[RemoteTool]:
    namespace = {"NAME": tool.NAME, "CONNECTION": connection, "__module__": __name__, "__qualname__": tool.__qualname__}
    return type(tool.__name__, (tool, RemoteTool), namespace)


def _target(
    server: str | Sequence[str], *, env: Mapping[str, str] | None, cwd: str | None
) -> str | StdioServerParameters:
    if isinstance(server, str) and server.startswith(("http://", "https://")):
        return server
    argv = shlex.split(server) if isinstance(server, str) else list(server)
    if not argv:
        raise ToolSelectionError("An MCP server is a URL (http://HOST:PORT/mcp) or a command line; got nothing")
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(env) if env else None, cwd=cwd)


def _bearer_token(target: str | StdioServerParameters, token: str | None) -> str | None:
    """The token to send: ``token``, else ``$TOOLSEL_MCP_TOKEN``, for an HTTP server only."""
    if isinstance(target, StdioServerParameters):
        if token is not None:
            raise ToolSelectionError("A bearer token is for an MCP server over HTTP; a stdio server is a process "
                                     "this client starts and needs none.")
        return None
    return token or os.environ.get(TOKEN_ENV) or None


def _describe(error: BaseException) -> str:
    """The innermost causes of a connect failure, without task-group wrapping."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in error.exceptions)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__

