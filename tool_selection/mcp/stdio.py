"""The stdio transport with every client line checked first, so that every request gets an answer.

The SDK's stdio transport parses each line with ``jsonrpc_message_adapter``; a line it cannot parse reaches the
server as an exception, which the server logs and drops, and a request whose id is not a string or an integer
(an object, ``true``, ``1.5``, ``null``) parses as a notification, which gets no answer either. So a client whose
line is not JSON, whose request nests deeper than the SDK's parser reads (200 levels), holds an unpaired surrogate
escape or an integer of more than 4,300 digits, or carries an object id, would wait forever. ``checked_stdio_server``
reads the client's lines itself and hands the SDK's transport only those it will read as they were sent; it
answers every other request as JSON-RPC 2.0 asks: -32700 for a line that is not JSON, -32600 for JSON that is not
a valid request (with ``"id": null`` unless the request's own id is a string or an integer), -32602 for a request
whose params the server cannot read. Notifications and responses are never answered; they are logged.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["check_line", "checked_stdio_server"]

logger = logging.getLogger(__name__)

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)  # strings are skipped whole
_SCALAR = re.compile(r"[^\s,\]}]+")
_POSITION = re.compile(r"^Invalid JSON: | at line \d+ column \d+$")
_UNREADABLE = object()  # an integer with more digits than Python (and the SDK's parser) reads
_SURROGATE = "a string holds an unpaired surrogate escape, which is not Unicode text"
_PLAIN_REASONS = {
    "recursion limit exceeded": "they nest deeper than the server's JSON parser reads",
    "number out of range": "a number has more digits than the server's JSON parser reads",
    "surrogate": _SURROGATE,
    "unexpected end of hex escape": _SURROGATE,  # a high surrogate escape with no low one after it
}


@asynccontextmanager
async def checked_stdio_server() -> AsyncIterator[tuple[Any, Any]]:
    """``mcp.server.stdio.stdio_server`` fed through ``check_line``: yields its (read, write) streams."""
    with _claimed_stdin() as wire:
        lines = _CheckedLines(anyio.wrap_file(wire))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.answer_with(write_stream)
            yield read_stream, write_stream


def check_line(raw: bytes) -> str | types.JSONRPCError | None:
    """One line from the client: its text when the SDK reads it as sent, else the error to answer it with, or
    None for what gets no answer (a blank line; a notification or a response the SDK cannot read)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return _error(None, types.PARSE_ERROR, f"Parse error: the line is not UTF-8 ({error.reason} at byte "
                                               f"{error.start})")
    if not text.strip():
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as error:
        return _refusal(text, _reason(error))
    if isinstance(message, types.JSONRPCNotification) and "id" in (_top_level_members(text) or {}):
        return _refusal(text, "the id is not a string or an integer")  # the SDK dropped the id: no answer
    return text


class _CheckedLines:
    """The client's lines as ``stdio_server`` reads its ``stdin``: those that pass ``check_line``; the others are
    answered on the transport's own write stream (one writer, so frames never interleave)."""

    def __init__(self, wire: anyio.AsyncFile[bytes]):
        self._wire = wire
        self._answers: Any = None
        self._ready = anyio.Event()

    def answer_with(self, write_stream: Any) -> None:
        self._answers = write_stream
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for raw in self._wire:
            checked = check_line(raw)
            if isinstance(checked, str):
                yield checked
            elif checked is not None:
                await self._ready.wait()
                await self._answers.send(SessionMessage(checked))


@contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """The client's pipe, read through a private duplicate of fd 0 while fd 0 points at the null device, as the
    SDK's own claim does: a tool or child process that reads stdin gets EOF, never the client's requests."""
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield os.fdopen(wire, "rb", closefd=False)  # never closed: a worker thread may still be blocked reading it
    finally:
        os.dup2(wire, 0)


def _refusal(text: str, reason: str) -> types.JSONRPCError | None:
    """The answer to a line the SDK would drop, with the most precise code JSON-RPC 2.0 has for it."""
    if (syntax_error := _json_syntax_error(text)) is not None:
        return _error(None, types.PARSE_ERROR, f"Parse error: {syntax_error}")
    members = _top_level_members(text)
    if members is None:
        return _error(None, types.INVALID_REQUEST, "Invalid Request: a request is a JSON object (batches are not "
                                                   "supported)")
    kind = "request" if "method" in members else "response" if {"result", "error"} & members.keys() else None
    if kind == "response" or (kind == "request" and "id" not in members):
        logger.warning("Dropped a %s the server cannot read (%s)", kind if "id" in members else "notification",
                       reason)
        return None
    request_id = _request_id(members.get("id"))
    if request_id is None:
        return _error(None, types.INVALID_REQUEST, "Invalid Request: the id must be a string or an integer")
    if kind is None:
        return _error(request_id, types.INVALID_REQUEST, "Invalid Request: it has no method")
    if _small_value(members.get("jsonrpc")) != "2.0":
        return _error(request_id, types.INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    method = _small_value(members["method"])
    if not (isinstance(method, str) and _is_text(method)):
        return _error(request_id, types.INVALID_REQUEST, "Invalid Request: the method must be a string")
    if "params" in members:
        try:  # the params alone, in an envelope as deep as the request's
            types.jsonrpc_message_adapter.validate_json(
                f'{{"jsonrpc":"2.0","id":0,"method":"m","params":{members["params"]}}}', by_name=False)
        except ValidationError as error:
            return _error(request_id, types.INVALID_PARAMS,
                          f"Invalid params: {_reason(error, otherwise='params must be a JSON object')}")
    return _error(request_id, types.INVALID_REQUEST, f"Invalid Request: {reason}")


def _reason(error: ValidationError, otherwise: str = "not a JSON-RPC 2.0 message") -> str:
    """What the SDK's parser (jiter) refused, in plain words; ``otherwise`` for JSON of the wrong shape."""
    first = error.errors()[0]
    if first["type"] != "json_invalid":
        return otherwise
    said = _POSITION.sub("", first["msg"])
    return next((plain for words, plain in _PLAIN_REASONS.items() if words in said), said)


def _json_syntax_error(text: str) -> str | None:
    """Why ``text`` is not JSON; None when it is, or nests too deeply to tell here."""
    try:
        json.loads(text, parse_int=_integer, parse_constant=_not_json)
    except json.JSONDecodeError as error:
        return str(error)
    except RecursionError:
        return None
    return None


def _top_level_members(text: str) -> dict[str, str] | None:
    """The raw text of each member of the JSON object ``text``, found without parsing the values, so however deep
    they nest; None when ``text`` is not an object."""
    skip = json.decoder.WHITESPACE.match
    position = skip(text, 0).end()
    if not text.startswith("{", position):
        return None
    members: dict[str, str] = {}
    position = skip(text, position + 1).end()
    closing = text.startswith("}", position)
    while not closing:
        if not text.startswith('"', position):
            return None
        try:
            key, position = json.decoder.scanstring(text, position + 1)
        except ValueError:
            return None
        position = skip(text, position).end()
        if not text.startswith(":", position):
            return None
        start = skip(text, position + 1).end()
        if (end := _value_end(text, start)) is None:
            return None
        members[key] = text[start:end]
        position = skip(text, end).end()
        closing = text.startswith("}", position)
        if not closing and not text.startswith(",", position):
            return None
        position = skip(text, position + 1).end() if not closing else position
    return members if not text[position + 1:].strip() else None


def _value_end(text: str, start: int) -> int | None:
    if text.startswith(("{", "["), start):
        depth = 0
        for token in _NESTING.finditer(text, start):
            bracket = token.group()
            depth += 1 if bracket in ("{", "[") else -1 if bracket in ("}", "]") else 0
            if depth == 0:
                return token.end()
        return None
    match = (_STRING if text.startswith('"', start) else _SCALAR).match(text, start)
    return match.end() if match else None


def _small_value(raw: str | None) -> Any:
    """A member's value when it is a scalar or shallow (an id, a method name); ``_UNREADABLE`` otherwise."""
    if raw is None:
        return None
    try:
        return json.loads(raw, parse_int=_integer, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return _UNREADABLE


def _request_id(raw: str | None) -> int | str | None:
    """The id to answer with: a string of Unicode text, or an integer (JSON-RPC allows no other, MCP no null)."""
    value = _small_value(raw)
    if isinstance(value, str) and _is_text(value):
        return value
    return value if type(value) is int else None


def _integer(digits: str) -> int | object:
    try:
        return int(digits)
    except ValueError:
        return _UNREADABLE


def _not_json(constant: str) -> None:
    raise json.JSONDecodeError(f"{constant} is not JSON", constant, 0)


def _is_text(value: str) -> bool:
    """Whether ``value`` is Unicode text (an unpaired surrogate escape decodes to a string that is not)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _error(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
