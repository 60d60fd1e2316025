"""A worker's batch of webhook deliveries is shared among the accounts that have some due: an
account with many due (say, at receivers that never answer) cannot fill every batch ahead of
another account's one, and a batch is never left short while deliveries are due."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text

from adjudge.store import Store, Transaction, outbox, records
from adjudge.store.outbox import FAIR_SHARE


def fair_share(due: list[tuple[str, str]], limit: int) -> list[str]:
    """The model of a claim's batch of ``due`` deliveries (id, account; oldest first): each
    account's oldest, up to a :data:`FAIR_SHARE`-th of the batch, then the rest by age."""
    share = max(1, limit // FAIR_SHARE)
    taken: list[str] = []
    left: list[str] = []
    counts: dict[str, int] = {}
    for delivery_id, account in due:
        counts[account] = counts.get(account, 0) + 1
        (taken if counts[account] <= share else left).append(delivery_id)
    return (taken + left)[:limit]


T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)


ACCOUNTS = ("a", "b", "c", "d")


def _endpoint(tx: Transaction, account: str, endpoint: str) -> None:
    outbox.add_endpoint(
        tx,
        endpoint_id=endpoint,
        account_id=account,
        url="https://example.com/hook",
        sealed_secret="sealed",
        event_types=None,
        description="",
        at=T0,
    )


def _fresh(store: Store) -> None:
    with store.write() as tx:
        for table in ("webhook_attempts", "webhook_deliveries", "webhook_messages"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
        tx.conn.execute(text("DELETE FROM webhook_endpoints"))
        for account in ACCOUNTS:
            if records.account(tx, account) is None:
                records.create_account(tx, account, ["poster"], f"k-{account}", opt_in=False, at=T0)
            _endpoint(tx, account, f"ep_{account}")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    due=st.lists(st.tuples(st.sampled_from(ACCOUNTS), st.integers(0, 5)), max_size=40),
    limit=st.integers(1, 12),
)
def test_a_claim_takes_each_accounts_oldest_first_and_fills_the_batch(
    sqlite_store: Store, due: list[tuple[str, int]], limit: int
) -> None:
    """For any due deliveries of four accounts (several at one moment), a claim's batch is what
    the model says: each delivery once, as many as the batch holds while any are due, every
    account's oldest up to its share before any account's more, each account's oldest first."""
    _fresh(sqlite_store)
    with sqlite_store.write() as tx:
        for n, (account, seconds) in enumerate(due):
            outbox.emit(tx, [account], "webhook.test", {"n": n}, at=T0 + timedelta(seconds=seconds))
    with sqlite_store.read() as tx:
        d = outbox.webhook_deliveries.c
        rows = [
            (r.id, r.account_id)
            for r in tx.conn.execute(select(d.id, d.account_id).order_by(d.next_attempt_at, d.id))
        ]
    now = T0 + timedelta(hours=1)
    with sqlite_store.write() as tx:
        claimed = outbox.claim(tx, now=now, lease=timedelta(seconds=60), limit=limit)
    taken = [c.delivery_id for c in claimed]
    assert len(taken) == len(set(taken)) == min(limit, len(rows))
    assert sorted(taken) == sorted(fair_share(rows, limit))


def _due(store: Store, account: str, endpoint: str, count: int, at: datetime) -> None:
    with store.write() as tx:
        if records.account(tx, account) is None:
            records.create_account(tx, account, ["poster"], f"k-{account}", opt_in=False, at=T0)
        _endpoint(tx, account, endpoint)
        for n in range(count):
            outbox.emit(tx, [account], "webhook.test", {"n": n}, at=at + timedelta(seconds=n))


def test_one_accounts_pile_of_due_deliveries_leaves_room_for_another(store: Store) -> None:
    """260 deliveries of one account fell due before another account's one (more than four
    batches: a claim that looked only at the oldest 200 left the other out): a batch of 50 takes
    the other's too, and is what the model says; alone, the first account's fill the batch."""
    with store.write() as tx:
        for table in ("webhook_attempts", "webhook_deliveries", "webhook_messages"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
        tx.conn.execute(text("DELETE FROM webhook_endpoints"))
    _due(store, "noisy", "ep_noisy", 260, T0)
    now = T0 + timedelta(hours=1)
    with store.write() as tx:
        alone = outbox.claim(tx, now=now, lease=timedelta(seconds=1), limit=50)
    assert len(alone) == 50 and {c.endpoint_id for c in alone} == {"ep_noisy"}
    _due(store, "quiet", "ep_quiet", 1, T0 + timedelta(minutes=5))
    later = now + timedelta(seconds=2)  # the first claim's leases ran out
    with store.write() as tx:
        shared = outbox.claim(tx, now=later, lease=timedelta(seconds=60), limit=50)
    assert len(shared) == 50
    assert "ep_quiet" in {c.endpoint_id for c in shared}
    with store.read() as tx:
        d = outbox.webhook_deliveries.c
        rows = tx.conn.execute(select(d.id, d.account_id).order_by(d.next_attempt_at, d.id)).all()
    assert sorted(c.delivery_id for c in shared) == sorted(
        fair_share([(r.id, r.account_id) for r in rows], 50)
    )
