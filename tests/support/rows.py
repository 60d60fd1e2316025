"""Rows the store's own functions take, built with what a test does not care about filled in."""

from __future__ import annotations

from datetime import datetime

from adjudge.calls.pricing import ListedPrice
from adjudge.store import Store, gateway, records
from adjudge.store.gateway import GatewayCall
from support.weather import tool


def pending_call(
    call_id: str,
    *,
    started_at: datetime,
    provider: str = "prov",
    caller: str = "caller",
    key: str | None = None,
    price_minor: int = 1,
    currency: str = "USDC",
) -> GatewayCall:
    """A forwarded call as it starts (``gateway.start_call``): pending, no verdict yet."""
    return GatewayCall(
        id=call_id,
        caller=caller,
        tool="weather",
        tool_version=1,
        provider=provider,
        price_minor=price_minor,
        currency=currency,
        key_hash=None if key is None else gateway.hashed(key),
        fingerprint="sha256:" + "0" * 64,
        state="pending",
        started_at=started_at,
        finished_at=None,
        status=None,
        verdict=None,
        receipt_id=None,
        answer=None,
    )


def provided_tool(store: Store, *, price: int, at: datetime) -> None:
    """The provider ``prov`` and its tool ``weather`` (version 1) at ``price``, as registered
    at ``at``: what a pending call of :func:`pending_call` names."""
    with store.write() as tx:
        records.create_account(tx, "prov", ["provider"], "k-prov", opt_in=False, at=at)
        gateway.add_tool(
            tx,
            name="weather",
            provider="prov",
            document=tool("https://provider.example/forecast"),
            digest="sha256:weather-1",
            price=ListedPrice(price, price, at),
            currency="USDC",
            at=at,
        )
