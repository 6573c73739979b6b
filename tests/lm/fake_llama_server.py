"""A stand-in for llama-server in tests: takes its command line, answers /health, /v1/models and
/v1/chat/completions. Its chat answer calls the first tool offered whose name has a word of the request
("weather in Oslo?" -> get_weather), its first required argument set to the request's last word (city="Oslo"),
or says "no tool" when none fits. ``FAKE_SERVER_MODE``: ``slow`` never becomes healthy, ``crash`` exits at start,
``die-after=N`` exits after N chat answers. ``FAKE_SERVER_ANSWER``: a fixed answer to every chat request instead, as
JSON: the assistant message, or ``{"status": CODE, "error": MESSAGE}`` for an error response."""

from __future__ import annotations

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = os.environ.get("FAKE_SERVER_MODE", "")
ANSWER = json.loads(os.environ.get("FAKE_SERVER_ANSWER") or "null")
ANSWERED = 0


class Handler(BaseHTTPRequestHandler):
    alias = "fake"

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(503 if MODE == "slow" else 200, {"status": "loading" if MODE == "slow" else "ok"})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": self.alias, "object": "model"}]})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        global ANSWERED
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        tools = body.get("tools") or []
        request = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        words = set(request.lower().rstrip("?").split())
        fitting = [t["function"] for t in tools if words & set(t["function"]["name"].split("_"))]
        if ANSWER is not None and "status" in ANSWER:
            self._send(ANSWER["status"], {"error": {"code": ANSWER["status"], "message": ANSWER["error"],
                                                    "type": "server_error"}})
            return
        if ANSWER is not None:
            message = {"role": "assistant", "content": None, **ANSWER}
        elif fitting:
            function = fitting[0]
            required = function.get("parameters", {}).get("required") or []
            arguments = {required[0]: request.rstrip("?").split()[-1]} if required else {}
            call = {"id": "call0", "type": "function",
                    "function": {"name": function["name"], "arguments": json.dumps(arguments)}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": "no tool"}
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": self.alias,
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
        ANSWERED += 1
        if MODE.startswith("die-after=") and ANSWERED >= int(MODE.split("=")[1]):
            os._exit(3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--alias", default="fake")
    args, _ = parser.parse_known_args()
    if MODE == "crash":
        print("error: cannot load model", file=sys.stderr)
        sys.exit(1)
    Handler.alias = args.alias
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
