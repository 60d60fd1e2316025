"""The upkeep's sweep of takes whose time is up (``App.tasks.lapse_due``), against how many.

What it measures: one pass of the sweep over N due takes (each a task posted with a one-hour
take window and taken, the clock then moved past it), for each N of ``--sizes``: its wall and
CPU time and the time a lapse, best of ``--reads`` passes. Each lapse is a unit of work of its
own; queued at once, they share the group commit's transactions.

How: the tasks are posted and taken through the use cases (``App.tasks.post``, ``accept``) on
the benchmark's own clock, by as many agents as the take limit asks and as many posters as the
hour's quota of posts asks (each account as the service bounds it). Run from the repository
root:

    .venv/bin/python benchmarks/upkeep.py                      # SQLite, 100 and 500 due
    .venv/bin/python benchmarks/upkeep.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import fresh_store, sized_run

from adjudge.app import App
from adjudge.app.tasks import POST_QUOTA

#: The most takes an agent holds at once (the service's default limit).
TAKES = 5


class Clock:
    """The benchmark's clock: moved past the takes' windows once they are all taken."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC)

    def now(self) -> datetime:
        return self.at


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    clock = Clock()
    app = App(store, clock=clock)
    root = app.accounts.authenticate(app.accounts.create(None, "root", ["admin"]).value["api_key"])
    posters: list[Any] = []
    agents: list[Any] = []
    rows = []
    for size in sizes:
        turns = []
        for _ in range(reads):
            for i in range(size):
                if i // TAKES >= len(agents):
                    name = f"agent{len(agents)}"
                    made = app.accounts.create(None, name, ["agent"]).value["api_key"]
                    agents.append(app.accounts.authenticate(made))
                if i // POST_QUOTA >= len(posters):
                    name = f"poster{len(posters)}"
                    made = app.accounts.create(None, name, ["poster"]).value["api_key"]
                    app.accounts.deposit(root, name, 10**15)
                    posters.append(app.accounts.authenticate(made))
                posted = app.tasks.post(
                    posters[i // POST_QUOTA],
                    title="A task",
                    brief="Write a summary.",
                    reward=1_000_000,
                    mode="manual",
                    criteria={},
                    deadline_hours=48,
                    take_window_hours=1,
                )
                app.tasks.accept(agents[i // TAKES], posted.value["id"])
            clock.at += timedelta(hours=2)
            wall, cpu = time.perf_counter(), time.process_time()
            lapsed = app.tasks.lapse_due(limit=size)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert lapsed == size, lapsed
            turns.append((wall, cpu))
        wall, cpu = (min(t[i] for t in turns) for i in range(2))
        rows.append(
            {
                "due": size,
                "wall_ms": wall * 1000,
                "cpu_ms": cpu * 1000,
                "us_a_lapse": wall * 1e6 / size,
            }
        )
    app.close()
    store.dispose()
    return {"db": url.split(":", 1)[0], "turns": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "pass", run, sizes="100,500", what="due takes")
    if args.json:
        return
    print(f"{out['db']}: the lapse sweep, best of {args.reads} passes")
    print("     due    wall ms     CPU ms   µs a lapse")
    for r in out["rows"]:
        print(f"{r['due']:>8} {r['wall_ms']:10.1f} {r['cpu_ms']:10.1f} {r['us_a_lapse']:12.1f}")


if __name__ == "__main__":
    main()
