"""``toolsel mcp serve|list``: serve a tool set as an MCP server, or list the tools of any MCP server."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from functools import partial

from tool_selection.cli_output import print_json
from tool_selection.errors import ToolSelectionError


def register(subparsers: argparse._SubParsersAction) -> None:
    mcp = subparsers.add_parser("mcp", help="Serve a tool set over MCP, or list an MCP server's tools.",
                                description="Serve a tool set over MCP, or list an MCP server's tools.")
    mcp.set_defaults(handler=lambda args: mcp.print_help() or 0)
    add_commands(mcp)


def add_commands(parser: argparse.ArgumentParser) -> None:
    """Add ``serve`` and ``list`` to ``parser`` (``toolsel mcp``, or ``python -m tool_selection.mcp``)."""
    sub = parser.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")

    serve = sub.add_parser("serve", help="Serve a tool set as an MCP server (stdio, or streamable HTTP).",
                           description="Serve a tool set as an MCP server: over stdin/stdout by default, or over "
                                       "streamable HTTP at http://HOST:PORT/mcp with --http PORT.")
    serve.add_argument("tool_set", metavar="TOOLSET", help="Tool set name (see 'toolsel tools list').")
    serve.add_argument("--http", type=_port, metavar="PORT", help="Serve streamable HTTP on this port (0: any free).")
    serve.add_argument("--host", default="127.0.0.1",
                       help="Address to listen on with --http (default: 127.0.0.1). Any other address requires a "
                            "bearer token: --token, else one is generated and printed.")
    serve.add_argument("--token", help="Bearer token every HTTP request must carry (default: $TOOLSEL_MCP_TOKEN; "
                                       "on loopback, none).")
    serve.add_argument("--allow-host-access", action="store_true",
                       help="Serve tools that run programs or read files on this machine (the code, files and "
                            "vision sets) on a non-loopback address too.")
    serve.add_argument("--page-size", type=_positive, metavar="N", help="At most N tools per tools/list page.")
    serve.set_defaults(handler=_serve)

    list_parser = sub.add_parser("list", help="List the tools of an MCP server (all pages).",
                                 description="List the tools of an MCP server, given its URL (streamable HTTP) or "
                                             "the command line that starts it (stdio, quoted as one argument).")
    list_parser.add_argument("server", metavar="CMD|URL", help='e.g. "toolsel mcp serve finance" or '
                                                                "http://127.0.0.1:8765/mcp")
    list_parser.add_argument("--token", help="Bearer token for an HTTP server (default: $TOOLSEL_MCP_TOKEN).")
    list_parser.add_argument("--json", action="store_true", help="Print the tools as MCP JSON (with inputSchema).")
    list_parser.add_argument("--timeout", type=float, default=30.0,
                             help="Seconds to wait for each answer (default: 30).")
    list_parser.set_defaults(handler=_list)


def _serve(args: argparse.Namespace) -> int:
    import anyio

    from tool_selection.mcp.access import TOKEN_ENV, check_exposure, is_loopback, new_token
    from tool_selection.mcp.server import ToolServer, listen
    from tool_selection.toolset import load_tool_set

    server = ToolServer(load_tool_set(args.tool_set), page_size=args.page_size)
    if args.http is None and args.token:
        raise ToolSelectionError("--token is for HTTP (--http PORT); over stdio the client is the parent process.")
    if args.http is None:
        anyio.run(server.serve_stdio)
        return 0
    given = args.token or os.environ.get(TOKEN_ENV) or None
    token = given if given is not None or is_loopback(args.host) else new_token()
    check_exposure(args.host, server.tools(), token=token, allow_host_access=args.allow_host_access)
    listener = listen(args.host, args.http)
    host, port = listener.getsockname()[:2]
    shown_host = f"[{host}]" if listener.family == socket.AF_INET6 else host
    print(f"Serving {len(server.tools())} tools of {args.tool_set!r} at http://{shown_host}:{port}/mcp "
          "(Ctrl-C to stop)", file=sys.stderr, flush=True)
    if token is not None and given is None:
        print(f"Clients must send this bearer token (Authorization: Bearer TOKEN, or {TOKEN_ENV}=TOKEN for toolsel):"
              f"\n  {token}", file=sys.stderr, flush=True)
    if not is_loopback(host):
        print("The token travels in clear text over http: reach this server only through a network you trust, or "
              "put a TLS proxy in front of it.", file=sys.stderr, flush=True)
    with listener:
        anyio.run(partial(server.serve_http, args.host, port, listener=listener, token=token,
                          allow_host_access=args.allow_host_access))
    return 0


def _list(args: argparse.Namespace) -> int:
    from tool_selection.mcp.client import list_mcp_tools

    tools = list_mcp_tools(args.server, timeout=args.timeout, token=args.token)
    if args.json:
        print_json([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools])
        return 0
    width = max((len(tool.name) for tool in tools), default=10)
    print(f"{len(tools)} tools")
    for tool in tools:
        summary = (tool.description or "").split(". ")[0].rstrip(".")
        print(f"  {tool.name:<{width}}  {summary}")
    return 0


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, got {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
