"""Webhook routes: an account's endpoints, its delivery log, replays and test events."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from adjudge.app.webhooks import MAX_ENDPOINT_PAGE
from adjudge.service.deps import Caller, IdemKey, Switch, Use, WholeNumber, reply, router

routes = router()
EndpointId = Annotated[str, Path(max_length=40)]
DeliveryId = Annotated[str, Path(max_length=40)]


class NewEndpoint(BaseModel):
    """An endpoint to send this account's events to; its secret is in the answer, once."""

    url: str = Field(
        max_length=2000,
        description="https:// (or http://) URL, no credentials; a public address unless the "
        "operator allows private ones.",
    )
    event_types: list[Annotated[str, Field(max_length=64)]] | None = Field(
        default=None,
        max_length=20,
        description="The event types to send (see docs/webhooks.md); none for all.",
    )
    description: str = Field(default="", max_length=200)


@routes.post("/webhooks/endpoints", status_code=201, tags=["webhooks"])
def create_endpoint(
    *, body: NewEndpoint, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """Register an endpoint. Its `secret` (whsec_…) is returned this once — and again to the
    same caller on a retry with the same Idempotency-Key; no read ever returns it."""
    answer = app.webhooks.create_endpoint(
        who, body.url, event_types=body.event_types, description=body.description, key=key
    )
    return reply(answer, 201)


@routes.get("/webhooks/endpoints", tags=["webhooks"])
def list_endpoints(
    *,
    who: Caller,
    app: Use,
    disabled: Switch = False,
    limit: Annotated[int, Query(ge=1, le=MAX_ENDPOINT_PAGE), WholeNumber] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:
    """The caller's enabled endpoints, oldest first (never their secrets); with
    `disabled=true`, the ones it deleted, newest first, a page at a time (`next_cursor` fetches
    the next)."""
    return app.webhooks.endpoints(who, disabled=disabled, cursor=cursor, limit=limit)


@routes.get("/webhooks/endpoints/{endpoint_id}", tags=["webhooks"])
def get_endpoint(*, endpoint_id: EndpointId, who: Caller, app: Use) -> dict[str, Any]:
    """One of the caller's endpoints."""
    return app.webhooks.endpoint(who, endpoint_id)


@routes.delete("/webhooks/endpoints/{endpoint_id}", tags=["webhooks"])
def delete_endpoint(
    *, endpoint_id: EndpointId, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """Disable an endpoint for good: nothing more is sent to it, its pending deliveries end
    `failed`; it stays listed with its delivery log."""
    return reply(app.webhooks.disable_endpoint(who, endpoint_id, key=key))


@routes.post("/webhooks/endpoints/{endpoint_id}/test", status_code=201, tags=["webhooks"])
def test_endpoint(
    *, endpoint_id: EndpointId, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """Queue a `webhook.test` event for the endpoint; answers its delivery."""
    return reply(app.webhooks.test_endpoint(who, endpoint_id, key=key), 201)


@routes.get("/webhooks/deliveries", tags=["webhooks"])
def list_deliveries(
    *,
    who: Caller,
    app: Use,
    endpoint: Annotated[str | None, Query(max_length=40)] = None,
    status: Annotated[str | None, Query(max_length=16)] = None,
    limit: Annotated[int, Query(ge=1, le=200), WholeNumber] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:
    """The caller's delivery log, newest first: status (`pending`, `delivered`, `failed`),
    attempts, the last status and error, the next attempt. `next_cursor` fetches the next
    page."""
    return app.webhooks.deliveries(
        who, endpoint_id=endpoint, status=status, limit=limit, cursor=cursor
    )


@routes.get("/webhooks/deliveries/{delivery_id}", tags=["webhooks"])
def get_delivery(*, delivery_id: DeliveryId, who: Caller, app: Use) -> dict[str, Any]:
    """One delivery with the event it carries (`payload`)."""
    return app.webhooks.delivery(who, delivery_id)


@routes.post("/webhooks/deliveries/{delivery_id}/replay", tags=["webhooks"])
def replay_delivery(
    *, delivery_id: DeliveryId, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """Send a delivery again now, with a fresh count of attempts: the same event under the
    same `webhook-id`, signed anew."""
    return reply(app.webhooks.replay(who, delivery_id, key=key))
