"""The task listings against how many tasks they filter from.

What it measures: a page (50) of ``GET /tasks`` as ``App.tasks.find`` reads it, in process,
``--reads`` times, on a store holding N tasks, for each N of ``--sizes``: unfiltered, by a
status, by a poster, a party's own (``mine``: its tasks as poster, agent or verifier; a
verifier's, named on a tenth of the tasks and seated on the panel of another tenth), and a page
deep in the completed ones (its cursor a hundred tasks from the oldest), and a page of a mode
rare among them (one task in 20,000 auto: the page walks at most 2,000 tasks and may be short). The
tasks are posted by three posters over the last N minutes, a third of them completed, a third
taken by an agent. The figure: each page's median time at each N, and its ratio to the smallest
N's (flat when a page walks an index in the listing's order from its cursor; growing when the
page sorts every task its filter keeps, or skips every task before its cursor).

How: the rows are written through ``records.insert_task``, 1,000 a transaction. Run from the
repository root:

    .venv/bin/python benchmarks/listings.py                 # SQLite, 1k to 30k tasks
    .venv/bin/python benchmarks/listings.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import fresh_store, median_ms, print_sized, sized_run, with_ratios
from sqlalchemy import text

from adjudge.app import App
from adjudge.market import Mode, Status, Task
from adjudge.market.tasks import Seat
from adjudge.store import Store, records
from adjudge.store.pages import encode_cursor

BATCH = 1_000
POSTERS = ("pat", "sam", "lee")
VERIFIER = "vic"


def grow(store: Store, start: int, stop: int, now: datetime) -> None:
    """Tasks ``start`` to ``stop`` (exclusive), one a minute back from ``now``."""
    for first in range(start, stop, BATCH):
        with store.write() as tx:
            for n in range(first, min(first + BATCH, stop)):
                at = now - timedelta(minutes=n)
                task = Task(
                    id=f"task_{n:09d}",
                    poster=POSTERS[n % 3],
                    mode=Mode.AUTO if n % 20_000 == 7 else Mode.MANUAL,
                    reward=1_000_000,
                    posted_at=at,
                    deadline=at + timedelta(days=1),
                    criteria={},
                )
                status = (Status.FUNDED, Status.ASSIGNED, Status.COMPLETED)[n // 3 % 3]
                agent = "ann" if status != Status.FUNDED else None
                named = VERIFIER if n % 10 == 0 else None
                panel = (Seat(VERIFIER, None), Seat("val", None)) if n % 10 == 5 else ()
                task = replace(task, status=status, agent=agent, verifier=named, panel=panel)
                records.insert_task(tx, task, title=f"Task {n}", brief="Write it.")


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    now = datetime.now(UTC)
    with store.write() as tx:
        parties = (
            ("ann", ["agent"]),
            (VERIFIER, ["verifier"]),
            *((p, ["poster"]) for p in POSTERS),
        )
        for name, roles in parties:
            records.create_account(tx, name, roles, f"key-{name}", opt_in=True, at=now)
    app = App(store)
    with store.read() as tx:
        pat, ann, vic = (records.account(tx, n) for n in ("pat", "ann", VERIFIER))
    assert pat is not None and ann is not None and vic is not None
    deep = {"cursor": ""}  # set for each size: a hundred completed tasks from the oldest
    pages = {
        "all_ms": lambda: app.tasks.find(pat),
        "status_ms": lambda: app.tasks.find(pat, status=Status.COMPLETED.value),
        "poster_ms": lambda: app.tasks.find(pat, poster="sam"),
        "mine_ms": lambda: app.tasks.find(pat, mine=True),
        "agent_mine_ms": lambda: app.tasks.find(ann, mine=True),
        "verifier_mine_ms": lambda: app.tasks.find(vic, mine=True),
        "deep_ms": lambda: app.tasks.find(
            pat, status=Status.COMPLETED.value, cursor=deep["cursor"]
        ),
        "rare_mode_ms": lambda: app.tasks.find(pat, mode=Mode.AUTO.value),
    }
    rows = []
    made = 0
    for size in sizes:
        grow(store, made, size, now)
        made = size
        n = max(n for n in range(size - 300, size) if n // 3 % 3 == 2)  # the oldest completed
        deep["cursor"] = encode_cursor(now - timedelta(minutes=n - 300), f"task_{n - 300:09d}")
        if store.dialect == "postgresql":  # the planner's statistics, as autovacuum keeps them
            with store.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
        for name, read in pages.items():
            assert name == "rare_mode_ms" or len(read()["tasks"]) == 50
        rows.append({"tasks": size, **{k: median_ms(read, reads) for k, read in pages.items()}})
    app.close()
    store.dispose()
    with_ratios(rows)
    return {"db": url.split(":", 1)[0], "reads": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "page", run, sizes="1000,10000,30000", what="tasks")
    if args.json:
        return
    print(f"{out['db']}: a page of 50 tasks, median of {args.reads} reads")
    names = {
        "all_ms": "all",
        "status_ms": "completed",
        "poster_ms": "by poster",
        "mine_ms": "poster's own",
        "agent_mine_ms": "agent's own",
        "verifier_mine_ms": "verifier's own",
        "deep_ms": "deep in completed",
        "rare_mode_ms": "a rare mode",
    }
    print_sized(out["rows"], "tasks", names)


if __name__ == "__main__":
    main()
