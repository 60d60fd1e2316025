"""A verifier's worker's claim of review work (``leases.claim``), against how many submissions
await other verifiers.

What it measures: on a store holding N tasks awaiting verification, named to twenty other
verifiers, and three awaiting the verifier that claims, for each N of ``--sizes``, the time of
a claim of 10 inside its write (a worker polls every few seconds, and SQLite's one write lock
is held that long), best of ``--reads``; and, in the same run, the read a claim made before:
every task awaiting verification, every verifier's, filtered for the claiming verifier's and
sorted.

How: the tasks and their review queue's rows are inserted directly, in the shape a submission
that comes to await verification leaves them, then the database analyzes them (as
PostgreSQL's autovacuum does after such a load). Each claim's leases are removed before the
next. Run from the repository root:

    .venv/bin/python benchmarks/review_claims.py                      # SQLite
    .venv/bin/python benchmarks/review_claims.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import fresh_store, sized_run
from sqlalchemy import and_, delete, exists, insert, or_, select

from adjudge.market import Status
from adjudge.store import Store, leases, records
from adjudge.store import schema as s

OTHERS = 20
CLAIMING = "vera"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def grow(store: Store, start: int, stop: int, verifier: Any) -> None:
    """Tasks ``start`` to ``stop`` (exclusive) awaiting ``verifier(n)``, with their queue."""
    for first in range(start, stop, 5_000):
        numbers = range(first, min(first + 5_000, stop))
        tasks, queue = [], []
        for n in numbers:
            at = T0 + timedelta(seconds=n)
            tasks.append(
                {
                    "id": f"task_{n:09d}",
                    "version": 1,
                    "poster": "pat",
                    "agent": "agnes",
                    "verifier": verifier(n),
                    "verifier_key": "0" * 64,
                    "mode": "agent",
                    "status": Status.AWAITING_VERIFICATION.value,
                    "reward": 100,
                    "title": "A task",
                    "brief": "Summarise.",
                    "criteria": {},
                    "private": False,
                    "posted_at": at,
                    "deadline": at + timedelta(days=2),
                    "attempts": 1,
                    "submitted_at": at,
                    "routed": False,
                }
            )
            queue.append(
                {
                    "task_id": f"task_{n:09d}",
                    "verifier": verifier(n),
                    "attempt": 1,
                    "submitted_at": at,
                }
            )
        with store.write() as tx:
            tx.conn.execute(insert(s.tasks), tasks)
            tx.conn.execute(insert(s.review_queue), queue)


def before(verifier: str, now: datetime, limit: int) -> Any:
    """The read a claim made before: every task awaiting verification, filtered and sorted."""
    rl, t, tv, seat = s.review_leases, s.tasks, s.task_votes, s.task_seats.c
    joined = t.outerjoin(
        rl, and_(rl.c.task_id == t.c.id, rl.c.attempt == t.c.attempts, rl.c.verifier == verifier)
    )
    seated = exists().where(seat.task_id == t.c.id, seat.verifier == verifier)
    voted = exists().where(
        tv.c.task_id == t.c.id, tv.c.attempt == t.c.attempts, tv.c.verifier == verifier
    )
    return (
        select(t, rl.c.tries)
        .select_from(joined)
        .where(t.c.status == Status.AWAITING_VERIFICATION.value)
        .where(or_(t.c.verifier == verifier, and_(seated, ~voted)))
        .where(or_(rl.c.task_id.is_(None), and_(rl.c.gave_up.is_(False), rl.c.locked_until <= now)))
        .order_by(t.c.submitted_at)
        .limit(limit)
    )


def claim(store: Store, now: datetime) -> float:
    """One claim of ten inside its write, timed; its leases removed before the commit."""
    with store.write() as tx:
        t0 = time.perf_counter()
        claimed = leases.claim(tx, CLAIMING, now=now, lease=timedelta(minutes=5), limit=10)
        elapsed = time.perf_counter() - t0
        assert len(claimed) == 3, len(claimed)
        tx.conn.execute(delete(s.review_leases))
    return elapsed


def read_before(store: Store, now: datetime) -> float:
    """The read a claim made before, timed."""
    with store.read() as tx:
        t0 = time.perf_counter()
        assert len(tx.conn.execute(before(CLAIMING, now, 10)).all()) == 3
        return time.perf_counter() - t0


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    names = ["pat", "agnes", CLAIMING] + [f"v{j:02d}" for j in range(OTHERS)]
    with store.write() as tx:
        for name in names:
            records.create_account(tx, name, ["verifier"], f"key-{name}", opt_in=True, at=T0)
    grow(store, 10**8, 10**8 + 3, lambda n: CLAIMING)
    now = T0 + timedelta(days=1)
    rows, made = [], 0
    for size in sizes:
        grow(store, made, size, lambda n: f"v{n % OTHERS:02d}")
        made = size
        with store.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
        claim_s = min(claim(store, now) for _ in range(reads))
        before_s = min(read_before(store, now) for _ in range(reads))
        rows.append(
            {"awaiting": size + 3, "claim_ms": claim_s * 1000, "read_before_ms": before_s * 1000}
        )
    first = rows[0]
    for r in rows:
        r["claim_vs_first"] = r["claim_ms"] / first["claim_ms"]
        r["before_vs_first"] = r["read_before_ms"] / first["read_before_ms"]
    store.dispose()
    return {"db": url.split(":", 1)[0], "turns": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "claim", run, sizes="1000,10000,100000", what="tasks")
    if args.json:
        return
    print(f"{out['db']}: a verifier's claim of 10 (3 waiting for it), best of {out['turns']}")
    print("  awaiting   claim ms  × first   read before ms  × first")
    for r in out["rows"]:
        print(
            f"{r['awaiting']:>10} {r['claim_ms']:10.2f} {r['claim_vs_first']:8.2f}"
            f" {r['read_before_ms']:16.2f} {r['before_vs_first']:8.2f}"
        )


if __name__ == "__main__":
    main()
