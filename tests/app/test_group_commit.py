"""The group commit's lone unit (alone in its batch: each one, when calls come one at a time)
runs without a savepoint, and still answers only what committed, undoes its own refusal whole,
and runs again after a lost race. Batched units undone one by one: test_deferred_credits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adjudge.app.unit import GroupCommit
from adjudge.errors import StateError
from adjudge.market import WORLD, Transfer
from adjudge.store import ConcurrentUpdate, Store, Transaction, ledger

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)


def _credit(tx: Transaction, amount: int) -> None:
    ledger.transfer(tx, [Transfer(WORLD, "wallet:a", amount)], task_id=None, at=T0)


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
