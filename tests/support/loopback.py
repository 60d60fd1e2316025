"""Loopback servers for tests: a JWKS host, ASGI/WSGI apps under real servers, a raw TCP peer.

Everything binds 127.0.0.1 on a port the OS picks and runs in a daemon thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import uvicorn

from adjudge.gateway import JWKS_PATH, MemoryKeyRing, jwks
from support.live import QuickServer


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class JwksHost:
    """Serves ``jwks(ring.all_keys(), clock())`` at JWKS_PATH; the clock can be moved."""

    ring: MemoryKeyRing
    offset: timedelta = timedelta(0)
    overlap: timedelta = timedelta(hours=1)
    url_base: str = ""
    fetches: int = 0
    _server: ThreadingHTTPServer | None = field(default=None, repr=False)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def url(self, tag: str = "") -> str:
        """The JWKS URL; a different ``tag`` is a different URL, so a verifier caches it apart."""
        return f"{self.url_base}{JWKS_PATH}" + (f"?v={tag}" if tag else "")

    def start(self) -> JwksHost:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != JWKS_PATH:
                    self.send_error(404)
                    return
                host.fetches += 1
                document = jwks(host.ring.all_keys(), host.now(), overlap=host.overlap)
                body = json.dumps(document).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url_base = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def start_wsgi(app: Any, handler: type[WSGIRequestHandler] = QuietHandler) -> WSGIServer:
    """A WSGI app under wsgiref on a loopback port, serving in a thread."""
    server = make_server("127.0.0.1", 0, app, handler_class=handler)
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    return server


def _bound() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class AsgiServer:
    """An ASGI app under uvicorn on a loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        self.sock = _bound()
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self.server = QuickServer(config)
        self.thread = threading.Thread(
            target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True
        )

    def __enter__(self) -> AsgiServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.002)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


class RawUriHandler(QuietHandler):
    """wsgiref, but reporting the raw request target as RAW_URI, as gunicorn does."""

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ["RAW_URI"] = self.path
        return dict(environ)


class RawPeer:
    """A TCP peer that reads one request and then does what ``behave(conn, request)`` says."""

    def __init__(self, behave: Callable[[socket.socket, bytes], None]) -> None:
        self.sock = _bound()
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.behave = behave
        self.requests: list[bytes] = []
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.01)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(rest) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                rest += chunk
            self.requests.append(head + b"\r\n\r\n" + rest)
            self.behave(conn, data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        self._stop = True
        self.thread.join(timeout=2)
        self.sock.close()
