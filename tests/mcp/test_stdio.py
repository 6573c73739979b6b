"""Every request over stdio gets a JSON-RPC answer with the right code, however malformed: through a real server
process (what a client sees), and through ``check_line`` (what decides)."""

import base64
import json
import queue
import subprocess
import sys
import threading

import mcp_types as types
import pytest

from tests.mcp.servers import TREASURE_STDIO

ANSWER_SECONDS = 20  # generous: the machine may be busy


def _call(request_id, arguments):
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "move", "arguments": arguments}}


def _line(message) -> bytes:
    return json.dumps(message).encode()


DEEP = "[" * 3000 + "]" * 3000
DEEP_CURSOR = base64.urlsafe_b64encode(DEEP.encode()).decode()

# (line, the id of the answer, its code)
REQUESTS = {
    "arguments 3,000 levels deep": (_line(_call(2, {"direction": "north"})).replace(b'"north"', DEEP.encode()),
                                    2, types.INVALID_PARAMS),
    "an unpaired surrogate escape": (_line(_call(3, {"direction": "north"})).replace(b"north", b"\\ud800"),
                                     3, types.INVALID_PARAMS),
    "a 5,000-digit integer": (_line(_call(4, {"direction": "north"})).replace(b'"north"', b"9" * 5000),
                              4, types.INVALID_PARAMS),
    "params that are a list": (b'{"jsonrpc": "2.0", "id": "five", "method": "tools/list", "params": [1]}',
                               "five", types.INVALID_PARAMS),
    "an object id": (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', None, types.INVALID_REQUEST),
    "a boolean id": (b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', None, types.INVALID_REQUEST),
    "a fractional id": (b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', None, types.INVALID_REQUEST),
    "a null id": (b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', None, types.INVALID_REQUEST),
    "an id 3,000 levels deep": (f'{{"jsonrpc": "2.0", "id": {DEEP}, "method": "tools/list"}}'.encode(),
                                None, types.INVALID_REQUEST),
    "no method": (b'{"jsonrpc": "2.0", "id": 7}', 7, types.INVALID_REQUEST),
    "JSON-RPC 1.0": (b'{"jsonrpc": "1.0", "id": 8, "method": "tools/list"}', 8, types.INVALID_REQUEST),
    "a deep member besides params": (f'{{"jsonrpc": "2.0", "id": 9, "method": "tools/list", "x": {DEEP}}}'.encode(),
                                     9, types.INVALID_REQUEST),
    "a batch": (b'[{"jsonrpc": "2.0", "id": 10, "method": "tools/list"}]', None, types.INVALID_REQUEST),
    "a number": (b"42", None, types.INVALID_REQUEST),
    "garbage": (b"this is not JSON", None, types.PARSE_ERROR),
    "broken JSON": (b'{"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {"a": ]}}', None,
                    types.PARSE_ERROR),
    "bytes that are not UTF-8": (b'{"jsonrpc": "2.0", "id": 13, "method": "\xff\xfe"}', None, types.PARSE_ERROR),
}

# requests the SDK reads, and the server's handler refuses
REFUSED_BY_THE_SERVER = {
    "a cursor 3,000 levels deep": (_line({"jsonrpc": "2.0", "id": 6, "method": "tools/list",
                                          "params": {"cursor": DEEP_CURSOR}}), 6, types.INVALID_PARAMS),
    "a cursor of a megabyte": (_line({"jsonrpc": "2.0", "id": 6, "method": "tools/list",
                                      "params": {"cursor": "A" * 2**20}}), 6, types.INVALID_PARAMS),
}

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


class RawStdioClient:
    """Writes lines to a stdio server process and reads its answers, with a timeout."""

    def __init__(self, argv):
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._answers: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda: [self._answers.put(line) for line in self.process.stdout], daemon=True).start()

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict:
        try:
            return json.loads(self._answers.get(timeout=ANSWER_SECONDS))
        except queue.Empty:
            pytest.fail(f"no answer within {ANSWER_SECONDS}s")

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def client():
    """``toolsel mcp serve treasure_hunt`` over stdio, past the handshake."""
    raw = RawStdioClient(TREASURE_STDIO)
    raw.send(_line(INITIALIZE))
    assert raw.answer()["id"] == 1
    raw.send(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    yield raw
    raw.close()


@pytest.mark.parametrize(("line", "answer_id", "code"), [*REQUESTS.values(), *REFUSED_BY_THE_SERVER.values()],
                         ids=[*REQUESTS, *REFUSED_BY_THE_SERVER])
def test_every_request_gets_an_answer_with_the_right_code(client, line, answer_id, code):
    client.send(line)
    answer = client.answer()
    assert (answer["id"], answer["error"]["code"]) == (answer_id, code), answer


def test_a_notification_the_server_cannot_read_gets_no_answer_and_the_server_goes_on(client):
    client.send(b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": ' + DEEP.encode() + b"}")
    client.send(b"")  # a blank line is no message
    client.send(_line({"jsonrpc": "2.0", "id": 20, "method": "tools/list"}))
    answer = client.answer()
    assert answer["id"] == 20 and len(answer["result"]["tools"]) == 5  # the first page


@pytest.mark.parametrize(("line", "answer_id", "code"), REQUESTS.values(), ids=REQUESTS.keys())
def test_check_line_answers_what_the_sdk_would_drop(line, answer_id, code):
    from tool_selection.mcp.stdio import check_line

    error = check_line(line)
    assert isinstance(error, types.JSONRPCError)
    assert (error.id, error.error.code) == (answer_id, code)
    json.loads(error.model_dump_json())  # what the transport writes


def test_check_line_passes_what_the_sdk_reads_and_drops_what_gets_no_answer():
    from tool_selection.mcp.stdio import check_line

    request = _line(_call(1, {"direction": "north"}))
    assert check_line(request) == request.decode()
    assert check_line(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}') is not None
    assert check_line(b"   ") is None
    assert check_line(b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": 5}') is None
    assert check_line(b'{"jsonrpc": "2.0", "id": 5, "result": ' + DEEP.encode() + b"}") is None  # a response


def test_the_errors_name_the_problem():
    from tool_selection.mcp.stdio import check_line

    messages = {name: check_line(line).error.message for name, (line, _, _) in REQUESTS.items()}
    assert messages["arguments 3,000 levels deep"] == "Invalid params: they nest deeper than the server's JSON parser reads"
    assert messages["an unpaired surrogate escape"] == ("Invalid params: a string holds an unpaired surrogate escape, "
                                                        "which is not Unicode text")
    assert messages["a 5,000-digit integer"] == ("Invalid params: a number has more digits than the server's JSON "
                                                 "parser reads")
    assert messages["an object id"] == "Invalid Request: the id must be a string or an integer"
    assert messages["garbage"] == "Parse error: Expecting value: line 1 column 1 (char 0)"


def test_while_serving_a_read_of_stdin_gets_eof_not_the_clients_requests():
    """Tools and their child processes read fd 0: it points at the null device while the checked reader has the pipe."""
    script = ("import os, stat; from tool_selection.mcp.stdio import _claimed_stdin\n"
              "with _claimed_stdin() as wire:\n"
              "    print(repr(os.read(0, 100)), repr(wire.readline()))\n"
              "print(stat.S_ISFIFO(os.fstat(0).st_mode))\n")  # the pipe is fd 0 again afterwards
    done = subprocess.run([sys.executable, "-c", script], input=b"first line\nsecond line\n", capture_output=True,
                          timeout=60)
    assert done.stdout.decode().splitlines() == ["b'' b'first line\\n'", "True"], done.stderr
