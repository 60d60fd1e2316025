"""The HTTP service: thin routes under ``/api/v1`` over the use cases (:class:`adjudge.app.App`).

Every route but ``/health`` needs ``Authorization: Bearer <API key>``. A request body is capped
at :data:`MAX_BODY_BYTES` before anything reads it (``413``, before authentication too) and
parsed strictly as I-JSON (:mod:`adjudge.service.ingress`). State-changing routes honour an
``Idempotency-Key`` header: a retry with the same key and body gets the stored answer (marked
``Idempotent-Replayed: true``) and changes nothing; the same key with another body is refused
with ``IDEMPOTENCY_KEY_REUSED``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import adjudge
from adjudge import web
from adjudge.app import App
from adjudge.service import accounts, calls, errors, receipts, reviews, tasks, webhooks
from adjudge.service.deps import Use, router
from adjudge.service.ingress import BodyCap

#: The largest request body read, in bytes: a 200,000-character result fully escaped as
#: ``\uXXXX`` surrogate pairs fits, and nothing much larger.
MAX_BODY_BYTES = 4 * 1024 * 1024

#: Sent with every response: no MIME sniffing, no framing, no referrer leaving the site.
_COMMON_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]
#: The web UI's policy: its own scripts and styles only, talking to its own origin only.
_UI_POLICY = (
    b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
_API_POLICY = b"default-src 'none'; frame-ancestors 'none'"

health_routes = router()


@health_routes.get("/health", tags=["service"])
def health(*, app: Use) -> dict[str, Any]:
    """Liveness, the database kind, and the chain head."""
    return app.health()


class SecurityHeaders:
    """Adds the security headers to every HTTP response (a plain ASGI middleware: no
    per-request task or thread, unlike Starlette's ``BaseHTTPMiddleware``)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        path = scope.get("path", "")
        policy = _UI_POLICY if path.startswith("/ui") else _API_POLICY

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers.extend(h for h in _COMMON_HEADERS if h[0] not in names)
                if b"content-security-policy" not in names and not path.startswith("/docs"):
                    headers.append((b"content-security-policy", policy))
                message["headers"] = headers
            await send(message)

        await self.inner(scope, receive, with_headers)


def create_app(use_cases: App, *, threads: int | None = None) -> FastAPI:
    """The FastAPI application over ``use_cases``.

    ``threads`` caps the worker threads that run the (blocking) routes; fewer threads contend
    less for the interpreter and, on SQLite, for the one write lock.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if threads is not None:
            anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        yield

    api = FastAPI(
        lifespan=lifespan,
        title="adjudge",
        version=adjudge.__version__,
        description="Post paid tasks, judge results, move escrowed money, and prove every verdict.",
    )
    api.state.adjudge = use_cases
    errors.install(api)
    for module in (health_routes, accounts.routes, tasks.routes, receipts.routes, reviews.routes):
        api.include_router(module)
    api.include_router(calls.routes)
    api.include_router(webhooks.routes)
    api.mount("/ui", StaticFiles(directory=web.STATIC, html=True), name="ui")

    @api.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        """The web UI."""
        return RedirectResponse("/ui/")

    api.add_middleware(BodyCap, limit=MAX_BODY_BYTES)
    api.add_middleware(SecurityHeaders)
    return api
