"""The upkeep's due order behind held charges that wait for their calls' judgments.

What it measures: a hold whose call's meaning judgment is pending does not mature, whatever its
deadline. For each N of ``--sizes``, with N such holds past their deadlines (judges that have
not answered for a day), the read of the due order (``holds.due``, 100 due holds, best of
``--reads``) and the upkeep's pass that pays those 100 (``App.gateway.mature_holds``, best of
three), with each one's ratio to the first size's.

How: holds, receipts and queued judgments are written through the store's own functions, 1,000 a
transaction (as :mod:`maturity` writes its holds). Run from the repository root:

    .venv/bin/python benchmarks/waiting_holds.py                # SQLite, 0, 10k and 50k waiting
    .venv/bin/python benchmarks/waiting_holds.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import fresh_store, sized_run
from maturity import BATCH, PROVIDERS, grow

from adjudge.app import App
from adjudge.store import Store, holds, meaning_queue, records

DUE = 100
#: Where the waiting holds' numbers start (the due holds' start at 0).
WAITING = 10**8


def wait(store: Store, start: int, stop: int, at: datetime) -> None:
    """Holds ``start`` to ``stop`` (exclusive), past their deadlines at ``at``, each call's
    judgment queued and never given (held as :func:`maturity.grow` holds its own, under numbers
    of their own)."""
    first, last = WAITING + start, WAITING + stop
    grow(store, first, last, at)
    for batch in range(first, last, BATCH):
        with store.write() as tx:
            for n in range(batch, min(batch + BATCH, last)):
                call_id = f"call-{n:09d}"
                held = holds.get(tx, call_id)
                assert held is not None
                meaning_queue.add(
                    tx,
                    call_id=call_id,
                    provider=held.provider,
                    policy_digest="sha256:" + "0" * 64,
                    response_digest="sha256:" + "1" * 64,
                    receipt_id=held.receipt_id,
                    at=at,
                )


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    at = datetime.now(UTC) - timedelta(days=3)
    with store.write() as tx:
        for i in range(PROVIDERS):
            name = f"prov{i:03d}"
            records.create_account(tx, name, ["provider"], f"key-{name}", opt_in=True, at=at)
    app = App(store)
    rows: list[dict[str, Any]] = []
    waiting = made = 0
    for size in sizes:
        wait(store, waiting, size, at - timedelta(days=1))
        waiting = size
        read = []
        grow(store, made, made + DUE, at)
        made += DUE
        for _ in range(reads):
            with store.read() as tx:
                t0 = time.perf_counter()
                due = holds.due(tx, datetime.now(UTC), limit=500)
                read.append(time.perf_counter() - t0)
            assert len(due) == DUE, len(due)
        passes = []
        for turn in range(3):
            if turn:
                grow(store, made, made + DUE, at)
                made += DUE
            t0 = time.perf_counter()
            paid = app.gateway.mature_holds()
            passes.append(time.perf_counter() - t0)
            assert paid == DUE, paid
        rows.append({"waiting": size, "due_read_ms": min(read) * 1e3, "pass_ms": min(passes) * 1e3})
    for r in rows:
        r["read_vs_first"] = r["due_read_ms"] / rows[0]["due_read_ms"]
        r["pass_vs_first"] = r["pass_ms"] / rows[0]["pass_ms"]
    app.close()
    store.dispose()
    return {"db": url.split(":", 1)[0], "due": DUE, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "due order", run, sizes="0,10000,50000", what="holds waiting")
    if args.json:
        return
    print(f"{out['db']}: {out['due']} due holds behind holds waiting for their judgments")
    print("  waiting   due read ms   × first   pass ms   × first")
    for r in out["rows"]:
        print(
            f"{r['waiting']:>9} {r['due_read_ms']:13.2f} {r['read_vs_first']:9.2f}"
            f" {r['pass_ms']:9.1f} {r['pass_vs_first']:9.2f}"
        )


if __name__ == "__main__":
    main()
