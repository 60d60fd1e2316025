"""A webhook worker's claim of a batch (``outbox.claim``), against how many deliveries are due.

What it measures: on a store holding N due deliveries of one account (receivers that never
answer, or a worker that fell behind) and five due of each of ``--accounts`` others, for each N
of ``--sizes``, the time of a claim of 50 inside its write (SQLite's one write lock is held
that long), best of ``--reads``; and, in the same run, the read a claim made before: every due
delivery ranked by age within its account (``ROW_NUMBER() OVER (PARTITION BY account ...)``),
the batch cut from the ranking.

How: the deliveries are inserted directly, in the shape the outbox writes them, then the
database analyzes them (as PostgreSQL's autovacuum does after such a load). Each claim's
leases are cleared before the next. Run from the repository root:

    .venv/bin/python benchmarks/webhook_claims.py                      # SQLite
    .venv/bin/python benchmarks/webhook_claims.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import fresh_store, sized_run
from sqlalchemy import func, insert, select, update

from adjudge.store import Store, outbox, records
from adjudge.store.outbox import FAIR_SHARE, PENDING, webhook_deliveries, webhook_messages

BATCH = 50
OTHERS = 20
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _account(store: Store, name: str) -> None:
    with store.write() as tx:
        records.create_account(tx, name, ["poster"], f"key-{name}", opt_in=False, at=T0)
        outbox.add_endpoint(
            tx,
            endpoint_id=f"ep_{name}",
            account_id=name,
            url="https://example.com/hook",
            sealed_secret="sealed",
            event_types=None,
            description="",
            at=T0,
        )


def grow(store: Store, account: str, start: int, stop: int, at: datetime) -> None:
    """Deliveries ``start`` to ``stop`` (exclusive) of ``account``, due from ``at``."""
    for first in range(start, stop, 10_000):
        numbers = range(first, min(first + 10_000, stop))
        with store.write() as tx:
            tx.conn.execute(
                insert(webhook_messages),
                [
                    {"id": f"msg_{account}_{n}", "type": "t", "payload": {}, "created_at": at}
                    for n in numbers
                ],
            )
            tx.conn.execute(
                insert(webhook_deliveries),
                [
                    {
                        "id": f"whd_{account}_{n:09d}",
                        "message_id": f"msg_{account}_{n}",
                        "endpoint_id": f"ep_{account}",
                        "account_id": account,
                        "status": PENDING,
                        "attempts": 0,
                        "next_attempt_at": at + timedelta(milliseconds=n),
                        "replays": 0,
                        "created_at": at,
                    }
                    for n in numbers
                ],
            )


def ranked(now: datetime, limit: int) -> Any:
    """The read a claim made before: every due delivery ranked within its account."""
    d = webhook_deliveries
    free = (d.c.locked_until.is_(None)) | (d.c.locked_until <= now)
    rank = func.row_number().over(
        partition_by=d.c.account_id, order_by=(d.c.next_attempt_at, d.c.id)
    )
    ranking = (
        select(d.c.id, d.c.next_attempt_at, rank.label("rank"))
        .where(d.c.status == PENDING, d.c.next_attempt_at <= now, free)
        .subquery()
    )
    share = max(1, limit // FAIR_SHARE)
    return (
        select(d.c.id)
        .join(ranking, ranking.c.id == d.c.id)
        .order_by(ranking.c.rank > share, ranking.c.next_attempt_at, ranking.c.id)
        .limit(limit)
    )


def claim(store: Store, now: datetime, after: str) -> tuple[float, str]:
    """One claim of a batch inside its write, timed; its leases cleared before the commit."""
    with store.write() as tx:
        t0 = time.perf_counter()
        batch = outbox.claim(tx, now=now, lease=timedelta(seconds=60), limit=BATCH, after=after)
        elapsed = time.perf_counter() - t0
        assert len(batch.claimed) == BATCH
        d = webhook_deliveries.c
        leased = update(webhook_deliveries).where(d.id.in_([c.delivery_id for c in batch.claimed]))
        tx.conn.execute(leased.values(locked_until=None, lease=None))
    return elapsed, batch.walked_to


def ranking_before(store: Store, now: datetime) -> float:
    """The read a claim made before, timed."""
    with store.read() as tx:
        t0 = time.perf_counter()
        assert len(tx.conn.execute(ranked(now, BATCH)).all()) == BATCH
        return time.perf_counter() - t0


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    _account(store, "pile")
    for n in range(OTHERS):
        _account(store, f"other{n:02d}")
        grow(store, f"other{n:02d}", 0, 5, T0 + timedelta(days=1))
    now = T0 + timedelta(days=2)
    rows, made, after = [], 0, ""
    for size in sizes:
        grow(store, "pile", made, size, T0)
        made = size
        with store.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
        timings = []
        for _ in range(reads):
            elapsed, after = claim(store, now, after)
            timings.append(elapsed)
        before = min(ranking_before(store, now) for _ in range(reads))
        rows.append(
            {
                "due": size + 5 * OTHERS,
                "claim_ms": min(timings) * 1000,
                "ranking_before_ms": before * 1000,
            }
        )
    first = rows[0]
    for r in rows:
        r["claim_vs_first"] = r["claim_ms"] / first["claim_ms"]
        r["ranking_vs_first"] = r["ranking_before_ms"] / first["ranking_before_ms"]
    store.dispose()
    return {"db": url.split(":", 1)[0], "batch": BATCH, "turns": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "claim", run, sizes="1000,10000,100000", what="due deliveries")
    if args.json:
        return
    print(f"{out['db']}: a claim of {out['batch']}, best of {out['turns']}")
    print("       due   claim ms  × first   ranking before ms  × first")
    for r in out["rows"]:
        print(
            f"{r['due']:>10} {r['claim_ms']:10.2f} {r['claim_vs_first']:8.2f}"
            f" {r['ranking_before_ms']:19.2f} {r['ranking_vs_first']:8.2f}"
        )


if __name__ == "__main__":
    main()
