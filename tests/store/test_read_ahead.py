"""Statements sent together (``Transaction.together``: on PostgreSQL one query of them all, their
values written into it as literals) and reads taken ahead (``Transaction.ahead``) give what one
statement at a time gives: the same rows and values, an error raised as the block ends (and
nothing written), nothing stale after the block."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adjudge.errors import StorageError
from adjudge.market import WORLD, Transfer
from adjudge.store import Store, ledger, records

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _moved(store: Store, task_id: str, amounts: list[int]) -> None:
    with store.write() as tx:
        for amount in amounts:
            ledger.transfer(tx, [Transfer(WORLD, "wallet:a", amount)], task_id=task_id, at=T0)


def test_reads_taken_ahead_are_the_rows_read_one_at_a_time(store: Store) -> None:
    _moved(store, "task_1", [5, 7])
    _moved(store, "task_2", [11])
    with store.read() as tx:
        plain = [ledger.entries(tx, "task_1"), ledger.entries(tx, "task_2")]
        with tx.ahead([ledger.entries_read("task_1"), ledger.entries_read("task_2")]):
            assert [ledger.entries(tx, "task_1"), ledger.entries(tx, "task_2")] == plain
    assert [len(rows) for rows in plain] == [4, 2]


def test_what_a_block_left_untaken_is_not_read_after_it(store: Store) -> None:
    """A read ahead the block never took is dropped as it ends: a later read sees what was
    written since, not the rows of before."""
    _moved(store, "task_1", [5])
    with store.write() as tx:
        with tx.ahead([ledger.entries_read("task_1"), records.verdicts_read("task_1")]):
            assert records.verdicts(tx, "task_1") == []
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 9)], task_id="task_1", at=T0)
        assert [e["amount"] for e in ledger.entries(tx, "task_1")] == [-5, 5, -9, 9]


def test_an_error_sent_together_fails_the_transaction_and_writes_nothing(store: Store) -> None:
    with pytest.raises(StorageError), store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 3)], task_id="task_1", at=T0)
        with tx.together():
            tx.savepoint("a")
            tx.savepoint("a b")  # not a statement: the server refuses it
    with store.read() as tx:
        assert ledger.entries(tx, "task_1") == []


def test_a_unit_rolled_back_to_its_savepoint_leaves_the_connection_whole(store: Store) -> None:
    """A group commit's refused unit rolls back to its savepoint; the statements prepared on
    the connection before and after stay usable: every later transaction on it commits (on
    PostgreSQL the driver's prepared statements were once dropped after such a rollback, and
    the next transaction failed with STORAGE_ERROR)."""
    for n in range(8):
        _moved(store, f"task_{n}", [1, 2, 3])  # often enough for the driver to prepare them
        with store.write() as tx:
            ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 4)], task_id=f"task_{n}", at=T0)
            tx.savepoint("unit")
            ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 5)], task_id=f"task_{n}", at=T0)
            tx.rollback_to("unit")
    with store.read() as tx:
        assert [e["amount"] for e in ledger.entries(tx, "task_7") if e["amount"] > 0] == [
            1,
            2,
            3,
            4,
        ]


def test_each_statement_keeps_its_rows_one_at_a_time_and_sent_together(store: Store) -> None:
    """A statement's rows are its own until the transaction's next statement (on SQLite the
    one cursor a transaction's statements share); each one sent together has its own, there
    as the block ends — also after a block nested in it has ended."""
    _moved(store, "task_1", [5])
    _moved(store, "task_2", [11, 12])
    one, two = ledger.entries_read("task_1"), ledger.entries_read("task_2")
    with store.write() as tx:
        first = tx.run(*one)
        assert len(first.fetchall()) == 2
        second = tx.run(*two)
        assert len(second.fetchall()) == 4
        assert (second is first) == (store.dialect == "sqlite")
        with tx.together():
            with tx.together():
                inner = tx.run(*one)
            outer = [tx.run(*one), tx.run(*two)]
        assert len({id(inner), *map(id, outer)}) == 3
        assert [len(c.fetchall()) for c in (inner, *outer)] == [2, 2, 4]
