"""Writes held back for the transaction's next round trip (``Transaction.later``): a read
after them sees them, they cost no round trip of their own on PostgreSQL, a check that fails
refuses the transaction where it is sent, and a refusal passed over can never commit."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import insert

from adjudge.errors import InternalError, StateError, StorageError
from adjudge.market import WORLD, Transfer
from adjudge.store import Store, Transaction, ledger
from adjudge.store import schema as s
from support.trips import Trips, statuses_at

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _move(tx: Transaction, debit: str, credit: str, amount: int, task_id: str = "t1") -> None:
    ledger.transfer(tx, [Transfer(debit, credit, amount)], task_id=task_id, at=T0)


def _deposited(store: Store, amount: int) -> None:
    with store.write() as tx:
        _move(tx, WORLD, "wallet:a", amount, "deposit")


def _amounts(store: Store, task_id: str) -> list[int]:
    with store.read() as tx:
        return [e["amount"] for e in ledger.entries(tx, task_id)]


def test_a_read_after_held_writes_sees_them(store: Store) -> None:
    """On the hot path's runner and through SQLAlchemy alike (``ledger.balance``)."""
    _deposited(store, 5)
    with store.write() as tx:
        _move(tx, "wallet:a", "escrow:t1", 3)
        assert ledger.balance(tx, "wallet:a") == 2
        assert [e["amount"] for e in ledger.entries(tx, "t1")] == [-3, 3]
    assert _amounts(store, "t1") == [-3, 3]


def test_a_debit_that_does_not_fit_refuses_its_transaction(store: Store) -> None:
    _deposited(store, 5)
    with pytest.raises(StateError) as refused, store.write() as tx:
        _move(tx, WORLD, "wallet:b", 1, "other")
        _move(tx, "wallet:a", "escrow:t1", 6)
    assert refused.value.code == "INSUFFICIENT_FUNDS"
    assert _amounts(store, "t1") == _amounts(store, "other") == []
    with store.read() as tx:
        assert ledger.balance(tx, "wallet:a") == 5


def test_a_refusal_passed_over_never_commits(store: Store) -> None:
    """The lines after a refused debit were sent with it: a caller that catches the refusal
    and goes on finds the transaction refused as a whole, and nothing written."""
    _deposited(store, 5)
    with pytest.raises(InternalError) as failed, store.write() as tx:
        try:
            _move(tx, "wallet:a", "escrow:t1", 6)
            ledger.entries(tx, "t1")  # the round trip that checks it on PostgreSQL
        except StateError:
            pass
        _move(tx, WORLD, "wallet:b", 1, "other")
    assert isinstance(failed.value.__cause__, StateError)
    assert _amounts(store, "t1") == _amounts(store, "other") == []


def test_a_refusal_rolled_back_to_its_savepoint_lets_the_rest_commit(store: Store) -> None:
    _deposited(store, 5)
    with store.write() as tx:
        _move(tx, WORLD, "wallet:b", 1, "before")
        tx.savepoint("move")
        with pytest.raises(StateError):
            _move(tx, "wallet:a", "escrow:t1", 6)
            tx.send()
        tx.rollback_to("move")
        _move(tx, "wallet:a", "escrow:t1", 4)
    assert _amounts(store, "before") == [-1, 1]
    assert _amounts(store, "t1") == [-4, 4]


def test_held_writes_ride_with_the_next_round_trip(store: Store) -> None:
    """A debit, its check, its lines and a savepoint cost no round trip of their own: they
    go with the read after them (SQLite's statements are calls, not round trips)."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite's statements are calls into the library: there is no round trip")
    _deposited(store, 5)
    with store.write() as tx:
        trips = Trips(tx._driver)  # the one place a round trip shows
        tx._driver = trips
        _move(tx, "wallet:a", "escrow:t1", 3)
        tx.savepoint("next")
        _move(tx, "wallet:a", "escrow:t1", 1)
        assert trips.trips == 0
        assert [e["amount"] for e in ledger.entries(tx, "t1")] == [-3, 3, -1, 1]
        assert trips.trips == 1
        with pytest.raises(StateError):
            _move(tx, "wallet:a", "escrow:t1", 2)  # one more than it holds
            tx.send()
        assert trips.trips == 2
        tx.rollback_to("next")  # the rollback and the release: one each
        assert trips.trips == 4
    assert _amounts(store, "t1") == [-3, 3]


def test_a_commit_sends_its_counts_and_credits_with_its_last_round_trip(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the commit, the lane's head is read (locked) with what was held, and the counts,
    the credits and the ``COMMIT`` go together in one more round trip: the connection's own
    commit finds nothing left to commit, and sends nothing."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite's statements are calls into the library: there is no round trip")
    found = statuses_at(monkeypatch, "commit")
    with store.write() as tx:
        trips = Trips(tx._driver)
        tx._driver = trips
        _move(tx, WORLD, "wallet:a", 5)  # a credit due, its lines held, the ledger's counts
        assert trips.trips == 0
    assert trips.trips == 2
    assert trips.statements[-1] == "COMMIT"
    assert found == [psycopg.pq.TransactionStatus.IDLE]
    assert _amounts(store, "t1") == [-5, 5]
    with store.read() as tx:
        assert ledger.balance(tx, "wallet:a") == 5
        assert ledger.movement_totals(tx, ledger.Movements(accounts=("wallet:a",)))["credits"] == 5


def test_a_held_write_that_fails_at_the_commit_leaves_nothing_written(store: Store) -> None:
    """On PostgreSQL the ``COMMIT`` rides with the writes held for it: one that fails stops
    the block there, the ``COMMIT`` with it (on SQLite it fails as it is run)."""
    _deposited(store, 5)
    with pytest.raises(StorageError), store.write() as tx:
        _move(tx, WORLD, "wallet:b", 1, "other")
        tx.later(insert(s.balances), {"account": "wallet:a", "balance": 0})  # taken
    assert _amounts(store, "other") == []
    with store.read() as tx:
        assert ledger.balance(tx, "wallet:b") == 0
        assert ledger.balance(tx, "wallet:a") == 5


def test_rows_held_together_go_as_few_statements_in_their_order(store: Store) -> None:
    """A ledger's lines (an insert of many rows, :meth:`Transaction.later_many`) are one
    statement of up to 32 rows on PostgreSQL, not one a row, and are stored in the order
    given; an upsert's rows (the credits at the commit) still go one a row."""
    _deposited(store, 1000)
    moves = [Transfer("wallet:a", f"escrow:{i:02d}", i + 1) for i in range(35)]  # 70 lines
    with store.write() as tx:
        counted = Trips(tx._driver)
        tx._driver = counted
        ledger.transfer(tx, moves, task_id="t1", at=T0)
    expected = [amount for i in range(35) for amount in (-(i + 1), i + 1)]
    assert _amounts(store, "t1") == expected
    with store.read() as tx:
        assert [ledger.balance(tx, f"escrow:{i:02d}") for i in (0, 34)] == [1, 35]
    if store.dialect == "postgresql":
        sent = counted.statements
        assert sum(sql.startswith("INSERT INTO ledger_entries") for sql in sent) == 3  # 32+32+6
        assert sum(sql.startswith("INSERT INTO balances") for sql in sent) == 35
