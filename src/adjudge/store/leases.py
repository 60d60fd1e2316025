"""Review leases: which submission awaiting a verifier a worker holds, and its failed tries."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.market import Status
from adjudge.store import schema as s
from adjudge.store.records import StoredTask, stored_task
from adjudge.store.transaction import Transaction


def claim(
    tx: Transaction,
    verifiers: Sequence[str] | None,
    *,
    now: datetime,
    lease: timedelta,
    limit: int,
) -> list[StoredTask]:
    """Take up to ``limit`` submissions waiting for a verifier, leased until ``now + lease``.

    A submission is free when nobody holds an unexpired lease on it and its worker has not
    given up. On PostgreSQL the task rows are taken ``FOR UPDATE SKIP LOCKED``, so workers
    polling at once never take the same one; SQLite's write lock serializes claims.
    """
    rl = s.review_leases
    joined = s.tasks.outerjoin(
        rl, and_(rl.c.task_id == s.tasks.c.id, rl.c.attempt == s.tasks.c.attempts)
    )
    q = (
        select(s.tasks, rl.c.tries)
        .select_from(joined)
        .where(s.tasks.c.status == Status.AWAITING_VERIFICATION.value)
        .where(or_(rl.c.task_id.is_(None), and_(rl.c.gave_up.is_(False), rl.c.locked_until <= now)))
        .order_by(s.tasks.c.submitted_at)
        .limit(limit)
    )
    if verifiers is not None:
        q = q.where(s.tasks.c.verifier.in_(list(verifiers)))
    if tx.dialect == "postgresql":
        q = q.with_for_update(skip_locked=True, of=s.tasks)
    claimed = []
    for row in tx.conn.execute(q).all():
        stored = stored_task(row._mapping)
        if _take(tx, stored.task.id, stored.task.attempts, now=now, until=now + lease):
            claimed.append(stored)
    return claimed


def _take(tx: Transaction, task_id: str, attempt: int, *, now: datetime, until: datetime) -> bool:
    """Lease one submission if it is still free; False if another worker just took it.

    One statement decides: insert the lease, or, if one exists, extend it only when it has
    expired and its worker has not given up. Under PostgreSQL's read-committed isolation the
    lease row a claim saw can be a moment old, so the check is made again where it is written.
    """
    rl = s.review_leases
    dialect: Any = postgresql if tx.dialect == "postgresql" else sqlite
    stmt = dialect.insert(rl).values(
        task_id=task_id, attempt=attempt, tries=0, locked_until=until, gave_up=False
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[rl.c.task_id, rl.c.attempt],
        set_={"locked_until": until},
        where=and_(rl.c.gave_up.is_(False), rl.c.locked_until <= now),
    ).returning(rl.c.task_id)
    return tx.conn.execute(stmt).first() is not None


def failed(
    tx: Transaction, task_id: str, attempt: int, *, error: str, now: datetime, max_tries: int
) -> bool | None:
    """Count a failed judgment; release the lease for a later poll. True once given up.

    None when no lease exists for that submission (nothing was claimed).
    """
    rl = s.review_leases
    where = and_(rl.c.task_id == task_id, rl.c.attempt == attempt)
    found = tx.conn.execute(select(rl.c.tries).where(where)).scalar_one_or_none()
    if found is None:
        return None
    tries = int(found) + 1
    gave_up = tries >= max_tries
    tx.conn.execute(
        update(rl)
        .where(where)
        .values(tries=tries, locked_until=now, gave_up=gave_up, last_error=error[:500])
    )
    return gave_up


def lease(tx: Transaction, task_id: str, attempt: int) -> dict[str, Any] | None:
    """A submission's lease row, or None."""
    rl = s.review_leases
    row = tx.conn.execute(
        select(rl).where(and_(rl.c.task_id == task_id, rl.c.attempt == attempt))
    ).first()
    return dict(row._mapping) if row else None
