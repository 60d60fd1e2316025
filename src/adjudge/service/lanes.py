"""The hot routes' lanes past the framework's layers.

Two requests make most of a busy service's traffic: the MCP endpoint's ``POST /`` (every paid
call through the gateway) and ``POST /api/v1/tasks/{task_id}/finalize`` (every auto check). The
framework's layers around a route — its error and telemetry middlewares, the exception handlers,
the exit stack, matching the path against every route, solving the dependencies — are a fifth to
a quarter of such a request's CPU, and do nothing for them that the lane does not do itself:
authenticate, answer a refusal in the error shape, name the route for the metrics and the log.
What every answer of this service carries (the request id and its log line, the security
headers, the body cap) wraps the lanes as it wraps the stack.

A lane takes a request only when it can answer it exactly as the stack would; anything else (a
NUL in the path or query, an ``Idempotency-Key`` over its length) goes through the whole stack,
which refuses it as it always has. ``tests/service/test_lanes.py`` sends the same requests both
ways and compares the answers.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi.routing import APIRoute
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from adjudge.app import App
from adjudge.errors import Error
from adjudge.service import errors, turns
from adjudge.service.access import ACCOUNT_KEY
from adjudge.service.deps import authenticate, bearer
from adjudge.service.tasks import finalized

#: A finalize's path, around its task id.
_TASKS, _FINALIZE = "/api/v1/tasks/", "/finalize"
#: The longest Idempotency-Key the route takes (its header's ``max_length``).
MAX_KEY_CHARS = 255


class Lanes:
    """Sends ``POST /`` down the MCP lane and a finalize down its own; the rest to the stack.

    ``kept`` wraps each lane in what every answer carries (see the module)."""

    def __init__(
        self,
        stack: ASGIApp,
        mcp_route: Route,
        finalize_route: APIRoute,
        kept: Callable[[ASGIApp], ASGIApp],
    ) -> None:
        self.stack = stack
        self.mcp_route, self.mcp = mcp_route, kept(mcp_route.app)
        self.finalize_route, self.finalize = finalize_route, kept(finalize)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            if scope["path"] == "/":
                scope["route"] = self.mcp_route  # the metrics and the access log name the route
                await self.mcp(scope, receive, send)
                return
            task_id = _finalize_target(scope)
            if task_id is not None:
                scope["route"] = self.finalize_route
                scope["path_params"] = {"task_id": task_id}
                await self.finalize(scope, receive, send)
                return
        await self.stack(scope, receive, send)


def _finalize_target(scope: Scope) -> str | None:
    """The task id of a finalize the lane answers as the stack would, or None."""
    path: str = scope["path"]
    if not (path.startswith(_TASKS) and path.endswith(_FINALIZE)):
        return None
    task_id = path[len(_TASKS) : -len(_FINALIZE)]
    if not task_id or "/" in task_id or "\x00" in path or b"%00" in scope["query_string"]:
        return None
    for name, value in scope["headers"]:
        if name == b"idempotency-key" and len(value) > MAX_KEY_CHARS:
            return None
    return task_id


async def finalize(scope: Scope, receive: Receive, send: Send) -> None:
    """The finalize route's answer (:func:`adjudge.service.tasks.finalized`), with the caller
    found as its dependencies find it: the first ``Authorization`` header, a ``Bearer`` token
    or none at all."""
    app = scope["app"].state.adjudge
    assert isinstance(app, App)
    authorization = key = None
    for name, value in scope["headers"]:
        if name == b"authorization" and authorization is None:
            authorization = value.decode("latin-1")
        elif name == b"idempotency-key" and key is None:
            key = value.decode("latin-1")
    try:
        who = await authenticate(app, bearer(authorization), scope.get("client"))
        scope.setdefault("state", {})[ACCOUNT_KEY] = who.id  # for the access log line
        turns.serve_as(who.id)
        response = await finalized(app, who, scope["path_params"]["task_id"], key)
    except Error as exc:
        response = errors.reply(exc)
    await response(scope, receive, send)
