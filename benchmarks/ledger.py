"""The admin's ledger (``GET /ledger``) against the history of paid calls behind it.

What it measures: ``App.receipts.ledger`` as the admin reads it, ``--reads`` times, on a store
that has run N paid calls, for each N of ``--sizes``: each call's reservation taken from the
caller's wallet and emptied into the provider's wallet against its receipt, as a settle does
(so each call writes four ledger lines and, before its row went with its last debit, left one
balance row holding 0), each caller funded by a deposit for its ten calls (so the wallets, a
balance row each, are a tenth of the calls: the view's page of balances is as long at every N
past the first, where the list of every balance it was grows with them). Beside it, in the same
run, the same view recounted (``recount=True``: every line summed, in all and by account against
its balance) — its sum of the entries is the one the view read on every request before. The
figure: each read's median time at each N, its ratio to the smallest N's, and how many balance
rows the store holds.

How: the rows are written through ``ledger.transfer``, 1,000 calls a transaction (the receipt
each release names is marked appended in it, as the settle that signs one does). Run from the
repository root:

    .venv/bin/python benchmarks/ledger.py                      # SQLite, 1k to 100k calls
    .venv/bin/python benchmarks/ledger.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dashboards import fresh_store, median_ms, sized_run, with_ratios
from sqlalchemy import func, select

from adjudge.app import App
from adjudge.market import WORLD, Transfer
from adjudge.store import Store, ledger, records
from adjudge.store import schema as s

BATCH = 1_000
PRICE = 250_000
#: Each caller makes ten calls: the callers' wallets, and so the balance rows, grow with them.
CALLS_A_CALLER = 10


def grow(store: Store, start: int, stop: int, now: datetime) -> None:
    """Calls ``start`` to ``stop`` (exclusive), each reserved and then settled."""
    for first in range(start, stop, BATCH):
        with store.write() as tx:
            for n in range(first, min(first + BATCH, stop)):
                hold, receipt = f"hold:call:{n:09d}", f"rcpt-{n}"
                payer = f"wallet:caller{n // CALLS_A_CALLER:07d}"
                if n % CALLS_A_CALLER == 0:  # a new caller, funded for its calls
                    fund = [Transfer(WORLD, payer, PRICE * CALLS_A_CALLER, "deposit")]
                    ledger.transfer(tx, fund, task_id=None, at=now)
                ledger.transfer(tx, [Transfer(payer, hold, PRICE, "reserve")], task_id=None, at=now)
                tx.appended.add(receipt)
                charge = [Transfer(hold, "wallet:skycast", PRICE, "charge")]
                ledger.transfer(tx, charge, task_id=None, at=now, receipt_id=receipt)


def run(url: str, sizes: list[int], reads: int) -> dict[str, Any]:
    store = fresh_store(url)
    now = datetime.now(UTC)
    with store.write() as tx:
        records.create_account(tx, "root", ["admin"], "key-root", opt_in=True, at=now)
    app = App(store)
    with store.read() as tx:
        root = records.account(tx, "root")
    assert root is not None
    rows = []
    made = 0
    for size in sizes:
        grow(store, made, size, now)
        made = size
        if store.dialect == "postgresql":
            # The emptied rows' dead versions cleared and the planner's statistics made, as
            # autovacuum does in a running database.
            with store.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                    "VACUUM ANALYZE"
                )
        with store.read() as tx:
            assert ledger.balance(tx, "wallet:skycast") == PRICE * size
        counted = app.receipts.ledger(root, recount=True)
        sums = (counted["sum_of_balances"], counted["sum_of_entries"], counted["unmatched"])
        assert sums == ("0", "0", []), counted
        with store.read() as tx:
            balance_rows = tx.conn.execute(select(func.count()).select_from(s.balances)).scalar()
        rows.append(
            {
                "calls": size,
                "balance_rows": balance_rows,
                "view_ms": median_ms(lambda: app.receipts.ledger(root), reads),
                "recount_ms": median_ms(lambda: app.receipts.ledger(root, recount=True), reads),
            }
        )
    app.close()
    store.dispose()
    with_ratios(rows)
    return {"db": url.split(":", 1)[0], "reads": reads, "rows": rows}


def main() -> None:
    args, out = sized_run(__doc__, "view", run)
    if args.json:
        return
    print(f"{out['db']}: the admin's ledger, median of {args.reads} reads")
    print("   calls   balance rows        view ms (×first)     recount ms (×first)")
    for r in out["rows"]:
        print(
            f"{r['calls']:>8}   {r['balance_rows']:>12}   {r['view_ms']:12.2f} "
            f"({r['view_ratio']:6.2f}×)   {r['recount_ms']:12.2f} ({r['recount_ratio']:6.2f}×)"
        )


if __name__ == "__main__":
    main()
