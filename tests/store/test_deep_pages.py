"""A page deep in a listing starts its index's walk at the cursor: its cost is a page's, not the
rows before it. With the cursor's terms only in an ``OR`` (older, or as old and after its key),
the planner searched from the listing's newest row and skipped each one up to the cursor."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from adjudge.store import Store, Transaction, call_reports, gateway, ledger, outbox, pages, records
from support.plans import sqlite_plans

AT = datetime(2026, 3, 1, tzinfo=UTC)
CURSOR = pages.encode_cursor(AT, "k")
LINE = pages.encode_cursor(AT, "12")  # a ledger line's cursor names its entry id

#: Each keyset listing read from a cursor: (the table it lists, its time's range in the plan).
DEEP: dict[str, tuple[Callable[[Transaction], Any], str, str]] = {
    "tasks by status": (
        lambda tx: records.tasks(tx, status="funded", cursor=CURSOR),
        "tasks",
        "posted_at<?",
    ),
    "tasks by poster": (
        lambda tx: records.tasks(tx, poster="pat", cursor=CURSOR),
        "tasks",
        "posted_at<?",
    ),
    "all tasks": (lambda tx: records.tasks(tx, cursor=CURSOR), "tasks", "posted_at<?"),
    "a party's tasks": (
        lambda tx: records.tasks(tx, involving="pat", cursor=CURSOR),
        "tasks",
        "posted_at<?",
    ),
    "a party's panel seats": (
        lambda tx: records.tasks(tx, involving="pat", cursor=CURSOR),
        "task_seats",
        "posted_at<?",
    ),
    "all calls": (
        lambda tx: gateway.list_calls(tx, cursor=CURSOR),
        "gateway_calls",
        "started_at<?",
    ),
    "a party's calls": (
        lambda tx: gateway.list_calls(tx, party="pat", cursor=CURSOR),
        "gateway_calls",
        "started_at<?",
    ),
    "a tool's calls": (
        lambda tx: gateway.list_calls(tx, tool="tides", cursor=CURSOR),
        "gateway_calls",
        "started_at<?",
    ),
    "webhook deliveries": (
        lambda tx: outbox.deliveries(tx, "pat", cursor=CURSOR),
        "webhook_deliveries",
        "created_at<?",
    ),
    "all ledger lines": (
        lambda tx: ledger.movements(tx, ledger.Movements(), limit=50, cursor=LINE),
        "ledger_entries",
        "at<?",
    ),
    "an account's ledger lines": (
        lambda tx: ledger.movements(
            tx, ledger.Movements(accounts=("wallet:pat",)), limit=50, cursor=LINE
        ),
        "ledger_entries",
        "at<?",
    ),
    "a kind's ledger lines": (
        lambda tx: ledger.movements(tx, ledger.Movements(kind="fee"), limit=50, cursor=LINE),
        "ledger_entries",
        "at<?",
    ),
    "a status's call reports": (
        lambda tx: call_reports.page(tx, status="upheld", after="call-1", limit=50),
        "call_reports",
        "filed_at>?",
    ),
    "call reports": (
        lambda tx: call_reports.page(tx, status=None, after="call-1", limit=50),
        "call_reports",
        "filed_at>?",
    ),
}


#: Reads that are not a listing's walk: rows by their key.
_NOT_WALKS = ("(id=?)", "(call_id=?)")


@pytest.mark.parametrize("name", DEEP)
def test_a_page_after_a_cursor_searches_its_index_from_the_cursor(
    sqlite_store: Store, name: str
) -> None:
    """Each read of the listed table searches an index, its range starting at the cursor's
    time (SQLite's plan; each role's read of a party's listing too, a panel seat's by the
    posted time it keeps), and none scans the table."""
    run, table, bounded = DEEP[name]
    steps = [step for _, plan in sqlite_plans(sqlite_store, run) for step in plan]
    reads = [s for s in steps if s.startswith((f"SEARCH {table} ", f"SCAN {table} "))]
    walks = [s for s in reads if not any(key in s for key in _NOT_WALKS)]
    assert walks, steps
    assert all(s.startswith("SEARCH") and bounded in s for s in walks), walks
