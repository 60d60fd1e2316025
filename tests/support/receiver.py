"""A webhook receiver on loopback that checks every delivery with ``standardwebhooks``.

Each endpoint is a path (``/<name>``) with the secret its creation returned. The receiver
records every request (verified or not) and answers as its ``mode`` says: ``ok`` (204),
``500``, ``slow`` (waits ``delay`` seconds, then 204), ``redirect`` (302 to ``/elsewhere``) or
``huge`` (a 2xx with a body far over the sender's cap). :meth:`down` closes its socket
(connection refused) and :meth:`up` listens again on the same port.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError

from adjudge.webhooks import Sender
from support.harness import Harness


@dataclass
class Received:
    """One request as it arrived, and whether its signature verified."""

    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool
    payload: Any = None

    @property
    def msg_id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    """The loopback receiver; ``secrets`` maps a path to its endpoint's secret."""

    mode: str = "ok"
    delay: float = 0.0
    secrets: dict[str, str] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def verified(self, name: str | None = None) -> list[Received]:
        """The requests whose signature verified (for one endpoint, or all)."""
        with self._lock:
            return [
                r for r in self.received if r.verified and (name is None or r.path == f"/{name}")
            ]

    def up(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(size)
                headers = {k.lower(): v for k, v in self.headers.items()}
                secret = receiver.secrets.get(self.path)
                verified, payload = False, None
                if secret is not None:
                    try:
                        payload = Webhook(secret).verify(body, headers)
                        verified = True
                    except WebhookVerificationError:
                        pass
                with receiver._lock:
                    receiver.received.append(Received(self.path, headers, body, verified, payload))
                mode = receiver.mode
                if mode == "slow":
                    time.sleep(receiver.delay)
                if mode == "500":
                    self._answer(500, b"receiver broke")
                elif mode == "redirect":
                    self.send_response(302)
                    self.send_header("location", f"http://127.0.0.1:{receiver.port}/elsewhere")
                    self.send_header("content-length", "0")
                    self.end_headers()
                elif mode == "huge":
                    self._answer(200, b"x" * (1024 * 1024))
                else:
                    if receiver.delay and mode == "ok":
                        time.sleep(receiver.delay)
                    self._answer(204, b"")

            def _answer(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the sender gave up (a time-out, a size cap)

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # a whole batch connects at once

        self._server = Server(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def down(self) -> None:
        """Stop listening: connecting is refused until :meth:`up`."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def endpoint(
    h: Harness, receiver: Receiver, who: str, name: str | None = None, **fields: Any
) -> Any:
    """Register ``who``'s endpoint at the receiver's ``/name`` and tell the receiver its
    secret; returns the creation's answer."""
    name = name or who
    made = h.ok(who, "POST", "/webhooks/endpoints", {"url": receiver.url(name), **fields})
    receiver.secrets["/" + name] = made["secret"]
    return made


def drain(h: Harness, sender: Sender) -> int:
    """Run delivery passes until nothing is due; returns how many attempts were made."""
    total = 0
    while n := h.app.webhooks.deliver_due(sender):
        total += n
    return total
