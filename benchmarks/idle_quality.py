"""A provider's quality reads against how many of its calls have left its window since its last
call.

What it measures: a provider with declared terms (a 30-day window) that has not been called for
33 days, its N observed calls all in the 10 days before its last call, so every one has left
its window since its running counts were last moved; for each N of ``--sizes``, the median of
``--reads`` reads of its quality (``App.calls.quality``: ``GET /providers/{id}/quality``), of
its own dashboard (``App.dashboards.provider``) and of the operator's (``App.dashboards
.operator``, which lists every termed provider's window), in process. The figures: each read's
median time at each N, and its ratio to the smallest N's (flat when a read costs the window's
days and one day's calls, not every call that left it).

How: the calls are written through the store's own functions (``calls.add_call``, which keeps
their daily counts, 5,000 a transaction), then the provider's last call is observed
(``quality_windows.observe``) after its running counts are dropped, so they are rebuilt from the
calls as they stand. Run from the repository root:

    .venv/bin/python benchmarks/idle_quality.py                  # SQLite, 1k, 30k, 100k calls
    .venv/bin/python benchmarks/idle_quality.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import add_record, fresh_store, median_ms, sized_run

from adjudge.app import App
from adjudge.calls.quality import counted_as
from adjudge.store import Store, calls, quality_windows, records

PROVIDER = "sky"
SPAN = timedelta(days=30)
IDLE = SPAN + timedelta(days=3)
BATCH = 5_000


def _add(tx: Any, n: int, at: datetime) -> None:
    verdict = ("PASS", "FAIL")[n % 7 == 0]
    add_record(tx, f"call-{n:09d}", PROVIDER, verdict, at)


def grow(store: Store, start: int, stop: int, last_call: datetime) -> None:
    """Calls ``start`` to ``stop`` (exclusive), spread over the 10 days before ``last_call``;
    then the provider's counts rebuilt by one more call at ``last_call`` (a microsecond later
    each time, so each is the latest)."""
    for first in range(start, stop, BATCH):
        with store.write() as tx:
            for n in range(first, min(first + BATCH, stop)):
                ago = timedelta(seconds=(n * 7919) % (10 * 86_400) + 1)
                _add(tx, n, last_call - ago)
    with store.write() as tx:
        tx.conn.execute(quality_windows.quality_windows.delete())
        at = last_call + timedelta(microseconds=stop)
        _add(tx, -stop, at)
        quality_windows.observe(tx, PROVIDER, SPAN, at, counted_as("PASS", True, None))


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    now = datetime.now(UTC)
    last_call = now - IDLE
    with store.write() as tx:
        records.create_account(tx, "root", ["admin"], "key-root", opt_in=True, at=now)
        records.create_account(tx, "ann", ["agent"], "key-ann", opt_in=True, at=now)
        records.create_account(tx, PROVIDER, ["provider"], "key-sky", opt_in=True, at=now)
        terms = {"declared_failure_rate": "1/10", "sample_gate": 3, "window_days": SPAN.days}
        calls.set_terms(tx, PROVIDER, terms, last_call - SPAN)
    app = App(store)
    with store.read() as tx:
        root, provider = records.account(tx, "root"), records.account(tx, PROVIDER)
    assert root is not None and provider is not None
    reads_of = {
        "quality": lambda: app.calls.quality(PROVIDER),
        "provider_dashboard": lambda: app.dashboards.provider(provider),
        "operator_dashboard": lambda: app.dashboards.operator(root),
    }
    rows: list[dict[str, Any]] = []
    made = 0
    for size in sizes:
        grow(store, made, size, last_call)
        made = size
        if url.startswith("postgresql"):
            with store.engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE")
        window = app.calls.quality(PROVIDER)["window"]
        assert (window["pass"], window["fail"]) == (0, 0), window  # every call has left it
        rows.append({"calls": size, **{k: median_ms(r, reads) for k, r in reads_of.items()}})
    app.close()
    store.dispose()
    for r in rows:
        for k in reads_of:
            r[f"{k}_ratio"] = r[k] / rows[0][k]
    return {"db": url.split(":", 1)[0], "reads": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "read", run, sizes="1000,30000,100000")
    if args.json:
        return
    print(f"{out['db']}: an idle provider's quality reads, median of {args.reads} reads")
    print("    calls   quality ms        provider dashboard ms   operator dashboard ms")
    for r in out["rows"]:
        print(
            f"{r['calls']:>9} {r['quality']:8.2f} ({r['quality_ratio']:4.1f}×)"
            f" {r['provider_dashboard']:13.2f} ({r['provider_dashboard_ratio']:4.1f}×)"
            f" {r['operator_dashboard']:15.2f} ({r['operator_dashboard_ratio']:4.1f}×)"
        )


if __name__ == "__main__":
    main()
