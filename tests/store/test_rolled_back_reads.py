"""A unit of a group commit rolled back to its savepoint leaves nothing it read behind: the
rows a transaction keeps for its rest (``Transaction.cache``) may be rows the rollback undid."""

from __future__ import annotations

from datetime import UTC, datetime

from adjudge.store import Store, records
from adjudge.store.records import Submission
from support.harness import make_harness

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _submission(task_id: str, result: str) -> Submission:
    return Submission(task_id, 1, result, f"sha256:{result}", T0)


def test_a_submission_read_by_a_unit_rolled_back_is_not_read_after_it(store: Store) -> None:
    """On each database: a unit adds a task's first submission and reads it, and is rolled
    back; the next unit of the transaction adds a different first submission and reads the one
    it added (before, it read the undone one, kept from the unit rolled back: a finalize there
    would have judged a result nobody submitted)."""
    task_id = make_harness(store).post("auto")
    with store.write() as tx:
        tx.savepoint("unit_0")
        records.add_submission(tx, _submission(task_id, "undone"))
        assert records.submission(tx, task_id, 1) == _submission(task_id, "undone")
        tx.rollback_to("unit_0")
        tx.savepoint("unit_1")
        assert records.submission(tx, task_id, 1) is None
        records.add_submission(tx, _submission(task_id, "kept"))
        assert records.submission(tx, task_id, 1) == _submission(task_id, "kept")
    with store.read() as tx:
        assert records.submission(tx, task_id, 1) == _submission(task_id, "kept")
