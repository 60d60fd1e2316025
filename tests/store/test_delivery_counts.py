"""The webhook deliveries counted by status as they change (``outbox.counts``) equal a count of
the deliveries: after any sequence of events made, deliveries claimed and attempted (delivered,
due again, failed), replayed, endpoints disabled, and transactions that fail."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text

from adjudge.store import Store, outbox, records
from adjudge.store import day_counts as dc
from support.counts import recount
from support.statements import statements

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
ENDPOINTS = ("ep_a", "ep_b", "ep_c")
_ids = itertools.count()

_op = st.one_of(
    st.tuples(st.just("emit")),
    st.tuples(st.just("attempt"), st.sampled_from(("delivered", "again", "failed"))),
    st.tuples(st.just("replay"), st.integers(0, 20)),
    st.tuples(st.just("disable"), st.sampled_from(ENDPOINTS)),
)
# One transaction: its operations, and whether it fails after them (nothing of it may count).
_txn = st.tuples(st.lists(_op, min_size=1, max_size=3), st.booleans())


class _Failed(Exception):
    """A transaction that fails after its writes."""


def _fresh(store: Store) -> None:
    with store.write() as tx:
        for table in ("webhook_attempts", "webhook_deliveries", "webhook_messages"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
        tx.conn.execute(text("DELETE FROM day_counts WHERE family = 'deliveries'"))
        tx.conn.execute(text("DELETE FROM webhook_endpoints"))
        if records.account(tx, "pat") is None:
            records.create_account(tx, "pat", ["poster"], "key-pat", opt_in=False, at=T0)
        for endpoint in ENDPOINTS:
            outbox.add_endpoint(
                tx,
                endpoint_id=endpoint,
                account_id="pat",
                url="https://example.com/hook",
                sealed_secret="sealed",
                event_types=None,
                description="",
                at=T0,
            )


def _apply(tx: Any, op: tuple[Any, ...], now: datetime) -> None:
    """One operation, through the store's own functions (the ones the use cases call)."""
    if op[0] == "emit":  # to each enabled endpoint
        outbox.emit(tx, ["pat"], "webhook.test", {}, at=now)
    elif op[0] == "attempt":
        for claimed in outbox.claim(tx, now=now, lease=timedelta(seconds=60), limit=2).claimed:
            outcome = op[1]
            outbox.finish(
                tx,
                claimed,
                now=now,
                ok=outcome == "delivered",
                status=200 if outcome == "delivered" else 500,
                error=None if outcome == "delivered" else "no",
                next_at=now if outcome == "again" else None,
            )
    elif op[0] == "replay":
        d = outbox.webhook_deliveries.c
        found = [r.id for r in tx.conn.execute(select(d.id).order_by(d.id))]
        if found:
            outbox.replay(tx, found[op[1] % len(found)], now=now)
    else:
        outbox.disable_endpoint(tx, op[1], at=now)


def test_the_delivery_counts_equal_a_count_of_the_deliveries(store: Store) -> None:
    """Whatever committed is counted under its delivery's status now, and nothing else."""

    @settings(
        max_examples=40 if store.dialect == "sqlite" else 12,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(txns=st.lists(_txn, max_size=10))
    def check(txns: list[Any]) -> None:
        _fresh(store)
        for ops, fails in txns:
            now = T0 + timedelta(seconds=next(_ids))
            try:
                with store.write() as tx:
                    for op in ops:
                        _apply(tx, op, now)
                    if fails:
                        raise _Failed
            except _Failed:
                pass
        with store.read() as tx:
            d = outbox.webhook_deliveries.c
            statuses = Counter(str(s) for (s,) in tx.conn.execute(select(d.status)))
            assert outbox.counts(tx) == dict(sorted(statuses.items()))
            assert dc.stored(tx) == recount(tx)

    check()


def test_a_claim_leases_its_deliveries_in_one_statement(store: Store) -> None:
    """A claim of ten due deliveries walks the accounts with some pending, takes each one's
    share (on PostgreSQL, locks those it takes), the rest by age, leases them all in one
    statement and reads what to send: five statements whatever their number, six on
    PostgreSQL (one more a delivery once). They hold the claim's lease; a second claim finds
    only the two left."""
    _fresh(store)
    with store.write() as tx:
        for _ in range(4):  # to each of the three endpoints: twelve deliveries
            outbox.emit(tx, ["pat"], "webhook.test", {}, at=T0)
    with statements(store.engine, "webhook_deliveries") as sent, store.write() as tx:
        claimed = outbox.claim(tx, now=T0, lease=timedelta(seconds=60), limit=10).claimed
    assert len(claimed) == 10 and len({c.lease for c in claimed}) == 1
    assert len(sent) == (6 if store.dialect == "postgresql" else 5), sent
    with store.write() as tx:
        assert len(outbox.claim(tx, now=T0, lease=timedelta(seconds=60), limit=10).claimed) == 2
