"""Review leases: which submission awaiting a verifier a worker holds for it, and its failed
tries."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, and_, bindparam, exists, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.market import Status
from adjudge.store import records
from adjudge.store import schema as s
from adjudge.store.records import StoredTask, stored_task
from adjudge.store.transaction import Transaction


class Taken(NamedTuple):
    """A submission a claim leased, and the token naming that lease."""

    stored: StoredTask
    token: str


def claim(
    tx: Transaction,
    verifier: str,
    *,
    now: datetime,
    lease: timedelta,
    limit: int,
) -> list[Taken]:
    """Take up to ``limit`` submissions waiting for ``verifier``, leased until ``now + lease``:
    those of the tasks it is the one verifier of, and of the panels it sits on that it has not
    voted on yet (each panel verifier leases a submission for itself).

    A submission is free for a verifier when nobody holds an unexpired lease on it for that
    verifier and its worker has not given up. On PostgreSQL the task rows are taken ``FOR
    UPDATE SKIP LOCKED``, so workers polling at once never take the same one; SQLite's write
    lock serializes claims.

    Each lease is named by a fresh random token, written to its row: a failure report counts
    only with the token of the lease in force (:func:`failed`), so a worker that stalled past
    its lease cannot end the lease another worker took since.

    The tasks come without their brief and criteria (empty): a claim is a write, and what its
    jobs carry is read after it commits (:meth:`adjudge.app.reviews.Reviews.claim`).
    """
    rl, t, tv, rq = s.review_leases, s.tasks, s.task_votes, s.review_queue
    light = [c for c in t.c if c.name not in ("brief", "criteria")]
    # The verifier's queue, oldest first (revision 0051): this verifier's submissions waiting,
    # where a claim read every task awaiting verification, every verifier's, and sorted them.
    joined = rq.join(t, t.c.id == rq.c.task_id).outerjoin(
        rl,
        and_(rl.c.task_id == t.c.id, rl.c.attempt == t.c.attempts, rl.c.verifier == verifier),
    )
    voted = exists().where(
        tv.c.task_id == t.c.id, tv.c.attempt == t.c.attempts, tv.c.verifier == verifier
    )
    q = (
        select(*light, rl.c.tries)
        .select_from(joined)
        .where(rq.c.verifier == verifier, rq.c.attempt == t.c.attempts)
        .where(t.c.status == Status.AWAITING_VERIFICATION.value, ~voted)
        .where(or_(rl.c.task_id.is_(None), and_(rl.c.gave_up.is_(False), rl.c.locked_until <= now)))
        .order_by(rq.c.submitted_at, rq.c.task_id)
        .limit(limit)
    )
    if tx.dialect == "postgresql":
        q = q.with_for_update(skip_locked=True, of=t)
    claimed = []
    for row in tx.conn.execute(q).all():
        stored = stored_task({**row._mapping, "brief": "", "criteria": {}})
        task, token = stored.task, secrets.token_urlsafe(24)
        if _take(tx, task.id, task.attempts, verifier, now=now, until=now + lease, token=token):
            claimed.append(Taken(stored, token))
    return claimed


def _take(
    tx: Transaction,
    task_id: str,
    attempt: int,
    verifier: str,
    *,
    now: datetime,
    until: datetime,
    token: str,
) -> bool:
    """Lease one submission for ``verifier`` under ``token`` if it is still free; False if
    another worker just took it.

    One statement decides: insert the lease, or, if one exists, extend it only when it has
    expired and its worker has not given up. Under PostgreSQL's read-committed isolation the
    lease row a claim saw can be a moment old, so the check is made again where it is written.
    Built once (:data:`_TAKE`): a claim takes up to 50 leases in its write, and building each
    statement anew cost more than running it.
    """
    params = {
        "task_id": task_id,
        "attempt": attempt,
        "verifier": verifier,
        "k_until": until,
        "k_now": now,
        "k_token": token,
    }
    return bool(tx.run(_TAKE[tx.dialect], params).fetchall())


def _take_statement(dialect: str) -> Any:
    rl = s.review_leases
    module: Any = postgresql if dialect == "postgresql" else sqlite
    stmt = module.insert(rl).values(
        task_id=bindparam("task_id"),
        attempt=bindparam("attempt"),
        verifier=bindparam("verifier"),
        tries=0,
        locked_until=bindparam("k_until", type_=rl.c.locked_until.type),
        gave_up=False,
        token=bindparam("k_token", type_=rl.c.token.type),
    )
    return stmt.on_conflict_do_update(
        index_elements=[rl.c.task_id, rl.c.attempt, rl.c.verifier],
        set_={
            "locked_until": bindparam("k_until", type_=rl.c.locked_until.type),
            "token": bindparam("k_token", type_=rl.c.token.type),
        },
        where=and_(
            rl.c.gave_up.is_(False),
            rl.c.locked_until <= bindparam("k_now", type_=rl.c.locked_until.type),
        ),
    ).returning(rl.c.task_id)


_TAKE = {d: _take_statement(d) for d in ("sqlite", "postgresql")}


def failed(
    tx: Transaction,
    task_id: str,
    attempt: int,
    verifier: str,
    *,
    token: str,
    error: str,
    now: datetime,
    max_tries: int,
) -> bool | None:
    """Count a failed judgment by the worker holding the lease ``token`` names, and end that
    lease for a later poll (its token then names none). True once given up.

    None when ``token`` is not the lease in force for that submission and verifier (another
    claim took it since, a report ended it, or it was never claimed), or when the submission no
    longer awaits that verifier (it is off the verifier's queue: its verdict or vote is in, its
    worker gave up, or the task moved on): nothing is written. One statement decides, so on
    PostgreSQL a claim or a verdict committed since this transaction read the row is seen where
    the report writes.
    """
    rl, rq = s.review_leases, s.review_queue
    awaited = exists().where(
        rq.c.task_id == task_id, rq.c.attempt == attempt, rq.c.verifier == verifier
    )
    tried = (
        update(rl)
        .where(_key(task_id, attempt, verifier), rl.c.token == token, awaited)
        .values(
            tries=rl.c.tries + 1,
            locked_until=now,
            gave_up=rl.c.tries + 1 >= max_tries,
            last_error=error[:500],
            token=None,
        )
        .returning(rl.c.gave_up)
    )
    found = tx.conn.execute(tried).first()
    if found is None:
        return None
    gave_up = bool(found.gave_up)
    if gave_up:
        records.unqueue_review(tx, task_id, attempt, verifier)
    return gave_up


def awaits(tx: Transaction, task_id: str, attempt: int, verifier: str) -> bool:
    """Whether the submission is on ``verifier``'s review queue (it awaits its judgment)."""
    rq = s.review_queue
    q = select(rq.c.task_id).where(
        rq.c.task_id == task_id, rq.c.attempt == attempt, rq.c.verifier == verifier
    )
    return tx.conn.execute(q).first() is not None


def lease(tx: Transaction, task_id: str, attempt: int, verifier: str) -> dict[str, Any] | None:
    """A submission's lease row for ``verifier``, or None."""
    row = tx.conn.execute(select(s.review_leases).where(_key(task_id, attempt, verifier))).first()
    return dict(row._mapping) if row else None


def _key(task_id: str, attempt: int, verifier: str) -> ColumnElement[bool]:
    rl = s.review_leases
    return and_(rl.c.task_id == task_id, rl.c.attempt == attempt, rl.c.verifier == verifier)


Queued = tuple[str, str, int, datetime]  # task, verifier, attempt, submitted at


def queued(tx: Transaction) -> set[Queued]:
    """Every verifier's review queue (for audits)."""
    rq = s.review_queue.c
    q = select(rq.task_id, rq.verifier, rq.attempt, rq.submitted_at)
    return {(r[0], r[1], int(r[2]), r[3]) for r in tx.conn.execute(q)}


def recount(tx: Transaction) -> set[Queued]:
    """The same queue from the tasks awaiting verification, their seats, votes and leases (a
    full scan: for audits and tests only)."""
    t, seat, tv, rl = s.tasks.c, s.task_seats.c, s.task_votes.c, s.review_leases.c
    waiting = select(t.id, t.verifier, t.attempts, t.submitted_at, t.posted_at).where(
        t.status == Status.AWAITING_VERIFICATION.value
    )
    tasks = {r.id: r for r in tx.conn.execute(waiting)}
    judges: dict[str, set[str]] = {
        i: {r.verifier} if r.verifier else set() for i, r in tasks.items()
    }
    for task_id, verifier in tx.conn.execute(select(seat.task_id, seat.verifier)):
        if task_id in tasks:
            judges[task_id].add(verifier)
    done = {
        (r[0], r[1], r[2]) for r in tx.conn.execute(select(tv.task_id, tv.attempt, tv.verifier))
    }
    gave_up = select(rl.task_id, rl.attempt, rl.verifier).where(rl.gave_up.is_(True))
    done |= {(r[0], r[1], r[2]) for r in tx.conn.execute(gave_up)}
    return {
        (i, v, int(r.attempts), r.submitted_at or r.posted_at)
        for i, r in tasks.items()
        for v in judges[i]
        if (i, r.attempts, v) not in done
    }
