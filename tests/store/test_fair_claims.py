"""A worker's batch of webhook deliveries is shared among the accounts that have some due: an
account with many due (say, at receivers that never answer) cannot fill every batch ahead of
another account's one, and a batch is never left short while deliveries are due."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.store import Store, outbox, records
from adjudge.store.outbox import FAIR_SHARE, fair_share

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)


@given(
    due=st.lists(st.sampled_from("abcd"), max_size=60),
    limit=st.integers(1, 30),
)
def test_a_fair_share_takes_each_accounts_oldest_first_and_fills_the_batch(
    due: list[str], limit: int
) -> None:
    """Each delivery at most once; as many as the batch holds while any are due; every account
    with deliveries due gets its oldest ones, up to its share, before any account gets more;
    and each account's deliveries are taken oldest first."""
    rows = [(f"d{n:03d}", account) for n, account in enumerate(due)]
    taken = fair_share(rows, limit)
    assert len(taken) == len(set(taken)) == min(limit, len(rows))
    share = max(1, limit // FAIR_SHARE)
    account_of = dict(rows)
    for account in set(due):
        mine = [d for d, a in rows if a == account]
        got = [d for d in taken if account_of[d] == account]
        assert got == mine[: len(got)]  # oldest first
        if len(taken) < len(rows) and len(got) < min(share, len(mine)):
            # Short of its share only when the batch is all shares of accounts due before it.
            assert len({account_of[d] for d in taken}) * share >= limit


def _due(store: Store, account: str, endpoint: str, count: int, at: datetime) -> None:
    with store.write() as tx:
        if records.account(tx, account) is None:
            records.create_account(tx, account, ["poster"], f"k-{account}", opt_in=False, at=T0)
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
        for n in range(count):
            outbox.emit(tx, [account], "webhook.test", {"n": n}, at=at + timedelta(seconds=n))


def test_one_accounts_pile_of_due_deliveries_leaves_room_for_another(store: Store) -> None:
    """60 deliveries of one account fell due before another account's one: a batch of 50
    takes the other's too; alone, the first account's fill the batch."""
    with store.write() as tx:
        for table in ("webhook_attempts", "webhook_deliveries", "webhook_messages"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
        tx.conn.execute(text("DELETE FROM webhook_endpoints"))
    _due(store, "noisy", "ep_noisy", 60, T0)
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
