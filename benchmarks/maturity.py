"""Providers' held charges maturing (``App.gateway.mature_holds``), against how many are due.

What it measures: the upkeep's pass that pays providers the settled charges whose report
deadlines passed, on a store holding N due holds of ``--providers`` providers, for each N of
``--sizes``: its wall and CPU time, the time a hold, and the longest of its transactions (a
batch of 500 holds: for that long the batch holds the providers' hold balances it debits,
which each settled call of those providers credits as it commits).

How: each hold is written through the store's own functions, as a settled call leaves it (its
receipt appended to the log, its charge moved into the provider's hold, its row in
``provider_holds``), 1,000 a transaction. Run from the repository root:

    .venv/bin/python benchmarks/maturity.py                    # SQLite, 1k and 10k holds
    .venv/bin/python benchmarks/maturity.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import fresh_store, sized_run

from adjudge.app import App
from adjudge.market import WORLD, Transfer, provider_hold_account
from adjudge.store import Store, holds, ledger, receipt_log, records

BATCH = 1_000
PROVIDERS = 20
AMOUNT = 250_000


def _issue(n: int) -> Any:
    """A receipt of the log (chained; unsigned: maturity reads only that it is there)."""
    return lambda place: {"digest": f"sha256:{n:064x}", "after": list(place.head or ())}


def grow(store: Store, start: int, stop: int, at: datetime) -> None:
    """Due holds ``start`` to ``stop`` (exclusive; each number a call and its receipt), over
    :data:`PROVIDERS` providers."""
    for first in range(start, stop, BATCH):
        with store.write() as tx:
            for n in range(first, min(first + BATCH, stop)):
                provider = f"prov{n % PROVIDERS:03d}"
                receipt = receipt_log.append(tx, _issue(n), task_id=None, at=at)
                charge = [Transfer(WORLD, provider_hold_account(provider), AMOUNT, "charge")]
                ledger.transfer(tx, charge, task_id=None, at=at)
                holds.add(
                    tx,
                    call_id=f"call-{n:09d}",
                    provider=provider,
                    caller="ann",
                    amount=AMOUNT,
                    receipt_id=receipt.id,
                    matures_at=at,
                )


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    at = datetime.now(UTC) - timedelta(days=3)
    with store.write() as tx:
        for i in range(PROVIDERS):
            name = f"prov{i:03d}"
            records.create_account(tx, name, ["provider"], f"key-{name}", opt_in=True, at=at)
    app = App(store)
    batches: list[float] = []
    write = app.unit.write

    def timed_write(fn: Any, **kw: Any) -> Any:  # each batch's transaction, timed
        t0 = time.perf_counter()
        try:
            return write(fn, **kw)
        finally:
            batches.append(time.perf_counter() - t0)

    app.unit.write = timed_write  # type: ignore[method-assign]
    rows = []
    made = 0
    for size in sizes:
        turns = []
        for _ in range(reads):
            grow(store, made, made + size, at)
            made += size
            batches.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            matured = app.gateway.mature_holds()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert matured == size, matured
            turns.append((wall, cpu, max(batches)))
        wall, cpu, longest = (min(t[i] for t in turns) for i in range(3))
        rows.append(
            {
                "holds": size,
                "wall_ms": wall * 1000,
                "cpu_ms": cpu * 1000,
                "us_a_hold": wall * 1e6 / size,
                "holds_per_second": size / wall,
                "longest_batch_ms": longest * 1000,
            }
        )
    with store.read() as tx:
        assert ledger.total(tx) == (0, 0)
    app.close()
    store.dispose()
    return {"db": url.split(":", 1)[0], "providers": PROVIDERS, "turns": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "pass", run, sizes="1000,10000", what="holds")
    if args.json:
        return
    print(f"{out['db']}: maturing due holds of {out['providers']} providers, best of {args.reads}")
    print("   holds    wall ms     CPU ms   µs a hold   holds/s   longest batch ms")
    for r in out["rows"]:
        print(
            f"{r['holds']:>8} {r['wall_ms']:10.1f} {r['cpu_ms']:10.1f} {r['us_a_hold']:11.1f}"
            f" {r['holds_per_second']:9.0f} {r['longest_batch_ms']:18.1f}"
        )


if __name__ == "__main__":
    main()
