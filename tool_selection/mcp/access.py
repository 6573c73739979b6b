"""Who may reach an MCP server over HTTP, and with which tools.

On loopback a server is open to this machine, as before. Any other address needs a bearer token, checked by the MCP
SDK's own auth (``BearerAuthBackend`` and ``RequireAuthMiddleware`` through a ``TokenVerifier``), and tools that
run programs or read files on this machine (the code, files and vision tool sets) are refused there unless explicitly
allowed. Clients send the token as ``Authorization: Bearer TOKEN`` (``connect_mcp(url, token=...)`` or
``$TOOLSEL_MCP_TOKEN``).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Iterable

from mcp.server.auth.provider import AccessToken, TokenVerifier

from tool_selection.errors import ToolSelectionError
from tool_selection.tool import BaseTool

__all__ = ["HOST_ACCESS_CATEGORIES", "TOKEN_ENV", "StaticTokenVerifier", "check_exposure", "is_loopback",
           "new_token"]

TOKEN_ENV = "TOOLSEL_MCP_TOKEN"
HOST_ACCESS_CATEGORIES = frozenset({"code", "files", "vision"})  # tools that run programs, or read files, on the server
_CLIENT_ID = "toolsel-token"  # every holder of the one token is the same client to the SDK


class StaticTokenVerifier(TokenVerifier):
    """Accepts exactly one bearer token, compared in constant time."""

    def __init__(self, token: str):
        if not token:
            raise ToolSelectionError("An MCP bearer token cannot be empty.")
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token=token, client_id=_CLIENT_ID, scopes=[])
        return None


def new_token() -> str:
    """A fresh random bearer token (256 bits)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (an empty host or a wildcard is not)."""
    try:
        addresses = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        try:
            addresses = [ipaddress.ip_address(info[4][0]) for info in socket.getaddrinfo(host, None)]
        except (socket.gaierror, UnicodeError, ValueError):
            return False
    return bool(addresses) and all(_unmapped(address).is_loopback for address in addresses)


def _unmapped(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return getattr(address, "ipv4_mapped", None) or address


def check_exposure(host: str, tools: Iterable[type[BaseTool]], *, token: str | None, allow_host_access: bool) -> None:
    """Refuse to serve ``tools`` on a non-loopback ``host`` without a token, or with host-access tools that were
    not explicitly allowed; every problem is named at once."""
    if is_loopback(host):
        return
    problems = []
    if not token:
        problems.append(f"it needs a bearer token (toolsel mcp serve --token TOKEN or ${TOKEN_ENV}; the command "
                        "generates one when neither is given; in Python: serve_http(..., token=TOKEN))")
    reaching = [tool.NAME for tool in tools if tool.category in HOST_ACCESS_CATEGORIES]
    if reaching and not allow_host_access:
        problems.append(f"{', '.join(reaching)} run programs or read files on this machine; serve them on "
                        "127.0.0.1, or allow it explicitly (--allow-host-access, allow_host_access=True)")
    if problems:
        raise ToolSelectionError(f"Refusing to serve MCP on {host!r}, which is not a loopback address: "
                                 + "; ".join(problems) + ".")
