"""The group commit's lone unit (alone in its batch: each one, when calls come one at a time)
runs without a savepoint, and still answers only what committed, undoes its own refusal whole,
and runs again after a lost race. Batched units undone one by one: test_deferred_credits.
A caller that gives up stops nothing; on SQLite a loop commits its own units without waiting."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from psycopg.errors import DeadlockDetected, UniqueViolation
from sqlalchemy.exc import OperationalError

from adjudge.app import unit as unit_module
from adjudge.app.unit import GroupCommit
from adjudge.errors import StateError
from adjudge.market import WORLD, Transfer
from adjudge.store import ConcurrentUpdate, Store, Transaction, ledger, receipt_log
from support.batches import one_batch
from support.trips import traced

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)


def _credit(tx: Transaction, amount: int) -> None:
    ledger.transfer(tx, [Transfer(WORLD, "wallet:a", amount)], task_id=None, at=T0)


def _credit_five(ran_on: list[str]) -> Callable[[Transaction], str]:
    """A unit crediting 5 that notes the thread it ran on."""

    def credit(tx: Transaction) -> str:
        ran_on.append(threading.current_thread().name)
        _credit(tx, 5)
        return "done"

    return credit


def _balance(store: Store) -> int:
    with store.read() as tx:
        return ledger.balance(tx, "wallet:a")


def test_a_lone_unit_commits_and_its_refusal_writes_nothing(store: Store) -> None:
    commits = GroupCommit(store, threads=1)
    try:
        assert commits.submit(lambda tx: _credit(tx, 5) or "done").result(10) == "done"

        def refused(tx: Transaction) -> None:
            _credit(tx, 7)
            raise StateError("refused after its credit", code="TEST_REFUSED")

        with pytest.raises(StateError):
            commits.submit(refused).result(10)
    finally:
        commits.close()
    assert _balance(store) == 5


def test_a_lone_unit_that_lost_a_race_runs_again_and_commits_once(store: Store) -> None:
    commits = GroupCommit(store, threads=1)
    runs: list[int] = []

    def raced_once(tx: Transaction) -> int:
        _credit(tx, 3)
        runs.append(1)
        if len(runs) == 1:
            raise ConcurrentUpdate("another writer changed the row first")
        return len(runs)

    try:
        assert commits.submit(raced_once).result(10) == 2
    finally:
        commits.close()
    assert _balance(store) == 3  # the first run's credit was rolled back with it


def test_a_caller_that_gave_up_never_stops_the_commits_of_the_others(store: Store) -> None:
    """A unit's caller cancelled (its task ended, its client left) while the unit waited in the
    queue: the unit is not run, and the thread goes on committing the others. (Answering a
    cancelled future raises: the thread used to die there, and every later write waited.)"""
    commits = GroupCommit(store, threads=1)
    started, release = threading.Event(), threading.Event()

    def slow(tx: Transaction) -> str:
        started.set()
        release.wait(10)
        _credit(tx, 1)
        return "slow"

    try:
        first = commits.submit(slow)
        assert started.wait(10)
        given_up = commits.submit(lambda tx: _credit(tx, 100))
        assert given_up.cancel()
        release.set()
        assert first.result(10) == "slow"
        assert commits.submit(lambda tx: _credit(tx, 10) or "after").result(10) == "after"
    finally:
        commits.close()
    assert _balance(store) == 11  # the cancelled unit's credit was never written


def test_on_a_local_store_a_loop_commits_its_turn_itself_inone_batch(sqlite_store: Store) -> None:
    """Units awaited during one turn of the loop are committed on the loop, in one
    transaction; each refusal is its own."""
    commits = GroupCommit(sqlite_store, threads=1)
    where: list[tuple[str, int]] = []

    def unit(amount: int) -> Any:
        def fn(tx: Transaction) -> int:
            where.append((threading.current_thread().name, id(tx)))
            _credit(tx, amount)
            if amount == 7:
                raise StateError("refused after its credit", code="TEST_REFUSED")
            return amount

        return fn

    async def turn() -> list[Any]:
        runs = [commits.run(unit(n)) for n in (1, 2, 7, 4)]
        return await asyncio.gather(*runs, return_exceptions=True)

    try:
        got = asyncio.run(turn())
    finally:
        commits.close()
    assert got[:2] == [1, 2] and got[3] == 4 and isinstance(got[2], StateError)
    assert {name for name, _ in where} == {threading.current_thread().name}
    assert len({tx for _, tx in where}) == 1
    assert _balance(sqlite_store) == 7


def test_a_loop_never_waits_for_another_writer_of_a_local_store(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer holds the store (here another process's, holding the file's write lock):
    the loop tries again a moment later, a few times, then hands the unit to the commit thread
    and goes on turning; the unit commits once the other writer is done."""
    monkeypatch.setattr(unit_module, "LOOP_TRIES", 3)
    commits = GroupCommit(sqlite_store, threads=1)
    other = sqlite3.connect(sqlite_store.engine.url.database or "", isolation_level=None)
    ran_on: list[str] = []
    credit = _credit_five(ran_on)

    async def while_held() -> tuple[str, int]:
        other.execute("BEGIN IMMEDIATE")  # another process's writer, as SQLite sees it
        call = asyncio.ensure_future(commits.run(credit))
        turns = 0
        while turns < 20 or not any(t.name == commits.name for t in threading.enumerate()):
            await asyncio.sleep(0.01)  # the loop keeps turning while the unit waits
            turns += 1
            assert turns < 1000
        assert not call.done()
        other.execute("COMMIT")
        return await asyncio.wait_for(call, 35), turns

    try:
        answer, turns = asyncio.run(while_held())
    finally:
        other.close()
        commits.close()
    assert answer == "done" and turns >= 20
    assert ran_on == [commits.name]
    assert _balance(sqlite_store) == 5


def test_a_store_held_briefly_is_written_by_the_loop_once_free(sqlite_store: Store) -> None:
    """A holder that lets go within the loop's tries: the loop itself commits the unit."""
    commits = GroupCommit(sqlite_store, threads=1)
    other = sqlite3.connect(sqlite_store.engine.url.database or "", isolation_level=None)
    ran_on: list[str] = []
    credit = _credit_five(ran_on)

    async def briefly_held() -> str:
        other.execute("BEGIN IMMEDIATE")
        call = asyncio.ensure_future(commits.run(credit))
        await asyncio.sleep(0.005)
        assert not call.done()
        other.execute("COMMIT")
        return await asyncio.wait_for(call, 10)

    try:
        assert asyncio.run(briefly_held()) == "done"
    finally:
        other.close()
        commits.close()
    assert ran_on == [threading.current_thread().name]
    assert _balance(sqlite_store) == 5


def test_a_loop_unit_given_up_before_its_turn_is_not_run(sqlite_store: Store) -> None:
    commits = GroupCommit(sqlite_store, threads=1)

    async def give_up() -> str:
        gone = asyncio.ensure_future(commits.run(lambda tx: _credit(tx, 100)))
        kept = asyncio.ensure_future(commits.run(lambda tx: _credit(tx, 1) or "kept"))
        await asyncio.sleep(0)  # both queued their units
        gone.cancel()
        return await kept

    try:
        assert asyncio.run(give_up()) == "kept"
    finally:
        commits.close()
    assert _balance(sqlite_store) == 1


def test_a_heavy_unit_is_committed_by_the_thread_even_on_a_local_store(
    sqlite_store: Store,
) -> None:
    commits = GroupCommit(sqlite_store, threads=1)
    ran_on: list[str] = []
    credit = _credit_five(ran_on)

    try:
        assert asyncio.run(commits.run(credit, on_loop=False)) == "done"
    finally:
        commits.close()
    assert ran_on == [commits.name]
    assert _balance(sqlite_store) == 5


def test_a_loop_unit_that_waits_for_another_unit_is_refused_not_stuck(
    sqlite_store: Store,
) -> None:
    """A unit the loop commits that waited for another unit would wait for a writer it holds
    itself: it is refused at once, and nothing it wrote stays."""
    commits = GroupCommit(sqlite_store, threads=1)

    def nested(tx: Transaction) -> None:
        _credit(tx, 5)
        commits.submit(lambda inner: _credit(inner, 7)).result(5)

    try:
        with pytest.raises(RuntimeError, match="waited for another unit"):
            asyncio.run(asyncio.wait_for(commits.run(nested), 10))
        assert asyncio.run(commits.run(lambda tx: _credit(tx, 1) or "after")) == "after"
    finally:
        commits.close()
    assert _balance(sqlite_store) == 1


def _receipted(n: int, *, refuse: bool = False) -> Callable[[Transaction], str]:
    """A unit appending one receipt (which names the head it was placed after), then, when
    ``refuse``, signing it onto the lane and refused."""

    def issue(place: Any) -> dict[str, Any]:
        head = place.head
        return {"digest": f"sha256:{n:064x}", "after": list(head) if head else None}

    def unit(tx: Transaction) -> str:
        receipt_log.append(tx, issue, task_id=None, at=T0)
        if refuse:
            receipt_log.flush(tx)  # on the lane (taking it) before the refusal undoes it
            raise StateError("refused after its receipt", code="TEST_REFUSED")
        return f"sha256:{n:064x}"

    return unit


def test_a_batch_chains_its_receipts_past_the_units_refused(store: Store) -> None:
    """One batch: the first unit to take the lane refused, then one kept, one refused, one
    kept. The log holds the two kept, each chained after the one before it (the lane's head
    a unit moved is kept by the transaction, not read again; one a refusal undid is read
    again), and the next transaction chains after the last."""
    commits = GroupCommit(store, threads=1)
    try:
        units = [_receipted(1, refuse=True), _receipted(2), _receipted(3, refuse=True)]
        outcomes = one_batch(commits, [*units, _receipted(4)])
        refused = "TEST_REFUSED"
        assert outcomes == [refused, f"sha256:{2:064x}", refused, f"sha256:{4:064x}"]
        commits.submit(_receipted(5)).result(10)
    finally:
        commits.close()
    with store.read() as tx:
        log = receipt_log.chain(tx)
    assert [r.digest for r in log] == [f"sha256:{n:064x}" for n in (2, 4, 5)]
    assert [r.seq for r in log] == [1, 2, 3]
    assert len({r.lane for r in log}) == 1
    assert [r.previous for r in log] == [None, log[0].digest, log[1].digest]
    assert [r.body["after"] for r in log] == [None, [log[0].digest, 0], [log[1].digest, 1]]


def test_a_batch_moves_its_lanes_head_once_and_releases_no_savepoint(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four units chaining a receipt each in one batch: the lane's head written once, by the
    commit, and on PostgreSQL one savepoint a unit, nested, none released (the commit keeps
    them all; SQLite releases each, its nested savepoints costing its journal)."""
    sent = traced(monkeypatch)
    commits = GroupCommit(store, threads=1)
    try:
        outcomes = one_batch(commits, [_receipted(n) for n in range(1, 5)])
    finally:
        commits.close()
    assert outcomes == [f"sha256:{n:064x}" for n in range(1, 5)]
    (batch,) = [t.statements for t in sent if sum("SAVEPOINT" in sql for sql in t.statements)]
    marks = [f"SAVEPOINT unit_{i}" for i in range(4)]
    if store.dialect == "sqlite":
        marks[1:] = [
            sql for i in range(1, 4) for sql in (f"RELEASE SAVEPOINT unit_{i - 1}", marks[i])
        ]
    assert [sql for sql in batch if "SAVEPOINT" in sql] == marks
    assert sum(sql.startswith("UPDATE chain_lanes") for sql in batch) == 1
    with store.read() as tx:
        log = receipt_log.chain(tx)
    assert [r.seq for r in log] == [1, 2, 3, 4]
    assert [r.previous for r in log] == [None, *(r.digest for r in log[:3])]


def test_refused_units_leave_the_next_commits_whole(store: Store) -> None:
    """Units refused and rolled back to their savepoints, again and again, among units that
    commit: every unit that should commit does (on PostgreSQL such a rollback once left the
    connection's next transaction failing with STORAGE_ERROR: anyone's refused request failed
    the next request of someone else)."""
    commits = GroupCommit(store, threads=1)

    def refused(tx: Transaction) -> None:
        _credit(tx, 7)
        raise StateError("refused after its credit", code="TEST_REFUSED")

    try:
        for _ in range(8):
            # Submitted together, they share transactions (a batch forms while one commits).
            units = [lambda tx: _credit(tx, 1) or "done", refused] * 3
            futures = [commits.submit(unit) for unit in units]
            for n, future in enumerate(futures):
                if n % 2:
                    with pytest.raises(StateError):
                        future.result(10)
                else:
                    assert future.result(10) == "done"
    finally:
        commits.close()
    assert _balance(store) == 24


def test_a_unit_whose_held_debit_does_not_fit_is_refused_alone(store: Store) -> None:
    """A unit's held writes are checked before the next unit begins: one whose debit does not
    fit is rolled back alone (its lines with it), one that catches that refusal and goes on
    is refused as a whole, and the units around them commit."""
    commits = GroupCommit(store, threads=1)

    def overdraws(tx: Transaction) -> str:
        _credit(tx, 1)
        ledger.transfer(tx, [Transfer("wallet:a", "escrow:x", 1000)], task_id="x", at=T0)
        return "done"

    def passes_over(tx: Transaction) -> str:
        try:
            ledger.transfer(tx, [Transfer("wallet:a", "escrow:x", 1000)], task_id="x", at=T0)
            ledger.entries(tx, "x")  # the round trip that checks it on PostgreSQL
        except StateError:
            pass
        return "done"

    try:
        units = [lambda tx: _credit(tx, 5) or "done", overdraws, passes_over]
        outcomes = one_batch(commits, [*units, lambda tx: _credit(tx, 2) or "done"])
        assert outcomes == ["done", "INSUFFICIENT_FUNDS", "INTERNAL_ERROR", "done"]
    finally:
        commits.close()
    assert _balance(store) == 7
    with store.read() as tx:
        assert ledger.entries(tx, "x") == []


def test_a_batched_unit_the_database_chose_as_a_deadlocks_victim_runs_again(
    store: Store,
) -> None:
    """A unit of a batch whose statement PostgreSQL ended to break a deadlock (two processes'
    batches take rows in no common order) lost a race: its savepoint is rolled back
    and it runs again, once, beside the others; a unit whose statement failed otherwise is
    answered as a storage error, never with the driver's own exception."""
    runs: list[int] = []

    def deadlocked_once(tx: Transaction) -> str:
        _credit(tx, 3)
        runs.append(1)
        if len(runs) == 1:
            raise OperationalError("(statements sent together)", {}, DeadlockDetected("deadlock"))
        return "again"

    def broken(tx: Transaction) -> str:
        _credit(tx, 100)
        raise OperationalError("(statements sent together)", {}, UniqueViolation("duplicate"))

    commits = GroupCommit(store, threads=1)
    try:
        outcomes = one_batch(commits, [deadlocked_once, lambda tx: _credit(tx, 5) or "5", broken])
    finally:
        commits.close()
    assert outcomes == ["again", "5", "STORAGE_ERROR"]
    assert len(runs) == 2
    assert _balance(store) == 8  # the first run's credit and the broken unit's were undone
