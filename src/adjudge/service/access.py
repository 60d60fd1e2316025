"""One structured access-log line per request, and the request id every answer carries.

Each HTTP request gets a request id: the client's ``X-Request-Id`` when it sends a sane one
(1-128 characters of letters, digits and ``. _ : / + = -``), else a fresh one (32 hex
characters). The id is sent back as ``X-Request-Id`` on every response, put in every error
body (``{"error": {"code", "message", "request_id"}}``), and logged with the request as one
JSON line on the ``adjudge.access`` logger::

    {"time": "2026-12-01T10:28:20.333Z", "method": "POST", "path": "/api/v1/tasks/t/finalize",
     "route": "/api/v1/tasks/{task_id}/finalize", "status": 200, "duration_ms": 3.41,
     "request_id": "5f0c…", "account": "ann"}

``route`` is the route template matched (``unmatched`` for none), as ``GET /metrics`` labels
it. ``account`` is the authenticated caller's id (null before authentication, or without a key).
The query string is not logged: cursors and filters say nothing an operator needs, and a query
is where a careless client would put a secret.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adjudge.app.metrics import METRICS

#: The logger the access lines go to (``adjudge serve`` writes it to standard error).
log = logging.getLogger("adjudge.access")

#: The request id of the request being answered (None outside a request).
REQUEST_ID: ContextVar[str | None] = ContextVar("adjudge_request_id", default=None)

#: What a client-sent request id may be: short, and nothing a log reader could misread.
_SANE = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")
#: Where the caller's account id is left for the access line (``request.state.account_id``).
ACCOUNT_KEY = "account_id"


def request_id_from(header: bytes | None) -> str:
    """The client's id when it is sane, else a fresh one."""
    if header is not None:
        try:
            text = header.decode("ascii")
        except UnicodeDecodeError:
            text = ""
        if _SANE.fullmatch(text):
            return text
    return uuid.uuid4().hex


def current_request_id() -> str:
    """The id of the request being answered (a fresh one outside any request)."""
    return REQUEST_ID.get() or uuid.uuid4().hex


class RequestLog:
    """The outermost middleware: assigns the request id, sends it back, logs the request.

    A plain ASGI middleware (no per-request task). A route that crashes is answered here with
    ``500 INTERNAL_ERROR`` in the error shape (with its request id) before the exception goes on
    to the server's own error log.
    """

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        started = time.perf_counter()
        sent = None
        for name, value in scope.get("headers", ()):
            if name == b"x-request-id":
                sent = value
                break
        rid = request_id_from(sent)
        token = REQUEST_ID.set(rid)
        state: dict[str, Any] = scope.setdefault("state", {})
        status: int | None = None

        async def with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", rid.encode("ascii")))
                message["headers"] = headers
            await send(message)

        try:
            await self.inner(scope, receive, with_id)
        except Exception:
            if status is None:
                await _crashed(rid, with_id)
            raise
        finally:
            REQUEST_ID.reset(token)
            route = route_of(scope)
            if log.isEnabledFor(logging.INFO):  # first: nothing after it keeps a request unlogged
                log.info(_line(scope, route, status or 500, started, rid, state.get(ACCOUNT_KEY)))
            METRICS.request(
                scope.get("method", ""), route, status or 500, time.perf_counter() - started, rid
            )


async def _crashed(rid: str, send: Send) -> None:
    body = json.dumps(
        {
            "error": {
                "code": "INTERNAL_ERROR",
                "message": "The service failed; nothing was written.",
                "request_id": rid,
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 500,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def route_of(scope: Scope) -> str:
    """The route template a request matched (``/api/v1/tasks/{task_id}``), or ``unmatched``:
    never the path itself, so a metric's labels stay few whatever clients send."""
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else "unmatched"


def _line(scope: Scope, route: str, status: int, started: float, rid: str, account: object) -> str:
    now = datetime.now(UTC)
    return json.dumps(
        {
            "time": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "method": scope.get("method"),
            "path": scope.get("path"),
            "route": route,
            "status": status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
            "request_id": rid,
            "account": account if isinstance(account, str) else None,
        },
        ensure_ascii=False,
    )


class JsonLines(logging.Formatter):
    """Writes a record's message as it is: the access lines are already JSON."""

    def format(self, record: logging.LogRecord) -> str:
        """The message alone."""
        return record.getMessage()


def enable(stream: Any = None) -> logging.Handler:
    """Send the access lines to ``stream`` (standard error by default), one JSON line each."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    return handler
