"""The held money's daily figures, kept by every transfer, equal a recount of the ledger's
lines: after any sequence of movements, on any day, and after the migration's backfill."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.market import WORLD, Transfer
from adjudge.store import ConcurrentUpdate, Store, ledger, receipt_log
from adjudge.store import held_days as hd
from support.migrations import downgrade

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
ACCOUNTS = (
    WORLD,
    "wallet:a",
    "wallet:b",
    "escrow:t1",
    "escrow:t2",
    "hold:c1",
    "held:p",
    "held:q",
    "platform:fees",
)
#: The days the figures are compared on: before the first movement to after the last.
DAYS = [(T0.date() + timedelta(days=i)).isoformat() for i in range(-2, 14)]

# One movement: from, to, an amount (capped at what the debit holds), and its moment (days
# from T0, in any order: a transfer may be dated before days already written).
_move = st.tuples(
    st.sampled_from(ACCOUNTS),
    st.sampled_from(ACCOUNTS),
    st.integers(1, 5_000_000),
    st.integers(0, 11),
    st.integers(0, 86_399),
)
# One transaction: one to three movements.
_txn = st.lists(_move, min_size=1, max_size=3)


def _clear(store: Store) -> None:
    with store.write() as tx:
        for table in ("held_days", "ledger_entries", "balances"):
            tx.conn.execute(text(f"DELETE FROM {table}"))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(txns=st.lists(_txn, max_size=25))
def test_the_daily_figures_equal_a_recount(store: Store, txns: list[list[tuple]]) -> None:  # type: ignore[type-arg]
    """After any sequence of deposits, fundings, reservations, releases and maturings, dated in
    any order, each holding prefix's end-of-day figure equals the sum of its lines up to that
    day's end, and the latest equals the sum of its balances now (on PostgreSQL the figures
    are written with the commit's round trip, held as other writes are: checked to fail when
    a day's first row does not start from the day before it)."""
    _clear(store)
    balance = dict.fromkeys(ACCOUNTS, 0)
    for n, moves in enumerate(txns):
        with store.write() as tx:
            receipt = f"r{n}"
            tx.appended.add(receipt)  # the receipt a release out of a holding account names
            for debit, credit, asked, day, second in moves:
                amount = asked if debit == WORLD else min(asked, balance[debit])
                if debit == credit or amount <= 0:
                    continue
                at = T0 + timedelta(days=day, seconds=second)
                ledger.transfer(
                    tx, [Transfer(debit, credit, amount)], task_id=None, at=at, receipt_id=receipt
                )
                balance[debit] -= amount
                balance[credit] += amount
    with store.read() as tx:
        kept = hd.figures(tx, hd.PREFIXES, DAYS)
        assert kept == hd.recount(tx, hd.PREFIXES, DAYS)
    for prefix in hd.PREFIXES:
        now = sum(v for k, v in balance.items() if k.startswith(prefix))
        assert kept[prefix][-1] == now


def test_the_migration_backfills_the_days_already_moved(store: Store) -> None:
    """Upgrading a ledger with history writes each day's figure from its lines (the same a
    recount finds), and the transfers after it go on from there; 0017 downgrades cleanly."""
    with store.write() as tx:
        tx.appended.add("r")
        for day, (debit, credit, amount) in enumerate(
            [
                (WORLD, "wallet:a", 9_000_000),
                ("wallet:a", "escrow:t1", 2_000_000),
                ("wallet:a", "hold:c1", 500_000),
                ("hold:c1", "held:p", 400_000),
                ("escrow:t1", "wallet:b", 2_000_000),
            ]
        ):
            at = T0 + timedelta(days=2 * day)
            ledger.transfer(
                tx, [Transfer(debit, credit, amount)], task_id=None, at=at, receipt_id="r"
            )
    with store.read() as tx:
        before = hd.figures(tx, hd.PREFIXES, DAYS)
    downgrade(store, "0016")
    store.migrate()
    with store.read() as tx:
        assert hd.figures(tx, hd.PREFIXES, DAYS) == before == hd.recount(tx, hd.PREFIXES, DAYS)
        assert before["escrow:"][4] == 2_000_000 and before["escrow:"][-1] == 0
        assert before["held:"][-1] == 400_000 and before["hold:"][-1] == 100_000
    with store.write() as tx:
        tx.appended.add("s")
        at = T0 + timedelta(days=13)
        ledger.transfer(
            tx, [Transfer("held:p", "wallet:p", 400_000)], task_id=None, at=at, receipt_id="s"
        )
    with store.read() as tx:
        assert hd.figures(tx, hd.PREFIXES, DAYS) == hd.recount(tx, hd.PREFIXES, DAYS)


def test_concurrent_movements_across_days_keep_the_figures(store: Store) -> None:
    """Four writers at once, each moving money into and out of escrows and holds on two days
    (the later written first, a movement dated before it after): every figure still equals a
    recount (a lost race is retried, as the service retries it)."""
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 10**9)], task_id=None, at=T0)
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        for i in range(12):
            day = (n + i) % 3  # 0, 1, 2 days after T0, in an order each writer shuffles
            account = ("escrow:t", "hold:c", "held:p")[i % 3] + str(n)
            for _attempt in range(20):
                try:
                    with store.write() as tx:
                        tx.appended.add("r")
                        at = T0 + timedelta(days=day, hours=i)
                        moves = [Transfer("wallet:a", account, 1000 + i)]
                        ledger.transfer(tx, moves, task_id=None, at=at)
                        if i % 2:
                            back = [Transfer(account, "wallet:a", 500)]
                            ledger.transfer(tx, back, task_id=None, at=at, receipt_id="r")
                    break
                except ConcurrentUpdate:
                    time.sleep(0.01)
            else:
                failures.append(AssertionError(f"writer {n} gave up"))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    with store.read() as tx:
        kept = hd.figures(tx, hd.PREFIXES, DAYS)
        assert kept == hd.recount(tx, hd.PREFIXES, DAYS)
        assert kept["escrow:"][-1] > 0 and kept["hold:"][-1] > 0 and kept["held:"][-1] > 0


def _move(store: Store, receipt: str, debit: str, credit: str, amount: int, at: datetime) -> None:
    with store.write() as tx:
        tx.appended.add(receipt)
        ledger.transfer(
            tx, [Transfer(debit, credit, amount)], task_id=None, at=at, receipt_id=receipt
        )


def test_writers_on_other_lanes_never_wait_for_each_other(store: Store) -> None:
    """On PostgreSQL (several lanes) a transaction moving held money while another holds its
    lane open commits at once (from another account: a balance's row is its own lock): the
    figures are kept per lane, so no day's row is shared; and after many writers at once the
    figures still equal a recount."""
    if store.lanes < 2:
        pytest.skip("SQLite has one lane: its writers take turns by design")
    _clear(store)
    for account in ("wallet:a", "wallet:b"):
        _move(store, f"r0{account}", WORLD, account, 10**12, T0)
    holding, release, done = threading.Event(), threading.Event(), threading.Event()

    def hold_a_lane() -> None:
        with store.write() as tx:
            tx.appended.add("ra")
            ledger.transfer(
                tx, [Transfer("wallet:a", "escrow:t1", 5)], task_id=None, at=T0, receipt_id="ra"
            )
            receipt_log.lane(tx)  # as a transaction with receipts does when it flushes them
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold_a_lane)
    holder.start()
    assert holding.wait(30)
    other = threading.Thread(
        target=lambda: (_move(store, "rb", "wallet:b", "escrow:t2", 7, T0), done.set())
    )
    other.start()
    try:
        assert done.wait(10), "a writer waited for another transaction's lane"
    finally:
        release.set()
        holder.join(30)
        other.join(30)

    def many(k: int) -> None:
        for i in range(15):
            at = T0 + timedelta(days=i % 4, seconds=k)
            _move(store, f"m{k}.{i}", "wallet:a", "hold:c1" if i % 2 else "escrow:t1", 3 + k, at)
            if i % 3 == 0:
                _move(store, f"n{k}.{i}", "hold:c1" if i % 2 else "escrow:t1", "held:p", 1, at)

    workers = [threading.Thread(target=many, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    with store.read() as tx:
        assert hd.figures(tx, hd.PREFIXES, DAYS) == hd.recount(tx, hd.PREFIXES, DAYS)
