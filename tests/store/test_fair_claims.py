"""A worker's batch of webhook deliveries is shared among the accounts that have some due, in
turn: an account with many due (say, at receivers that never answer) cannot fill every batch
ahead of another account's one, every account has its turn, a batch is never left short while
deliveries are due, and a claim costs its batch, not the pile of deliveries due."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, select, text

from adjudge.store import Store, Transaction, outbox, records
from adjudge.store.outbox import FAIR_SHARE, PENDING
from support.deliveries import add_endpoint, empty, pile
from support.plans import sqlite_plans


def fair_batch(
    pending: list[str], due: list[tuple[str, str]], limit: int, after: str
) -> tuple[list[str], str]:
    """The model of a claim's batch and where its walk ended: the accounts with deliveries
    ``pending`` (due or not; by name) after ``after``, then from the first, ``limit`` of them
    at most, each take their oldest ``due`` (id, account; oldest first) up to a
    :data:`FAIR_SHARE`-th of the batch until it is full; then the rest by age."""
    share = max(1, limit // FAIR_SHARE)
    order = [a for a in pending if a > after] + [a for a in pending if a <= after]
    taken: list[str] = []
    walked = after
    for account in order[:limit]:
        if len(taken) >= limit:
            break
        walked = account
        taken += [i for i, a in due if a == account][: min(share, limit - len(taken))]
    rest = [i for i, _ in due if i not in taken]
    return taken + rest[: limit - len(taken)], walked


T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)


ACCOUNTS = ("a", "b", "c", "d")


def _endpoint(tx: Transaction, account: str, endpoint: str) -> None:
    add_endpoint(tx, account, endpoint, T0)


def _fresh(store: Store) -> None:
    with store.write() as tx:
        for table in ("webhook_attempts", "webhook_deliveries", "webhook_messages"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
        tx.conn.execute(text("DELETE FROM webhook_endpoints"))
        for account in ACCOUNTS:
            if records.account(tx, account) is None:
                records.create_account(tx, account, ["poster"], f"k-{account}", opt_in=False, at=T0)
            _endpoint(tx, account, f"ep_{account}")


def _state(tx: Transaction, now: datetime) -> tuple[list[str], list[tuple[str, str]]]:
    """The accounts with deliveries pending, and the deliveries due and free (oldest first)."""
    d = outbox.webhook_deliveries.c
    pending = select(d.account_id).where(d.status == PENDING).distinct()
    free = (d.locked_until.is_(None)) | (d.locked_until <= now)
    due = select(d.id, d.account_id).where(d.status == PENDING, d.next_attempt_at <= now, free)
    rows = tx.conn.execute(due.order_by(d.next_attempt_at, d.id))
    return sorted(str(a) for a in tx.conn.scalars(pending)), [(r.id, r.account_id) for r in rows]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    made=st.lists(st.tuples(st.sampled_from(ACCOUNTS), st.integers(-5, 3)), max_size=40),
    limit=st.integers(1, 12),
    after=st.sampled_from(("", "a", "b", "d", "z")),
    passes=st.integers(1, 3),
)
def test_claims_give_each_account_its_turn_and_fill_the_batch(
    sqlite_store: Store, made: list[tuple[str, int]], limit: int, after: str, passes: int
) -> None:
    """For any deliveries of four accounts, due or not yet (several at one moment), each of a
    few claims in a row (each starting where the last one's walk ended, the earlier ones'
    deliveries still leased) is what the model says: each delivery once, as many as the batch
    holds while any are due, the accounts after the last one's turn first, each account's
    oldest first."""
    _fresh(sqlite_store)
    now = T0 + timedelta(hours=1)
    with sqlite_store.write() as tx:
        for n, (account, seconds) in enumerate(made):
            at = now + timedelta(seconds=seconds)
            outbox.emit(tx, [account], "webhook.test", {"n": n}, at=at)
    for _ in range(passes):
        with sqlite_store.write() as tx:
            pending, due = _state(tx, now)
            batch = outbox.claim(tx, now=now, lease=timedelta(seconds=60), limit=limit, after=after)
        taken = [c.delivery_id for c in batch.claimed]
        expected, walked = fair_batch(pending, due, limit, after)
        assert len(taken) == len(set(taken)) == min(limit, len(due))
        assert sorted(taken) == sorted(expected)
        assert batch.walked_to == walked
        after = walked


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
        alone = outbox.claim(tx, now=now, lease=timedelta(seconds=1), limit=50).claimed
    assert len(alone) == 50 and {c.endpoint_id for c in alone} == {"ep_noisy"}
    _due(store, "quiet", "ep_quiet", 1, T0 + timedelta(minutes=5))
    later = now + timedelta(seconds=2)  # the first claim's leases ran out
    with store.write() as tx:
        pending, due = _state(tx, later)
        shared = outbox.claim(tx, now=later, lease=timedelta(seconds=60), limit=50).claimed
    assert len(shared) == 50
    assert "ep_quiet" in {c.endpoint_id for c in shared}
    assert sorted(c.delivery_id for c in shared) == sorted(fair_batch(pending, due, 50, "")[0])


def test_no_account_is_given_more_than_its_most_in_flight(store: Store) -> None:
    """With the worker's attempts in flight counted (``busy``) and a most an account may have
    (``most``), a claim gives an account no more than its room, in its turn and in the fill by
    age; one already at its most is given none, and the others' are taken."""
    with store.write() as tx:
        for table in ("webhook_attempts", "webhook_deliveries", "webhook_messages"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
        tx.conn.execute(text("DELETE FROM webhook_endpoints"))
    _due(store, "noisy", "ep_noisy", 30, T0)
    _due(store, "full", "ep_full", 5, T0 + timedelta(minutes=1))
    _due(store, "quiet", "ep_quiet", 2, T0 + timedelta(minutes=5))
    now = T0 + timedelta(hours=1)
    with store.write() as tx:
        batch = outbox.claim(
            tx,
            now=now,
            lease=timedelta(seconds=60),
            limit=20,
            busy={"noisy": 1, "full": 4},
            most=4,
        ).claimed
    taken = Counter(c.account_id for c in batch)
    assert taken == {"noisy": 3, "quiet": 2}, taken
    assert {c.endpoint_id for c in batch if c.account_id == "quiet"} == {"ep_quiet"}


def test_every_account_has_its_turn_however_large_anothers_pile(store: Store) -> None:
    """Twelve accounts with deliveries due after one account's pile of 2,000 older ones: with
    batches of ten (two an account), each pass gives five accounts their turn, so within three
    passes (the earlier ones' deliveries still leased) every account has had one, and no
    account more than its share a pass."""
    empty(store)
    pile(store, "pile", 2000, T0)
    names = [f"acct{n:02d}" for n in range(12)]
    for name in names:
        pile(store, name, 5, T0 + timedelta(hours=1))
    now = T0 + timedelta(hours=2)
    served: set[str] = set()
    after = ""
    for _ in range(3):
        with store.write() as tx:
            batch = outbox.claim(tx, now=now, lease=timedelta(seconds=60), limit=10, after=after)
        assert len(batch.claimed) == 10
        turns = Counter(c.endpoint_id.removeprefix("ep_") for c in batch.claimed)
        assert max(turns.values()) == 2  # a share each, none filled by age: due ones were left
        served |= set(turns)
        after = batch.walked_to
    assert served == {*names, "pile"}


def test_a_claim_reads_an_index_range_however_many_are_due(sqlite_store: Store) -> None:
    """With 3,000 deliveries of one account due and a few of others, no statement of a claim
    scans the deliveries or sorts them: each reads the pending deliveries' indexes (the
    accounts walked by a seek each, each one's oldest due by a range, the rest by age) or
    the deliveries by id, and only the batch's own rows are sorted. (A claim ranked every due
    delivery within its account on every pass, inside the write that holds SQLite's one lock:
    0.2 s at 100,000 due; `benchmarks/webhook_claims.py`.)"""
    empty(sqlite_store)
    pile(sqlite_store, "pile", 3000, T0)
    for name in ("ann", "zed"):
        pile(sqlite_store, name, 3, T0 + timedelta(minutes=1))
    claimed: list[outbox.Batch] = []

    def claim(tx: Transaction) -> None:
        now = T0 + timedelta(hours=2)
        claimed.append(outbox.claim(tx, now=now, lease=timedelta(seconds=60), limit=50, after="b"))

    plans = [step for _, steps in sqlite_plans(sqlite_store, claim, write=True) for step in steps]
    assert len(claimed[0].claimed) == 50
    reads = [p for p in plans if "webhook_deliveries" in p]
    kept = ("_pending_account (", "_due (", "sqlite_autoindex_webhook_deliveries_1 (id=?)")
    assert reads and all(p.startswith("SEARCH") for p in reads), plans
    assert all(any(k in p for k in kept) for p in reads), plans  # the pending rows or by id
    assert not any("TEMP B-TREE" in p and "webhook_deliveries" in p for p in plans), plans


def test_a_batch_among_more_accounts_than_one_read_takes(store: Store) -> None:
    """A batch of 520 (a worker's batch may be up to 1,000) among 520 accounts with one due
    each: every one taken, their shares read a few accounts a statement (SQLite refuses a
    compound select of more than 500 terms: one statement of them all stopped every pass)."""
    empty(store)
    names = [f"acct{n:04d}" for n in range(520)]
    with store.write() as tx:
        for name in names:
            records.create_account(tx, name, ["poster"], f"k-{name}", opt_in=False, at=T0)
            _endpoint(tx, name, f"ep_{name}")
        for name in names:
            outbox.emit(tx, [name], "webhook.test", {}, at=T0)
    with store.write() as tx:
        batch = outbox.claim(
            tx, now=T0 + timedelta(hours=1), lease=timedelta(seconds=60), limit=520
        )
    assert len(batch.claimed) == 520 and batch.walked_to == names[-1]


def test_a_claim_locks_only_what_it_takes(store: Store) -> None:
    """PostgreSQL: a claim of 50 among twenty accounts with twenty due each locks the 50 it
    leases and no others while its write is open (each account's whole share was locked,
    up to a batch's square over five rows, all skipped by a worker claiming meanwhile)."""
    if store.dialect != "postgresql":
        pytest.skip("SQLite has no row locks: its one writer claims alone")
    empty(store)
    for n in range(20):
        pile(store, f"acct{n:02d}", 20, T0)
    other = create_engine(store.url)
    try:
        with store.write() as tx:
            now = T0 + timedelta(hours=1)
            batch = outbox.claim(tx, now=now, lease=timedelta(seconds=60), limit=50)
            with other.connect() as conn:  # another worker, while this claim's write is open
                free = conn.execute(
                    text(
                        "SELECT count(*) FROM (SELECT id FROM webhook_deliveries"
                        " WHERE status = 'pending' FOR UPDATE SKIP LOCKED) x"
                    )
                ).scalar()
                conn.rollback()
    finally:
        other.dispose()
    assert len(batch.claimed) == 50
    assert 400 - int(free or 0) == 50
