"""A real HTTP server on loopback that answers like an OpenAI-compatible chat model.

``behaviour(request_json) -> (status, body or None, delay seconds)`` decides each answer, so a test
can script passes, fails, garbage, errors and timeouts. Every request is recorded.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Behaviour = Callable[[dict[str, Any]], tuple[int, str, float]]


def completion(content: str) -> str:
    """A chat-completions response body carrying ``content``."""
    return json.dumps(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    )


def user_data(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON object the judge sent as the user message."""
    data: dict[str, Any] = json.loads(request["messages"][1]["content"])
    return data


@contextmanager
def model_server(behaviour: Behaviour) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve on loopback; yields the base URL and the list of recorded requests."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length))
            with lock:
                seen.append(request)
            status, body, delay = behaviour(request)
            time.sleep(delay)
            data = body.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
