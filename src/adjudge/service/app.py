"""The HTTP service: thin routes under ``/api/v1`` over the use cases (:class:`adjudge.app.App`).

Every route but ``/health`` (served at the root as well, where load balancers probe by default)
needs ``Authorization: Bearer <API key>``. A request body is capped
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
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from prometheus_client.exposition import choose_encoder
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import adjudge
from adjudge import web
from adjudge.app import App
from adjudge.service import (
    accounts,
    calls,
    criteria,
    dashboards,
    docs,
    errors,
    gateway,
    receipts,
    reviews,
    tasks,
    turns,
    webhooks,
)
from adjudge.service.access import RequestLog
from adjudge.service.deps import Caller, FastJSONResponse, Use, router
from adjudge.service.headers import API_POLICY, COMMON_HEADERS, NO_STORE, UI_POLICY
from adjudge.service.ingress import BodyCap
from adjudge.service.lanes import Lanes
from adjudge.service.mcp import McpEndpoint

#: The largest request body read, in bytes: a 200,000-character result fully escaped as
#: ``\uXXXX`` surrogate pairs fits, and nothing much larger.
MAX_BODY_BYTES = 4 * 1024 * 1024

health_routes = router()


@health_routes.get("/health", tags=["service"])
def health(*, app: Use) -> dict[str, Any]:
    """Liveness, the database kind, and the chain head."""
    return app.health()


#: The same probe at ``/health``, outside ``/api/v1``: the path a load balancer or an
#: orchestrator asks by default, so an operator need not configure one.
root_health = APIRouter(default_response_class=FastJSONResponse)
root_health.add_api_route("/health", health, methods=["GET"], include_in_schema=False)


def metrics(*, request: Request, who: Caller, app: Use) -> Response:
    """The Prometheus exposition (an admin's key): the text format, or OpenMetrics with the
    request id of each latency bucket's exemplar when the scraper asks for it."""
    registry = app.metrics(who)
    encode, content_type = choose_encoder(request.headers.get("accept", ""))
    return Response(encode(registry), media_type=content_type)


#: ``GET /metrics`` at the root, where a Prometheus scrape config looks by default.
root_metrics = APIRouter(default_response_class=FastJSONResponse)
root_metrics.add_api_route("/metrics", metrics, methods=["GET"], include_in_schema=False)


class SecurityHeaders:
    """Adds the security headers to every HTTP response (a plain ASGI middleware: no
    per-request task or thread, unlike Starlette's ``BaseHTTPMiddleware``)."""

    def __init__(self, inner: ASGIApp, docs_policy: bytes = API_POLICY) -> None:
        self.inner = inner
        self.docs_policy = docs_policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        path = scope.get("path", "")
        stored = path.startswith(("/ui", docs.DOCS_PATH))  # the same files for everyone
        if path.startswith("/ui"):
            policy = UI_POLICY
        elif path.startswith(docs.DOCS_PATH):
            policy = self.docs_policy
        else:
            policy = API_POLICY

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers.extend(h for h in COMMON_HEADERS if h[0] not in names)
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", policy))
                if not stored and b"cache-control" not in names:
                    headers.append(NO_STORE)
                message["headers"] = headers
            await send(message)

        await self.inner(scope, receive, with_headers)


class _BodyCap(BodyCap):
    """The edge's body checks, whose refusals carry the request id like every other."""

    def shape(self, code: str, message: str) -> dict[str, Any]:
        """:func:`errors.body`: the refusal with its request id."""
        return errors.body(code, message)


class _Service(FastAPI):
    """The application, whose hot requests take lanes of their own past the framework
    (:mod:`adjudge.service.lanes`): the MCP endpoint's ``POST /`` and a task's finalize. Each
    lane keeps what every answer of this service carries (the request id, its log line and
    metrics, the security headers, the body cap); any other request goes through the whole
    stack. With ``lanes`` off, every request does (kept to compare the two)."""

    mcp_route: Route | None = None
    finalize_route: APIRoute | None = None
    lanes: bool = True

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        if not self.lanes or self.mcp_route is None or self.finalize_route is None:
            return stack

        def kept(inner: ASGIApp) -> ASGIApp:
            return RequestLog(SecurityHeaders(_BodyCap(inner, limit=MAX_BODY_BYTES)))

        return Lanes(stack, self.mcp_route, self.finalize_route, kept)

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            self.openapi_schema = errors.document_refusals(super().openapi())
        return self.openapi_schema


def _declared(api: FastAPI, routes: APIRouter) -> None:
    """Serve ``routes`` as they were declared. FastAPI builds an included router's routes anew
    for each application, at its first request: every parameter's validator again, 50-150 ms
    an application (the tests make one for each of some thousands of tests). These routers
    add at their inclusion nothing a route lacks (no prefix, tags, dependencies or responses
    of the inclusion's own; the routers name the application's answer class; and nothing
    overrides a dependency), so the routes their declarations built serve as they are."""
    api.router.routes.extend(routes.routes)


def create_app(use_cases: App, *, threads: int | None = None, lanes: bool = True) -> FastAPI:
    """The FastAPI application over ``use_cases``.

    ``threads`` caps the worker threads that run the (blocking) routes; fewer threads contend
    less for the interpreter and, on SQLite, for the one write lock. ``lanes`` sends the hot
    requests past the framework's layers (:mod:`adjudge.service.lanes`).
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if threads is not None:
            anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        turns.install()
        yield
        await use_cases.gateway.aclose()  # this loop's connections to providers

    api = _Service(
        lifespan=lifespan,
        title="adjudge",
        version=adjudge.__version__,
        description="Post paid tasks, judge results, move escrowed money, and prove every verdict.",
        # /docs is served from local assets (adjudge.service.docs); ReDoc would need a CDN.
        docs_url=None,
        redoc_url=None,
        default_response_class=FastJSONResponse,
    )
    api.state.adjudge = use_cases
    errors.install(api)
    for module in (
        root_health,
        root_metrics,
        health_routes,
        accounts.routes,
        tasks.routes,
        criteria.routes,
        receipts.routes,
        reviews.routes,
        dashboards.routes,
        gateway.routes,  # before calls: /tools/callable is not /tools/{tool}
        calls.routes,
        gateway.public,
    ):
        _declared(api, module)
    docs_policy = docs.install(api)
    _declared(api, webhooks.routes)
    api.mount("/ui", StaticFiles(directory=web.STATIC, html=True), name="ui")
    # `/` is the MCP endpoint (the goassay client accepts only a few paths, `/` first); a
    # browser's GET still goes to the web UI.
    mcp = Route("/", McpEndpoint(), methods=["GET", "POST", "DELETE"], include_in_schema=False)
    api.router.routes.insert(0, mcp)
    api.mcp_route = mcp
    api.finalize_route = next(
        r
        for r in tasks.routes.routes
        if isinstance(r, APIRoute) and r.path == "/api/v1/tasks/{task_id}/finalize"
    )
    api.lanes = lanes

    api.add_middleware(_BodyCap, limit=MAX_BODY_BYTES)
    api.add_middleware(SecurityHeaders, docs_policy=docs_policy)
    # Outermost: every answer, a 413 and a crash included, has its request id and log line.
    api.add_middleware(RequestLog)
    return api
