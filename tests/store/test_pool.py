"""A pooled PostgreSQL connection that the server closed while it sat idle (a restart, an idle
time-out, an administrator ending it) is replaced as it is checked out, with no round trip to
find out: the next transaction commits on a new one."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import make_url, text

from adjudge.market import WORLD, Transfer
from adjudge.store import Store, Transaction, ledger

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _backend(tx: Transaction) -> int:
    return int(tx.conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _ended(store: Store, pid: int) -> None:
    """End server process ``pid`` from a connection of its own, and wait until it is gone."""
    url = make_url(store.url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):
            found = admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
            if found.fetchone() is None:
                return
            time.sleep(0.05)
    raise AssertionError(f"server process {pid} did not end")


def test_a_connection_the_server_closed_while_pooled_is_replaced(store: Store) -> None:
    if store.dialect == "sqlite":
        pytest.skip("SQLite is a file: there is no server to close a connection")
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 1)], task_id="t1", at=T0)
        pid = _backend(tx)
    _ended(store, pid)
    with store.write() as tx:  # the pool's last one in is the first out: the closed one
        assert _backend(tx) != pid
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 2)], task_id="t1", at=T0)
        pid = _backend(tx)
    _ended(store, pid)
    with store.read() as tx:
        assert _backend(tx) != pid
        assert [e["amount"] for e in ledger.entries(tx, "t1")] == [-1, 1, -2, 2]
