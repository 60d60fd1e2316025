"""A read (``Store.read``) only reads: a write in it is refused before it is sent (one
through SQLAlchemy on SQLite is dropped by the read's rollback); on PostgreSQL it is no
transaction of its own, so it sends no ``BEGIN`` and no ``ROLLBACK`` (each of its statements
reads what was committed as it began, as in a read-committed transaction); and a read of one
moment reads one snapshot on both databases."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import insert, update

from adjudge.errors import InternalError
from adjudge.market import WORLD, Transfer
from adjudge.store import Store, ledger
from adjudge.store import schema as s
from support.trips import statuses_at

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _balance(store: Store, account: str) -> int:
    with store.read() as tx:
        return ledger.balance(tx, account)


def test_a_write_in_a_read_is_refused_and_nothing_is_written(store: Store) -> None:
    """On the hot path's runner (a held write, rows inserted), and on PostgreSQL through
    SQLAlchemy too (on SQLite a read's transaction is rolled back, dropping those)."""
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 5)], task_id=None, at=T0)
    attempts = [
        lambda tx: ledger.transfer(tx, [Transfer("wallet:a", "wallet:b", 2)], task_id=None, at=T0),
        lambda tx: tx.later(insert(s.balances), {"account": "wallet:c", "balance": 1}),
    ]
    through_sqlalchemy = [
        lambda tx: tx.conn.execute(update(s.balances).values(balance=99)),
        lambda tx: tx.conn.execute(insert(s.balances), [{"account": "wallet:d", "balance": 1}]),
    ]
    if store.dialect == "postgresql":
        attempts += through_sqlalchemy
    else:
        for attempt in through_sqlalchemy:
            with store.read() as tx:
                attempt(tx)
    for attempt in attempts:
        with pytest.raises(InternalError) as refused, store.read() as tx:
            assert ledger.balance(tx, "wallet:a") == 5  # a read goes on reading
            attempt(tx)
            tx.send()
        assert refused.value.code == "INTERNAL_ERROR"
    balances = [_balance(store, a) for a in ("wallet:a", "wallet:b", "wallet:c", "wallet:d")]
    assert balances == [5, 0, 0, 0]


def test_a_read_on_postgresql_sends_no_begin_and_no_rollback(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its statements leave the connection idle (no transaction open), the connection's
    rollback at the end finds nothing to roll back, and its reads read what is committed."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite's read is one transaction, its statements reading one snapshot")
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 5)], task_id=None, at=T0)
    found = statuses_at(monkeypatch, "rollback")
    idle = psycopg.pq.TransactionStatus.IDLE
    with store.read() as tx:
        assert ledger.balance(tx, "wallet:a") == 5  # through SQLAlchemy
        assert tx._driver.info.transaction_status == idle
        assert ledger.entries(tx, "t1") == []  # on the hot path's runner
        assert tx._driver.info.transaction_status == idle
        reader = tx._driver
    assert found and set(found) == {idle}
    with store.write() as tx:  # on the same connection, a transaction as before
        ledger.transfer(tx, [Transfer("wallet:a", "wallet:b", 2)], task_id=None, at=T0)
        assert ledger.balance(tx, "wallet:a") == 3
        assert tx._driver is reader
        assert tx._driver.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    assert [_balance(store, a) for a in ("wallet:a", "wallet:b")] == [3, 2]


def test_a_read_of_one_moment_sees_no_commit_made_while_it_reads(store: Store) -> None:
    """A dashboard's figures, the books' sums: a commit made between two of its statements is
    not seen by the second (on SQLite every read is one snapshot; on PostgreSQL a plain read's
    second statement sees it, as under read committed it always did)."""
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 5)], task_id=None, at=T0)

    def between() -> None:
        with store.write() as tx:
            ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 1)], task_id=None, at=T0)

    with store.read(one_moment=True) as tx:
        first = ledger.balance(tx, "wallet:a")
        between()
        assert ledger.balance(tx, "wallet:a") == first == 5
    assert _balance(store, "wallet:a") == 6
    between()  # its connection writes again: neither read-only nor of repeatable read now
    assert _balance(store, "wallet:a") == 7
    if store.dialect == "postgresql":
        with store.read() as tx:
            first = ledger.balance(tx, "wallet:a")
            between()
            assert (first, ledger.balance(tx, "wallet:a")) == (7, 8)
