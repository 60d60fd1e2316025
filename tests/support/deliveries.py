"""Webhook deliveries written straight into a store, many at once, in the shape the outbox
writes them: the piles the tests of a claim's and a listing's cost read."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, select, text

from adjudge.store import Store, Transaction, outbox, records
from adjudge.store.outbox import PENDING


def empty(store: Store) -> None:
    """No endpoint, message, delivery or attempt left."""
    with store.write() as tx:
        for table in ("webhook_attempts", "webhook_deliveries", "webhook_messages"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
        tx.conn.execute(text("DELETE FROM webhook_endpoints"))


def add_endpoint(tx: Transaction, account: str, endpoint: str, at: datetime) -> None:
    """An enabled endpoint of ``account`` for every event (its secret a placeholder)."""
    outbox.add_endpoint(
        tx,
        endpoint_id=endpoint,
        account_id=account,
        url="https://example.com/hook",
        sealed_secret="sealed",
        event_types=None,
        description="",
        at=at,
    )


def pile(
    store: Store,
    account: str,
    count: int,
    at: datetime,
    *,
    status: str = PENDING,
    endpoint: str | None = None,
) -> None:
    """``count`` deliveries of ``account`` to ``endpoint`` (``ep_<account>``, made if new) in
    ``status``, due (or made) from ``at``, a second apart."""
    endpoint = endpoint or f"ep_{account}"
    d = outbox.webhook_deliveries
    with store.write() as tx:
        if records.account(tx, account) is None:
            records.create_account(tx, account, ["poster"], f"k-{account}", opt_in=False, at=at)
        if outbox.endpoint(tx, endpoint) is None:
            add_endpoint(tx, account, endpoint, at)
        first = int(tx.conn.execute(text("SELECT count(*) FROM webhook_messages")).scalar() or 0)
        messages = [f"msg_{first + n:08d}" for n in range(count)]
        tx.conn.execute(
            insert(outbox.webhook_messages),
            [{"id": m, "type": "webhook.test", "payload": {}, "created_at": at} for m in messages],
        )
        tx.conn.execute(
            insert(d),
            [
                {
                    "id": f"whd_{first + n:08d}",
                    "message_id": m,
                    "endpoint_id": endpoint,
                    "account_id": account,
                    "status": status,
                    "attempts": 0,
                    "next_attempt_at": at + timedelta(seconds=n) if status == PENDING else None,
                    "replays": 0,
                    "created_at": at + timedelta(seconds=n),
                }
                for n, m in enumerate(messages)
            ],
        )


def events_to(store: Store, endpoint: str) -> list[dict[str, Any]]:
    """The events written for ``endpoint`` (each ``{"type", "timestamp", "data"}``), oldest
    first: what its receiver is sent."""
    m, d = outbox.webhook_messages, outbox.webhook_deliveries
    with store.read() as tx:
        rows = tx.conn.execute(
            select(m.c.payload)
            .join(d, d.c.message_id == m.c.id)
            .where(d.c.endpoint_id == endpoint)
            .order_by(m.c.created_at, m.c.id)
        ).all()
    return [dict(row[0]) for row in rows]
