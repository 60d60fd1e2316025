"""A verifier's reads and writes cost what they touch, not what the store holds: a claim of
review work reads the tasks awaiting verification and, for each, the verifier's seat by its key
(``id IN (its seats)`` read every seat it ever held, on every claim: a worker claims every few
seconds, inside a write); a key's revocation clears the account's active key by the account's
key (by the active key alone, it read every account)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adjudge.store import Store, leases, records
from support.plans import sqlite_plans


def test_a_claim_reads_the_verifiers_seats_by_their_key(sqlite_store: Store) -> None:
    """SQLite's plan: the tasks through the status's index, the verifier's seat, vote and lease
    of each by its key, and no read of the seats by verifier alone."""
    now = datetime(2026, 3, 1, tzinfo=UTC)
    [(_, plan)] = sqlite_plans(
        sqlite_store,
        lambda tx: leases.claim(tx, "vic", now=now, lease=timedelta(seconds=60), limit=5),
    )
    seats = [step for step in plan if step.startswith("SEARCH task_seats")]
    assert seats and all("(task_id=? AND verifier=?)" in step for step in seats), plan
    assert any(step.startswith("SEARCH tasks USING INDEX ix_tasks_status") for step in plan), plan


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
