"""The paid calls' listing and the upkeep's search for interrupted calls, against how many calls
the store holds.

What it measures, in process, ``--reads`` times each, on a store holding N forwarded calls, for
each N of ``--sizes``: a page (50) of ``GET /gateway/calls`` as ``App.gateway.list_calls``
reads it — the admin's, a caller's own (``ann``, a caller of a tenth of the calls), a
provider's own (``nimbus``, a provider of a tenth), a tool's (a tenth), a page deep in the
caller's (its cursor a hundred of its calls from its oldest), and a page of the caller's failed
calls (it has none: the page reads its walk's share, 2,000 calls of each role, and ends) — and
the upkeep's search for calls left pending (``App.gateway.recover``: two are pending, the rest
ended). The figure: each read's median time at each N, and its ratio to the smallest N's (flat
when a read walks an index in its order; growing when it reads every call its filter keeps, or
every call before the ones it wants).

How: the calls are written through ``gateway.start_call`` and ``gateway.finish_call``, one a
second back from now, 1,000 a transaction, by ten callers of three tools of ten providers.
Run from the repository root:

    .venv/bin/python benchmarks/call_listings.py             # SQLite, 1k to 30k calls
    .venv/bin/python benchmarks/call_listings.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import fresh_store, median_ms, pending_call, print_sized, sized_run, with_ratios
from sqlalchemy import text

from adjudge.app import App
from adjudge.store import Store, gateway, records
from adjudge.store.pages import encode_cursor

BATCH = 1_000
CALLERS = ("ann", *(f"caller{n}" for n in range(1, 10)))
PROVIDERS = ("nimbus", *(f"provider{n}" for n in range(1, 10)))
TOOLS = ("weather_forecast", "air_quality", "tides")


def grow(store: Store, start: int, stop: int, now: datetime) -> None:
    """Calls ``start`` to ``stop`` (exclusive), one a second back from ``now``, each ended but
    the two newest of all."""
    for first in range(start, stop, BATCH):
        with store.write() as tx:
            for n in range(first, min(first + BATCH, stop)):
                at = now - timedelta(seconds=n + 600)
                call = pending_call(
                    n,
                    at,
                    caller=CALLERS[n % 10],
                    tool=TOOLS[n % 3],
                    provider=PROVIDERS[n // 10 % 10],
                )
                gateway.start_call(tx, call)
                if n < 2:
                    continue  # left pending, as a stopped process leaves a call
                gateway.finish_call(
                    tx,
                    call.id,
                    provider=call.provider,
                    started_at=at,
                    status="settled",
                    verdict="PASS",
                    receipt_id=f"rcpt-{n}",
                    answer={},
                    at=at,
                )


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    now = datetime.now(UTC)
    with store.write() as tx:
        records.create_account(tx, "root", ["admin"], "key-root", opt_in=True, at=now)
        for name in CALLERS:
            records.create_account(tx, name, ["agent"], f"key-{name}", opt_in=True, at=now)
        for name in PROVIDERS:
            records.create_account(tx, name, ["provider"], f"key-{name}", opt_in=True, at=now)
    app = App(store)
    with store.read() as tx:
        root, ann, nimbus = (records.account(tx, n) for n in ("root", "ann", "nimbus"))
    assert root is not None and ann is not None and nimbus is not None
    # The interrupted calls are ended by a receipt each; the search for them is what grows.
    app.gateway._interrupted = lambda call, retried=False: False  # type: ignore[method-assign]
    rows = []
    made = 0
    for size in sizes:
        grow(store, made, size, now)
        made = size
        # a hundred of ann's calls (every tenth) from the oldest: a page deep in its listing
        deep_n = max(0, (size - 1) // 10 * 10 - 1_000)
        deep_at = now - timedelta(seconds=deep_n + 600)
        deep = encode_cursor(deep_at, f"call-{deep_n:09d}")
        pages = {
            "admin_ms": lambda: app.gateway.list_calls(root),
            "caller_ms": lambda: app.gateway.list_calls(ann),
            "provider_ms": lambda: app.gateway.list_calls(nimbus),
            "tool_ms": lambda: app.gateway.list_calls(root, tool="tides"),
            "deep_ms": lambda c=deep: app.gateway.list_calls(ann, cursor=c),  # type: ignore[misc]
        }
        if store.dialect == "postgresql":  # the planner's statistics, as autovacuum keeps them
            with store.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
        for read in pages.values():
            assert len(read()["calls"]) == 50
        # a caller's page of a verdict none of its calls has: its walk's share read, none found
        rare = app.gateway.list_calls(ann, verdict="FAIL")
        assert rare["calls"] == [] and (rare["next_cursor"] is not None) == (size // 10 >= 2_000)
        pages["rare_verdict_ms"] = lambda: app.gateway.list_calls(ann, verdict="FAIL")
        assert app.gateway.recover(older_than=timedelta(0)) == 0
        found = {k: median_ms(read, reads) for k, read in pages.items()}
        found["recover_ms"] = median_ms(app.gateway.recover, reads)
        rows.append({"calls": size, **found})
    app.close()
    store.dispose()
    with_ratios(rows)
    return {"db": url.split(":", 1)[0], "reads": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "read", run, sizes="1000,10000,30000")
    if args.json:
        return
    print(
        f"{out['db']}: a page of 50 calls and the search for interrupted ones, median of "
        f"{args.reads} reads"
    )
    names = {
        "admin_ms": "admin's",
        "caller_ms": "a caller's own",
        "provider_ms": "a provider's own",
        "tool_ms": "a tool's",
        "deep_ms": "deep in a caller's",
        "rare_verdict_ms": "a caller's rare verdict",
        "recover_ms": "interrupted",
    }
    print_sized(out["rows"], "calls", names)


if __name__ == "__main__":
    main()
