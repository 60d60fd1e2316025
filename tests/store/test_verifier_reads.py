"""A verifier's reads and writes cost what they touch, not what the store holds: a claim of
review work reads the verifier's own review queue, oldest first, and each task, vote and lease by
its key (it read every task awaiting verification, every verifier's, and sorted them: a worker
claims every few seconds, inside a write; before that, ``id IN (its seats)`` read every seat it
ever held); a key's revocation clears the account's active key by the account's key (by the
active key alone, it read every account)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adjudge.store import Store, leases, records
from support.plans import sqlite_plans


def test_a_claim_reads_the_verifiers_queue_and_each_task_by_its_key(sqlite_store: Store) -> None:
    """SQLite's plan: the verifier's range of its queue in order, then the task, its vote and
    its lease by their keys; no read of the tasks by status, nothing sorted."""
    now = datetime(2026, 3, 1, tzinfo=UTC)
    [(_, plan)] = sqlite_plans(
        sqlite_store,
        lambda tx: leases.claim(tx, "vic", now=now, lease=timedelta(seconds=60), limit=5),
    )
    assert plan[0] == "SEARCH review_queue USING INDEX ix_review_queue_verifier_oldest (verifier=?)"
    keyed = {
        "tasks": "(id=?)",
        "task_votes": "(task_id=? AND attempt=? AND verifier=?)",
        "review_leases": "(task_id=? AND attempt=? AND verifier=?)",
    }
    for table, key in keyed.items():
        steps = [step for step in plan if f"SEARCH {table} " in step]
        assert steps and all(key in step for step in steps), plan
    assert not any("TEMP B-TREE" in step or step.startswith("SCAN") for step in plan), plan


def test_a_revocation_clears_the_active_key_by_the_accounts_key(sqlite_store: Store) -> None:
    """SQLite's plan for each write of a revocation searches by a key; none scans a table."""
    at = datetime(2026, 3, 1, tzinfo=UTC)
    with sqlite_store.write() as tx:
        records.create_account(tx, "vic", ["verifier"], "k-vic", opt_in=True, at=at)
    plans = sqlite_plans(
        sqlite_store,
        lambda tx: records.revoke_verifier_key(tx, "vic", "sha256:" + "0" * 64, at=at),
        write=True,
    )
    steps = [step for _, plan in plans for step in plan]
    assert len(plans) == 2 and all(step.startswith("SEARCH") for step in steps), plans
