"""The console's dashboards and ledger totals against the history they summarise.

What it measures: the operator's and a provider's dashboard (``App.dashboards``, in process, a
30-day window), each read ``--reads`` times, on a store holding N forwarded calls of that
provider — each started and ended (PASS; FAIL with its schema check failed; or no verdict, a
request error), with its call record and its charge on the ledger — spread over the window's
30 days, for each N of ``--sizes``; and the ledger page with its totals over the same 30 days
(``App.receipts.ledger_lines``: the newest 50 lines and the totals of every line the filter
keeps), as the admin reads it (every account) and as the provider does (its own accounts), and
the admin's page with no filter at all (the console's first view: the totals for all time); and
the metrics' open holds (``holds.open_summary``: how many, their money, how many mature within a
day), the calls of the last three days holding their charges. The
figure: each read's median time at each N, and its ratio to the smallest N's (flat when a read
takes counts kept per day, not rows).

Beside them, in the same run, the bare reads made before the counts were kept: for the
operator's calls chart, the window's calls (``started_at``, ``verdict``) through the index on
their start; for the ledger's totals, the one SUM over the window's lines that the admin's
totals were; for the open holds, the one grouped read over them the metrics made. Their time
grows with N; the whole reads stay under them from a few thousand calls on.

How: the rows are written through the store's own functions (``gateway.start_call``,
``finish_call``, ``calls.add_call``, ``ledger.transfer``), 1,000 calls a transaction, so their
counts are kept as the service keeps them. Run from the repository root:

    .venv/bin/python benchmarks/dashboards.py                   # SQLite, 1k to 100k calls
    .venv/bin/python benchmarks/dashboards.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import case, func, select

from adjudge.app import App
from adjudge.market import WORLD, Transfer
from adjudge.store import Store, calls, gateway, holds, ledger, records
from adjudge.store import schema as s
from adjudge.store.schema import metadata

PROVIDER = "skycast"
DAYS = 30
BATCH = 1_000
#: A settled call's report window: its charge is held this long (the calls of the last three
#: days have open holds, which the metrics count).
REPORT_WINDOW = timedelta(hours=72)


def pending_call(
    n: int,
    at: datetime,
    *,
    caller: str = "ann",
    tool: str = "weather_forecast",
    provider: str = PROVIDER,
) -> gateway.GatewayCall:
    """The ``n``th call of a benchmark's history, as it starts (pending)."""
    return gateway.GatewayCall(
        id=f"call-{n:09d}",
        caller=caller,
        tool=tool,
        tool_version=1,
        provider=provider,
        price_minor=250_000,
        currency="USDC",
        key_hash=None,
        fingerprint="sha256:" + "0" * 64,
        state="pending",
        started_at=at,
        finished_at=None,
        status=None,
        verdict=None,
        receipt_id=None,
        answer=None,
    )


def window_start(now: datetime) -> datetime:
    """The first moment of the dashboards' window: the start of the UTC day DAYS - 1 ago."""
    first = now.astimezone(UTC).date() - timedelta(days=DAYS - 1)
    return datetime(first.year, first.month, first.day, tzinfo=UTC)


def grow(store: Store, start: int, stop: int, now: datetime) -> None:
    """Calls ``start`` to ``stop`` (exclusive), spread over the window's days up to now."""
    span = int((now - window_start(now)).total_seconds()) - 120
    for first in range(start, stop, BATCH):
        with store.write() as tx:
            for n in range(first, min(first + BATCH, stop)):
                at = now - timedelta(seconds=(n * 7_919) % span + 60)
                verdict = ("PASS", "FAIL", None)[n % 3]
                gateway.start_call(tx, pending_call(n, at))
                gateway.finish_call(
                    tx,
                    f"call-{n:09d}",
                    provider=PROVIDER,
                    started_at=at,
                    status="settled" if verdict == "PASS" else "refunded",
                    verdict=verdict,
                    receipt_id=f"rcpt-{n}",
                    answer={},
                    at=at,
                )
                checks = [{"name": "schema", "outcome": "fail" if verdict == "FAIL" else "pass"}]
                add_record(tx, f"call-{n:09d}", PROVIDER, verdict, at, checks=checks)
                charge = [Transfer(WORLD, f"wallet:{PROVIDER}", 250_000, "charge")]
                ledger.transfer(tx, charge, task_id=None, at=at)
                if at + REPORT_WINDOW > now:  # its charge still held: the metrics' open holds
                    holds.add(
                        tx,
                        call_id=f"call-{n:09d}",
                        provider=PROVIDER,
                        caller="ann",
                        amount=250_000,
                        receipt_id=f"rcpt-{n}",
                        matures_at=at + REPORT_WINDOW,
                    )


def median_ms(read: Callable[[], Any], reads: int) -> float:
    """The median time of ``reads`` calls of ``read`` (after one to warm), in ms."""
    read()  # warm
    times = []
    for _ in range(reads):
        t0 = time.perf_counter()
        read()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def add_record(
    tx: Any,
    call_id: str,
    provider: str,
    verdict: str,
    at: datetime,
    *,
    checks: list[dict[str, str]] | None = None,
    submitted_by: str = "ann",
) -> None:
    """A gateway call's verification record, as the call's end stores it (enforced)."""
    record = {
        "call_id": call_id,
        "provider": provider,
        "tool": "weather_forecast",
        "verdict": verdict,
        "effect": {"enforced": True},
        "checks": checks or [],
    }
    calls.add_call(
        tx,
        record=record,
        contract_version="1",
        submitted_by=submitted_by,
        at=at,
        request={},
        response={},
        receipt_id=None,
        source="gateway",
    )


def fresh_store(url: str) -> Store:
    """A migrated store at ``url``: a PostgreSQL database emptied first (its tables dropped)."""
    store = Store(url)
    if url.startswith("postgresql"):
        metadata.drop_all(store.engine)
        with store.engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
    store.migrate()
    return store


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    now = datetime.now(UTC)
    with store.write() as tx:
        records.create_account(tx, "root", ["admin"], "key-root", opt_in=True, at=now)
        records.create_account(tx, "ann", ["agent"], "key-ann", opt_in=True, at=now)
        records.create_account(tx, PROVIDER, ["provider"], "key-sky", opt_in=True, at=now)
    app = App(store)
    with store.read() as tx:
        root, provider = records.account(tx, "root"), records.account(tx, PROVIDER)
    assert root is not None and provider is not None
    c = gateway.calls.c
    scan = select(c.started_at, c.verdict).where(c.started_at >= window_start(now))

    def bare_scan() -> int:
        with store.read() as tx:
            return len(list(tx.conn.execute(scan)))

    e = s.ledger_entries.c
    since = window_start(now)
    summed = select(
        func.count(),
        func.sum(case((e.amount > 0, e.amount), else_=0)),
        func.sum(case((e.amount < 0, e.amount), else_=0)),
    ).where(e.at >= since)

    def bare_sum() -> Any:
        with store.read() as tx:
            return tx.conn.execute(summed).one()

    def ledger_page(who: Any) -> dict[str, Any]:
        return app.receipts.ledger_lines(who, since=since.date().isoformat(), totals=True)

    def ledger_unfiltered() -> dict[str, Any]:
        return app.receipts.ledger_lines(root, totals=True)

    def open_holds() -> dict[str, int]:
        with store.read() as tx:
            return holds.open_summary(tx, now)

    def bare_holds() -> dict[str, int]:
        with store.read() as tx:
            return holds.recount_summary(tx, now)

    rows = []
    made = 0
    for size in sizes:
        grow(store, made, size, now)
        made = size
        if store.dialect == "postgresql":
            # The planner's statistics of the rows just written, as autovacuum keeps them in a
            # running database (without them a page of lines is planned as a scan and a sort).
            with store.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
        operator = app.dashboards.operator(root, days=DAYS)
        assert sum(operator["calls"]["totals"].values()) == size, operator["calls"]["totals"]
        assert ledger_page(root)["totals"]["lines"] == str(2 * size)
        assert ledger_page(provider)["totals"]["lines"] == str(size)
        assert open_holds() == bare_holds()
        rows.append(
            {
                "calls": size,
                "operator_ms": median_ms(lambda: app.dashboards.operator(root, days=DAYS), reads),
                "provider_ms": median_ms(
                    lambda: app.dashboards.provider(provider, days=DAYS), reads
                ),
                "bare_scan_ms": median_ms(bare_scan, reads),
                "ledger_admin_ms": median_ms(lambda: ledger_page(root), reads),
                "ledger_provider_ms": median_ms(lambda: ledger_page(provider), reads),
                "ledger_unfiltered_ms": median_ms(ledger_unfiltered, reads),
                "bare_ledger_sum_ms": median_ms(bare_sum, reads),
                "open_holds": open_holds()["count"],
                "holds_ms": median_ms(open_holds, reads),
                "bare_holds_ms": median_ms(bare_holds, reads),
            }
        )
    app.close()
    store.dispose()
    with_ratios(rows)
    return {"db": url.split(":", 1)[0], "days": DAYS, "reads": reads, "rows": rows}


def with_ratios(rows: list[dict[str, Any]]) -> None:
    """Beside each time of each size (``*_ms``), its ratio to the first size's (``*_ratio``)."""
    first = rows[0]
    for row in rows:
        for key in [k for k in row if k.endswith("_ms")]:
            row[key.replace("_ms", "_ratio")] = row[key] / first[key]


def sized_run(
    doc: str,
    read: str,
    run: Callable[[str, list[int], int], dict[str, Any]],
    *,
    sizes: str = "1000,10000,100000",
    what: str = "calls",
) -> tuple[argparse.Namespace, dict[str, Any]]:
    """The options of a benchmark over growing stores (``--db``, ``--sizes`` of ``what``,
    ``--reads`` of each ``read``, ``--json``) and ``run``'s figures (printed, with
    ``--json``)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--db", help="a database URL (default: a temporary SQLite file)")
    parser.add_argument("--sizes", default=sizes, help=f"{what}, comma-separated")
    parser.add_argument("--reads", type=int, default=20, help=f"reads of each {read} a size")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        out = run(args.db or f"sqlite:///{Path(tmp) / 'bench.db'}", sizes, args.reads)
    if args.json:
        print(json.dumps(out, indent=2))
    return args, out


def main() -> None:
    args, out = sized_run(__doc__, "dashboard", run)
    if args.json:
        return
    print(f"{out['db']}: the {DAYS}-day dashboards, median of {args.reads} reads")
    columns = {
        "operator_ms": "operator",
        "provider_ms": "provider",
        "bare_scan_ms": "bare window scan",
        "ledger_admin_ms": "ledger, admin",
        "ledger_provider_ms": "ledger, provider",
        "ledger_unfiltered_ms": "ledger, unfiltered",
        "bare_ledger_sum_ms": "bare ledger sum",
        "holds_ms": "open holds",
        "bare_holds_ms": "bare holds count",
    }
    print_sized(out["rows"], "calls", columns)


def print_sized(rows: list[dict[str, Any]], size: str, columns: dict[str, str]) -> None:
    """A table of each size's ``columns`` (times in ms, each beside its ratio to the first
    size's: ``*_ms`` and ``*_ratio``)."""
    print(f"{size:>8}" + "".join(f"   {name:>16} ms (×first)" for name in columns.values()))
    for r in rows:
        cells = "".join(
            f"   {r[key]:19.2f} ({r[key.replace('_ms', '_ratio')]:6.2f}×)" for key in columns
        )
        print(f"{r[size]:>8}{cells}")


if __name__ == "__main__":
    main()
