"""Rows the store's own functions take, built with what a test does not care about filled in."""

from __future__ import annotations

from datetime import datetime

from adjudge.store import gateway
from adjudge.store.gateway import GatewayCall


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
