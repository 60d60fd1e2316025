"""The operator's list of providers nearest their declared failure rate, against how many
providers declared quality terms.

What it measures: the operator's dashboard (``App.dashboards.operator``, in process), read
``--reads`` times, on a store where N providers declared terms, each with three observed calls
in its quality window (two inside it, one expired from it), for each N of ``--sizes``. Beside it,
in the same run, what the list read before: each termed provider's whole quality read
(``Calls.quality_in``: its account, terms, window, latest proposal and upheld reports, seven
statements) in one read transaction. The figures: each read's median time at each N, the time
a provider, and the dashboard's time as a share of the reads a provider it replaced.

How: the rows are written through the store's own functions (``records.create_account``,
``calls.set_terms``, ``calls.add_call``, ``quality_windows.observe``), as a call's transaction
writes them. Run from the repository root:

    .venv/bin/python benchmarks/providers.py                  # SQLite, 100 to 3,000 providers
    .venv/bin/python benchmarks/providers.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from dashboards import add_record, fresh_store, median_ms, sized_run

from adjudge.app import App
from adjudge.calls.quality import counted_as
from adjudge.store import Store, calls, quality_windows, records

WINDOW = timedelta(days=7)


def grow(store: Store, start: int, stop: int, now: datetime) -> None:
    """Termed providers ``start`` to ``stop`` (exclusive), each with three observed calls."""
    with store.write() as tx:
        for i in range(start, stop):
            provider = f"prov{i:06d}"
            key = f"key-{provider}"
            records.create_account(tx, provider, ["provider"], key, opt_in=True, at=now)
            terms = {"declared_failure_rate": f"1/{i % 50 + 2}", "sample_gate": 3}
            calls.set_terms(tx, provider, {**terms, "window_days": WINDOW.days}, now)
            for j, ago in enumerate((timedelta(days=8), timedelta(days=3), timedelta(hours=1))):
                verdict = ("PASS", "FAIL")[(i + j) % 2]
                add_record(
                    tx, f"call-{provider}-{j}", provider, verdict, now - ago, submitted_by="root"
                )
                kind = counted_as(verdict, True, None)
                quality_windows.observe(tx, provider, WINDOW, now - ago, kind)


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    now = datetime.now(UTC)
    with store.write() as tx:
        records.create_account(tx, "root", ["admin"], "key-root", opt_in=True, at=now)
    app = App(store)
    with store.read() as tx:
        root = records.account(tx, "root")
    assert root is not None

    def one_read_each() -> int:
        def read(tx: Any) -> int:
            termed = calls.every_terms(tx)
            return sum(app.calls.quality_in(tx, p)["window"]["fail"] for p in termed)

        return app.unit.read(read, one_moment=True)

    rows = []
    made = 0
    for size in sizes:
        grow(store, made, size, now)
        made = size
        board = app.dashboards.operator(root)
        assert len(board["providers"]) == min(size, 10), board["providers"]
        operator = median_ms(lambda: app.dashboards.operator(root), reads)
        each = median_ms(one_read_each, reads)
        rows.append(
            {
                "providers": size,
                "operator_ms": operator,
                "operator_us_a_provider": operator * 1000 / size,
                "one_read_each_ms": each,
                "operator_over_one_read_each": operator / each,
            }
        )
    app.close()
    store.dispose()
    return {"db": url.split(":", 1)[0], "reads": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "read", run, sizes="100,1000,3000", what="providers")
    if args.json:
        return
    print(f"{out['db']}: the operator's dashboard, median of {args.reads} reads")
    print("providers   operator ms   µs a provider   one read each ms   operator / each")
    for r in out["rows"]:
        print(
            f"{r['providers']:>9} {r['operator_ms']:13.1f} {r['operator_us_a_provider']:15.1f}"
            f" {r['one_read_each_ms']:18.1f} {r['operator_over_one_read_each']:16.2f}×"
        )


if __name__ == "__main__":
    main()
