"""A loopback Anthropic Messages API server that answers from a script of ``tool_use`` turns.

The one stand-in of the agent-tool tests (the model); the ``anthropic`` client, its HTTP and the
tool are real. Each scripted turn is a list of tool inputs (one ``tool_use`` block each, for the
``computer`` tool) or a string (a final text answer); when the script runs out the model says
"done". Every request body is kept in ``requests``. Point a client at it with
``base_url=stub.url`` (the computer-use demo's loop reads ``$ANTHROPIC_BASE_URL``).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def message(turn: Any, number: int) -> dict[str, Any]:
    """A Messages API response for one scripted turn."""
    if isinstance(turn, str):
        content: list[dict[str, Any]] = [{"type": "text", "text": turn}]
        stop = "end_turn"
    else:
        content = [
            {
                "type": "tool_use",
                "id": f"toolu_{number}_{i}",
                "name": "computer",
                "input": tool_input,
            }
            for i, tool_input in enumerate(turn)
        ]
        stop = "tool_use"
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": "stub",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


class StubMessages:
    """``with StubMessages(script) as stub:`` -> ``stub.url`` answers ``POST /v1/messages``."""

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                turn = stub.script.pop(0) if stub.script else "done"
                payload = json.dumps(message(turn, len(stub.requests))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> StubMessages:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
