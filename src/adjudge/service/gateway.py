"""Gateway routes: callable tools, provider credentials, forwarded calls, the signing keys'
JWKS, and the receipt look-up the goassay client makes (``{data: …}``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, StrictBool, StrictInt

from adjudge.app.receipts import moment
from adjudge.errors import Error
from adjudge.gateway import JWKS_PATH
from adjudge.service.deps import (
    Caller,
    FastJSONResponse,
    IdemKey,
    Use,
    WholeNumber,
    bearer,
    reply,
    router,
)
from adjudge.service.ingress import StrictRoute

routes = router()
#: The JWKS and the client's REST side live outside /api/v1 (strict as the rest: a NUL in a
#: receipt's id was PostgreSQL's refusal, a 503).
public = APIRouter(default_response_class=FastJSONResponse, route_class=StrictRoute)


class NewCallableTool(BaseModel):
    """A callable tool document (see docs/gateway.md)."""

    tool: dict[str, Any]


class OpenApiImport(BaseModel):
    """One operation of an OpenAPI 3.0/3.1 document, made into a tool."""

    openapi: dict[str, Any]
    price: dict[str, Any]
    operation: str | None = Field(default=None, max_length=200)
    method: str | None = Field(default=None, max_length=10)
    path: str | None = Field(default=None, max_length=2000)
    base_url: str | None = Field(default=None, max_length=2000)
    name: str | None = Field(default=None, max_length=128)
    policy: dict[str, Any] | None = None


class McpImport(BaseModel):
    """An MCP tool definition and the HTTP endpoint that serves it, made into a tool."""

    definition: dict[str, Any]
    base_url: str = Field(max_length=2000)
    price: dict[str, Any]
    method: str = Field(default="POST", max_length=10)
    path: str = Field(default="", max_length=2000)
    policy: dict[str, Any] | None = None


class Credential(BaseModel):
    """The header and secret the gateway sends to a provider not behind signature checks."""

    header: str = Field(min_length=1, max_length=128)
    secret: str = Field(min_length=1, max_length=4096)


class GatewayCall(BaseModel):
    """A tool to call through the gateway, with its arguments, and optionally the most the
    caller accepts to pay (refused with ``PAYMENT_PRICE_ABOVE_MAXIMUM`` above it, before the
    provider is called and with nothing charged)."""

    tool: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] = Field(default_factory=dict)
    max_price_minor: StrictInt | None = Field(
        default=None,
        ge=0,
        le=2**63 - 1,
        description="The most this call may cost, in the ledger's minor units (250000 is "
        "0.25 USDC).",
    )


@routes.post("/tools/callable", status_code=201, tags=["gateway"])
def register_callable(
    *, body: NewCallableTool, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """A provider registers a callable tool: endpoint, input schema, contract, price, policy."""
    return reply(app.tools.register(who, body.tool, key=key), 201)


@routes.post("/tools/import/openapi", status_code=201, tags=["gateway"])
def import_openapi(
    *, body: OpenApiImport, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """A provider makes a callable tool from one operation of its OpenAPI document."""
    answer = app.tools.import_openapi(
        who,
        body.openapi,
        operation=body.operation,
        method=body.method,
        path=body.path,
        price=body.price,
        base_url=body.base_url,
        name=body.name,
        policy=body.policy,
        key=key,
    )
    return reply(answer, 201)


@routes.post("/tools/import/mcp", status_code=201, tags=["gateway"])
def import_mcp(*, body: McpImport, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """A provider makes a callable tool from an MCP tool definition and its endpoint."""
    answer = app.tools.import_mcp(
        who,
        body.definition,
        base_url=body.base_url,
        price=body.price,
        method=body.method,
        path=body.path,
        policy=body.policy,
        key=key,
    )
    return reply(answer, 201)


@routes.get("/tools", tags=["gateway"])
def list_tools(
    *,
    who: Caller,
    app: Use,
    query: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=200), WholeNumber] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:
    """Callable tools by name, with their price and MCP definition."""
    return app.tools.search(query=query, limit=limit, cursor=cursor)


@routes.get("/tools/{name}", tags=["gateway"])
def get_tool(*, name: str, who: Caller, app: Use) -> dict[str, Any]:
    """One callable tool: how it is called and judged (its address only for its provider and
    admins)."""
    return app.tools.get(name, who)


@routes.put("/providers/me/credential", tags=["gateway"])
def set_credential(*, body: Credential, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """A provider gives the gateway the credential to call it with; it is stored encrypted and
    never returned."""
    return reply(app.tools.set_credential(who, body.header, body.secret, key=key))


@routes.post("/gateway/calls", tags=["gateway"])
async def call(*, body: GatewayCall, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """Call a tool through the gateway: forwarded, verified, signed and settled; a retry with
    the same Idempotency-Key replays the answer without calling the provider again."""
    answer = await app.gateway.call_async(
        who, body.tool, body.arguments, key=key, max_price=body.max_price_minor
    )
    return reply(answer)


@routes.get("/gateway/calls", tags=["gateway"])
def list_calls(
    *,
    who: Caller,
    app: Use,
    tool: Annotated[str | None, Query(max_length=128)] = None,
    provider: Annotated[str | None, Query(max_length=64)] = None,
    verdict: Annotated[str | None, Query(max_length=32)] = None,
    since: Annotated[str | None, Query(max_length=40)] = None,
    until: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=200), WholeNumber] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:
    """Forwarded calls newest first (an admin's all; anyone else's own). ``since`` and
    ``until``: ISO dates or times of the call's start, ``until`` exclusive (a bare date:
    through that day)."""
    return app.gateway.list_calls(
        who,
        tool=tool,
        provider=provider,
        verdict=verdict,
        since=moment(since, "since", end_of_day=False),
        until=moment(until, "until", end_of_day=True),
        limit=limit,
        cursor=cursor,
    )


@routes.get("/gateway/calls/{call_id}", tags=["gateway"])
def get_call(*, call_id: str, who: Caller, app: Use) -> dict[str, Any]:
    """A forwarded call with its answer and every check row."""
    return app.gateway.get_call(who, call_id)


@routes.get("/meaning/judgments", tags=["gateway"])
def key_judgments_pending(*, who: Caller, app: Use) -> dict[str, Any]:
    """The paid calls waiting for a meaning judgment signed by one of your verifier keys."""
    return app.gateway.key_judgments_pending(who)


@routes.post("/meaning/judgments/run", tags=["gateway"])
def run_judgments(*, who: Caller, app: Use) -> dict[str, Any]:
    """Judge the calls waiting for their meaning judges now, one bounded pass (admins)."""
    return app.gateway.run_judgments(who)


class KeyJudgmentIn(BaseModel):
    """A verifier key's signed meaning judgment of one call."""

    judge_key: str = Field(max_length=80)
    response_digest: str = Field(max_length=80)
    conflict: StrictBool
    reason: str = Field(default="", max_length=2000)
    citations: list[dict[str, str]] = Field(default_factory=list, max_length=20)
    signature: str = Field(max_length=200)
    public_key: str = Field(max_length=100)


@routes.post("/meaning/judgments/{call_id}", status_code=201, tags=["gateway"])
def submit_key_judgment(
    *, call_id: str, body: KeyJudgmentIn, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """Give your verifier key's signed judgment of a call judged after its answer (sent again
    with its Idempotency-Key, answered as the first time)."""
    return reply(app.gateway.submit_key_judgment(who, call_id, body.model_dump(), key=key), 201)


@routes.post("/gateway/keys/rotate", tags=["gateway"])
def rotate_keys(*, who: Caller, app: Use) -> dict[str, Any]:
    """Publish a new signing key; the current ones retire after an overlap (admins)."""
    return app.gateway.rotate_keys(who)


@public.get(JWKS_PATH, include_in_schema=False)
def jwks(request: Request) -> JSONResponse:
    """The gateway's request-signing keys, as providers' verifiers read them."""
    app = request.app.state.adjudge
    return JSONResponse(app.gateway.jwks(), headers={"Cache-Control": "max-age=300"})


@public.get("/assay/v1/receipts/{intent_id}", include_in_schema=False)
def assay_receipt(intent_id: str, request: Request) -> JSONResponse:
    """The goassay client's receipt look-up: a forwarded call's answer, in ``{data: …}``."""
    app = request.app.state.adjudge
    try:
        who = app.accounts.authenticate(bearer(request.headers.get("authorization")))
        found = app.gateway.get_call(who, intent_id)
    except Error as exc:
        from adjudge.service.errors import reply as refusal  # noqa: PLC0415

        return refusal(exc)
    if found["answer"] is None:
        return JSONResponse(
            {
                "error": {
                    "code": "IDEMPOTENCY_IN_PROGRESS",
                    "message": "The call has not ended yet.",
                }
            },
            status_code=409,
        )
    return JSONResponse({"data": found["answer"]})
