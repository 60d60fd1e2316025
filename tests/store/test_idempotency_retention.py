"""The answers stored under Idempotency-Keys are forgotten by the upkeep once past their
retention, oldest first on the time's index; a retry within it is the stored answer, one after
it is decided anew; revision 0053 downgrades cleanly."""

from __future__ import annotations

from sqlalchemy import func, select

from adjudge.app import maintenance
from adjudge.store import Store
from adjudge.store import schema as s
from support.harness import make_harness
from support.migrations import downgrade
from support.plans import sqlite_plans


def _stored(store: Store) -> int:
    with store.read() as tx:
        return int(tx.conn.execute(select(func.count()).select_from(s.idempotency)).scalar_one())


def test_answers_past_their_retention_are_forgotten(store: Store) -> None:
    """On each database: three deposits under keys, a fourth a day before the retention ends;
    past it, the upkeep forgets the three (in batches of two here) and keeps the fourth; a
    retry of a forgotten key credits again (decided anew), of the kept one does not."""
    h = make_harness(store)
    before = _stored(store)
    for n in range(3):
        h.call("root", "POST", "/accounts/bob/deposits", {"amount": "100"}, Idempotency_Key=f"d{n}")
    h.advance(days=29)
    h.call("root", "POST", "/accounts/bob/deposits", {"amount": "100"}, Idempotency_Key="late")
    assert _stored(store) == before + 4
    h.advance(days=1, minutes=1)
    balance = h.balance("wallet:bob")
    with __import__("pytest").MonkeyPatch.context() as patch:
        patch.setattr(maintenance, "PRUNE_BATCH", 2)
        done = maintenance.run_once(h.app)
    assert done["forgotten"] == 3 + before and done["failed"] == 0
    assert _stored(store) == 1
    kept = h.call(
        "root", "POST", "/accounts/bob/deposits", {"amount": "100"}, Idempotency_Key="late"
    )
    assert kept.headers.get("Idempotent-Replayed") == "true"
    assert h.balance("wallet:bob") == balance
    again = h.call(
        "root", "POST", "/accounts/bob/deposits", {"amount": "100"}, Idempotency_Key="d0"
    )
    assert again.status_code == 200 and "Idempotent-Replayed" not in again.headers
    assert h.balance("wallet:bob") == balance + 100
    downgrade(store, "0052")
    store.migrate()


def test_the_oldest_answers_are_read_on_the_times_index(sqlite_store: Store) -> None:
    """SQLite's plan: the pruning's read searches ``ix_idempotency_at``, sorting nothing."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from adjudge.store import idempotency  # noqa: PLC0415

    now = datetime(2026, 3, 1, tzinfo=UTC)
    [(_, plan), *_] = sqlite_plans(
        sqlite_store, lambda tx: idempotency.prune(tx, now, 10), write=True
    )
    assert any("ix_idempotency_at" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan
