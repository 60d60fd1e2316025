"""A transaction's credits are added to their balances as it commits (``ledger.flush``): what
it reads and debits sees them at once, a unit of work rolled back takes its own out, and on
PostgreSQL a balance every writer credits is not locked until the commit."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, text

from adjudge.app.unit import GROUP_IDLE, GroupCommit
from adjudge.errors import StateError
from adjudge.market import WORLD, Transfer
from adjudge.store import Store, Transaction, ledger
from adjudge.store import schema as s

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
ACCOUNTS = (WORLD, "wallet:a", "wallet:b", "escrow:t1", "platform:fees")


def _move(tx: Transaction, debit: str, credit: str, amount: int) -> None:
    tx.appended.add("r")  # the receipt a release out of a holding account names
    ledger.transfer(tx, [Transfer(debit, credit, amount)], task_id=None, at=T0, receipt_id="r")


def _recount(tx: Transaction) -> dict[str, int]:
    """Each account's balance as the sum of its ledger lines."""
    e = s.ledger_entries
    q = select(e.c.account, func.sum(e.c.amount)).group_by(e.c.account)
    return {str(a): int(n) for a, n in tx.conn.execute(q) if int(n) != 0}


def test_a_transaction_reads_and_spends_what_it_was_credited(store: Store) -> None:
    """Credited and spent in one transaction: the debit sees the credit (no overdraft refusal),
    every read of the balance includes it, and what commits is the same."""
    with store.write() as tx:
        _move(tx, WORLD, "wallet:a", 100)
        assert ledger.balance(tx, "wallet:a") == 100
        _move(tx, "wallet:a", "escrow:t1", 60)
        _move(tx, "escrow:t1", "platform:fees", 10)
        assert ledger.balance(tx, "wallet:a") == 40
        assert ledger.balances(tx) == {
            WORLD: -100,
            "wallet:a": 40,
            "escrow:t1": 50,
            "platform:fees": 10,
        }
        assert ledger.total(tx) == (0, 0)
    with pytest.raises(StateError) as refused, store.write() as tx:
        _move(tx, WORLD, "wallet:a", 5)
        _move(tx, "wallet:a", "escrow:t1", 46)  # one more than it holds with this credit
    assert refused.value.code == "INSUFFICIENT_FUNDS"
    with store.read() as tx:
        assert ledger.balances(tx) == {
            WORLD: -100,
            "wallet:a": 40,
            "escrow:t1": 50,
            "platform:fees": 10,
        }
        assert tx.credits_due == {}


_step = st.tuples(st.sampled_from(ACCOUNTS), st.sampled_from(ACCOUNTS), st.integers(1, 1000))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(txns=st.lists(st.lists(_step, min_size=1, max_size=6), max_size=12))
def test_balances_equal_a_recount_at_every_step(
    store: Store, txns: list[list[tuple[str, str, int]]]
) -> None:
    """Any movements, several to a transaction, a refused one among them (rolled back to a
    savepoint set before it): inside each transaction every balance read equals the model's,
    and after each commit every balance equals the sum of its ledger lines. On PostgreSQL the
    debits and lines are held for the next round trip and a refusal is seen there."""
    with store.write() as tx:
        for table in ("held_days", "ledger_entries", "balances"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
    model = dict.fromkeys(ACCOUNTS, 0)
    for moves in txns:
        with store.write() as tx:
            for debit, credit, amount in moves:
                if debit == credit:
                    continue
                if debit != WORLD and model[debit] < amount:
                    tx.savepoint("refused")  # a refusal is undone before the transaction goes on
                    with pytest.raises(StateError):
                        _move(tx, debit, credit, amount)
                        tx.send()
                    tx.rollback_to("refused")
                    continue
                _move(tx, debit, credit, amount)
                model[debit] -= amount
                model[credit] += amount
                assert ledger.balance(tx, credit) == model[credit]
                assert ledger.balance(tx, debit) == model[debit]
        with store.read() as tx:
            kept = {a: n for a, n in ledger.balances(tx).items() if n != 0}
            assert kept == _recount(tx) == {a: n for a, n in model.items() if n != 0}


def test_a_unit_rolled_back_takes_its_credits_out(store: Store) -> None:
    """Two units in one group commit, the second credited then refused: only the first's
    credit is on the balance."""
    commits = GroupCommit(store, threads=1)
    started, go = threading.Event(), threading.Event()

    def first(tx: Transaction) -> None:  # holds the committing thread while two more queue
        started.set()
        go.wait(10)

    def credited(tx: Transaction) -> None:
        _move(tx, WORLD, "platform:fees", 5)

    def refused(tx: Transaction) -> None:
        _move(tx, WORLD, "platform:fees", 7)
        raise StateError("refused after its credit", code="TEST_REFUSED")

    try:
        held = commits.submit(first)
        assert started.wait(10)
        kept, undone = commits.submit(credited), commits.submit(refused)
        go.set()
        held.result(10)
        kept.result(10)
        with pytest.raises(StateError):
            undone.result(10)
    finally:
        commits.close()
    with store.read() as tx:
        assert ledger.balance(tx, "platform:fees") == 5
        assert _recount(tx)["platform:fees"] == 5


def test_a_shared_balance_is_not_locked_before_the_commit(store: Store) -> None:
    """On PostgreSQL, while one transaction that credited the fees stays open, another that
    credits them commits at once (it waited for the first to end when credits were written
    as they were made); both credits are kept."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer at a time by design: there is no row lock to wait on")
    with store.write() as tx:
        _move(tx, WORLD, "wallet:a", 100)
        _move(tx, WORLD, "wallet:b", 100)
    open_, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold_open() -> None:
        try:
            with store.write() as tx:
                _move(tx, "wallet:a", "platform:fees", 3)
                open_.set()
                release.wait(30)
        except BaseException as exc:  # reported by the test below
            errors.append(exc)

    holder = threading.Thread(target=hold_open)
    holder.start()
    try:
        assert open_.wait(10)
        began = time.monotonic()
        with store.write() as tx:
            _move(tx, "wallet:b", "platform:fees", 4)
        waited = time.monotonic() - began
    finally:
        release.set()
        holder.join(30)
    assert not errors
    assert waited < 5, f"the second writer waited {waited:.1f} s for the first's commit"
    with store.read() as tx:
        assert ledger.balance(tx, "platform:fees") == 7


def test_committing_threads_by_default_and_more_run_at_once(store: Store) -> None:
    """One committing thread on either database, unless told otherwise (two batches at once
    on PostgreSQL deadlock on the rows both lock). Given two on PostgreSQL, two units that
    each wait for the other to start finish (they run at once), and closing ends both threads
    at once."""
    default = GroupCommit(store)
    assert default.threads == 1
    default.close()
    if store.dialect == "sqlite":
        return  # one writer at a time: a second thread would wait for the first's commit
    commits = GroupCommit(store, threads=2)
    arrived = threading.Barrier(2, timeout=10)
    taken = threading.Event()

    def meet(tx: Transaction) -> Any:
        taken.set()
        arrived.wait()  # raises BrokenBarrierError unless the other unit runs meanwhile
        assert commits.here()
        return "met"

    try:
        first = commits.submit(meet)
        assert taken.wait(10)  # the first thread has taken its unit: the next goes to a second
        second = commits.submit(meet)
        assert first.result(15) == second.result(15) == "met"
    finally:
        began = time.monotonic()
        commits.close()
    # Each thread ends at once, not after its idle wait (a wake taken by one passes to the next).
    assert time.monotonic() - began < GROUP_IDLE / 2
