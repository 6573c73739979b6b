"""Serve tools as an MCP server (official SDK, low-level ``Server``), over stdio or streamable HTTP.

    server = ToolServer(load_tool_set("treasure_hunt"), page_size=5)
    anyio.run(server.serve_stdio)          # or: anyio.run(server.serve_http, "127.0.0.1", 8765)

``tools/list`` pages through the tools in their set order; each ``inputSchema`` comes from the tool's
``Arguments`` model (``interop.to_mcp``). ``tools/call`` validates through the tool's own ``Arguments``; a tool's
failure (bad arguments, a ``tool_failure`` result, an exception in ``execute``) is an ``isError`` result the
model can read, while an unknown tool name is a JSON-RPC error. ``add_tools`` and ``remove_tools`` change the
served set while it runs and tell every client with ``notifications/tools/list_changed``: through
``subscriptions/listen`` for 2026-07-28 clients, on the connection itself for clients of the handshake era.
Over stdio every request gets an answer, however malformed (``mcp.stdio``); over HTTP any address but loopback
needs a bearer token and refuses tools that reach this machine unless allowed (``mcp.access``).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import reprlib
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.auth.settings import AuthSettings
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ServerEvent, ToolsListChanged
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from tool_selection.errors import DuplicateToolError, ToolArgumentError, ToolSelectionError, UnknownToolError
from tool_selection.interop import to_mcp
from tool_selection.mcp.access import StaticTokenVerifier, check_exposure, is_loopback
from tool_selection.mcp.stdio import checked_stdio_server
from tool_selection.registry import ToolRegistry
from tool_selection.tool import BaseTool
from tool_selection.tool_failures import is_failure
from tool_selection.toolset import ToolSet

__all__ = ["ToolServer", "listen"]

logger = logging.getLogger(__name__)

_MAX_CURSOR_CHARS = 100  # a cursor this server issues is base64 of [version, offset]: a few dozen characters


class ToolServer:
    """An MCP server for a tool set, a registry or any tool classes; the served tools can change while it runs.

    ``page_size`` caps the tools per ``tools/list`` page (``None``: one page). ``instantiate`` builds the tool
    instance for each call (default ``tool()``, a fresh instance as ``ToolRegistry.execute`` makes); pass one
    that shares state to let calls build on each other. Calls run one at a time, in a worker thread.
    """

    def __init__(
        self,
        tools: ToolSet | ToolRegistry | Iterable[type[BaseTool]],
        *,
        name: str | None = None,
        page_size: int | None = None,
        instantiate: Callable[[type[BaseTool]], BaseTool] | None = None,
    ):
        if page_size is not None and (not isinstance(page_size, int) or page_size < 1):
            raise ToolSelectionError(f"page_size must be a positive integer or None, got {page_size!r}")
        self.name = name or f"toolsel-{getattr(tools, 'name', 'tools')}"
        self.page_size = page_size
        self._instantiate = instantiate or (lambda tool: tool())
        self._tools: dict[str, type[BaseTool]] = {}
        self._add(tools, replace=False)
        self._version = 0  # bumped on every change; cursors from an older listing are refused
        self._exposure: dict[str, Any] | None = None  # check_exposure's arguments while served off loopback
        self._call_lock = threading.Lock()
        self._changes = InMemorySubscriptionBus()
        self.server = _ListChangedServer(
            self.name,
            version=_package_version(),
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._changes),
        )
        self.server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._forward_changes_to_handshake_client
        )

    # ------------------------------------------------------------------ the served set
    def tools(self) -> list[type[BaseTool]]:
        """The served tools, in listing order."""
        return list(self._tools.values())

    async def add_tools(self, *tools: type[BaseTool], replace: bool = False) -> None:
        """Serve more tools and notify clients. Call on the server's event loop (from a tool's worker thread:
        ``anyio.from_thread.run(server.add_tools, Tool)``). On a non-loopback address the same tools are refused
        as when serving started."""
        if self._exposure is not None:
            check_exposure(tools=tools, **self._exposure)
        self._add(tools, replace=replace)
        await self._changed()

    async def remove_tools(self, *names: str) -> None:
        """Stop serving the named tools and notify clients; unknown names raise ``UnknownToolError``."""
        for name in names:
            if name not in self._tools:
                raise UnknownToolError(name, self._tools, where=f"MCP server {self.name!r}")
        for name in names:
            del self._tools[name]
        await self._changed()

    def _add(self, tools: Iterable[type[BaseTool]], *, replace: bool) -> None:
        served = dict(self._tools)  # all or nothing: a refused tool leaves the served set as it was
        for tool in tools:
            if not (isinstance(tool, type) and issubclass(tool, BaseTool)):
                raise TypeError(f"ToolServer serves BaseTool subclasses, got {tool!r}")
            existing = served.get(tool.NAME)
            if existing is not None and existing is not tool and not replace:
                raise DuplicateToolError(tool.NAME, _qualname(existing), _qualname(tool),
                                         where=f"MCP server {self.name!r}")
            served[tool.NAME] = tool
        self._tools = served

    async def _changed(self) -> None:
        self._version += 1
        await self._changes.publish(ToolsListChanged())

    # ------------------------------------------------------------------ handlers
    async def _list_tools(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = self.tools()
        start = self._decode_cursor(params.cursor) if params and params.cursor else 0
        end = len(tools) if self.page_size is None else start + self.page_size
        next_cursor = self._encode_cursor(end) if end < len(tools) else None
        return types.ListToolsResult(tools=[to_mcp(tool) for tool in tools[start:end]], next_cursor=next_cursor)

    def _encode_cursor(self, offset: int) -> str:
        return base64.urlsafe_b64encode(json.dumps([self._version, offset]).encode()).decode()

    def _decode_cursor(self, cursor: str) -> int:
        invalid = MCPError(types.INVALID_PARAMS, f"Invalid cursor {reprlib.repr(cursor)}: not one this server "
                                                 "issued; list from the start")
        if len(cursor) > _MAX_CURSOR_CHARS:
            raise invalid
        try:
            version, offset = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        except (binascii.Error, UnicodeDecodeError, ValueError, TypeError, RecursionError):
            raise invalid from None
        if version != self._version:
            raise MCPError(types.INVALID_PARAMS,
                           "The tool list changed since this cursor was issued; list from the start")
        if type(offset) is not int or not 0 <= offset <= len(self._tools):
            raise invalid
        return offset

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self._tools.get(name)
        return None if tool is None else tool.input_schema()

    async def _call_tool(self, ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self._tools.get(params.name)
        if tool is None:  # a protocol error (JSON-RPC -32602), as the MCP spec asks for unknown tools
            raise MCPError(types.INVALID_PARAMS, str(UnknownToolError(params.name, self._tools,
                                                                      where=f"MCP server {self.name!r}")))
        return await anyio.to_thread.run_sync(self._execute, tool, params.arguments or {})

    def _execute(self, tool: type[BaseTool], arguments: dict[str, Any]) -> types.CallToolResult:
        with self._call_lock:
            try:
                instance = self._instantiate(tool)
            except ValidationError as error:  # the server's configuration, not the caller, is at fault
                raise MCPError(types.INTERNAL_ERROR, f"Tool {tool.NAME!r} cannot be created: {error}. Serve it "
                               "with an instantiate function that supplies its configuration.") from error
            try:
                result = instance.validate_and_execute(**arguments)
            except ToolArgumentError as error:
                return _error_result(str(error))
            except Exception as error:  # a tool's crash is reported to the model as isError, per the MCP spec
                logger.exception("Tool %r raised", tool.NAME)
                return _error_result(f"Tool {tool.NAME!r} failed: {type(error).__name__}: {error}")
        return _result(result)

    async def _forward_changes_to_handshake_client(
        self, ctx: ServerRequestContext, params: types.NotificationParams
    ) -> None:
        """Send ``notifications/tools/list_changed`` to a handshake-era client for as long as its connection
        lasts (the SDK runs this handler in the connection's task group, which ends with the connection).
        2026-07-28 clients get the same events through ``subscriptions/listen`` instead."""
        send, receive = anyio.create_memory_object_stream[ServerEvent](1)

        def deliver(event: ServerEvent) -> None:
            if isinstance(event, ToolsListChanged):
                try:
                    send.send_nowait(event)
                except anyio.WouldBlock:
                    pass  # one pending change already tells the client to list again

        unsubscribe = self._changes.subscribe(deliver)
        try:
            async with receive:
                async for _ in receive:
                    await ctx.session.send_tool_list_changed()
        finally:
            unsubscribe()
            send.close()

    # ------------------------------------------------------------------ transports
    async def serve_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it disconnects; every line it sends is checked
        first, so that each request gets an answer (``tool_selection.mcp.stdio``)."""
        async with checked_stdio_server() as (read_stream, write_stream):
            await self.server.run(read_stream, write_stream, self.server.create_initialization_options())

    async def serve_http(self, host: str = "127.0.0.1", port: int = 8000, *, path: str = "/mcp",
                         listener: socket.socket | None = None, token: str | None = None,
                         allow_host_access: bool = False) -> None:
        """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled, on ``listener`` when given (a socket
        from ``listen``). A loopback ``host`` turns on the SDK's DNS-rebinding protection. With ``token``, every
        request must carry ``Authorization: Bearer TOKEN``. Any address but loopback requires a token, and refuses
        tools that run programs or read files here unless ``allow_host_access`` (``tool_selection.mcp.access``)."""
        import uvicorn

        address = listener.getsockname()[0] if listener is not None else host
        exposure = {"host": address, "token": token, "allow_host_access": allow_host_access}
        check_exposure(tools=self.tools(), **exposure)
        if not is_loopback(address):
            self._exposure = exposure
        auth: dict[str, Any] = {}
        if token:
            # The SDK's bearer auth (BearerAuthBackend, RequireAuthMiddleware) with one static token. AuthSettings
            # wants an issuer: this server issues its own token; without an OAuth provider no route serves it.
            auth = {"auth": AuthSettings(issuer_url=f"http://{_url_host(address)}:{port}", resource_server_url=None),
                    "token_verifier": StaticTokenVerifier(token)}
        app = self.server.streamable_http_app(streamable_http_path=path, host=host, **auth)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
        await server.serve(sockets=[listener] if listener is not None else None)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: any free port) for ``ToolServer.serve_http``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as error:
        raise ToolSelectionError(f"Cannot listen on {host}:{port}: {error.strerror or error}") from None


class _ListChangedServer(Server):
    """A low-level ``Server`` that tells handshake-era clients, on every transport, that its tool list changes."""

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      *args: Any, **kwargs: Any) -> InitializationOptions:
        return super().create_initialization_options(notification_options or NotificationOptions(tools_changed=True),
                                                     *args, **kwargs)


def _result(value: Any) -> types.CallToolResult:
    """A tool's return value as MCP content: text (JSON unless a string) and, for objects, structured content."""
    value = to_jsonable_python(value, fallback=str)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured,
                                is_error=is_failure(value))


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _package_version() -> str:
    from tool_selection import __version__

    return __version__
