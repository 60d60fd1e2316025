"""An account stores at most ``idempotency_keys_per_hour`` answers under new Idempotency-Keys
an hour: past it the change is refused and rolled back (nothing stored, nothing moved), a key
already answered still replays, and other accounts and the next hour are not held back; the
upkeep forgets the counters of windows that ended; revision 0062 downgrades cleanly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from adjudge.app import maintenance
from adjudge.errors import Error
from adjudge.settings import Settings
from adjudge.store import Store, quotas
from adjudge.store import schema as s
from support.harness import Harness, make_harness
from support.migrations import downgrade
from support.plans import sqlite_plans

TASK = {
    "title": "A summary",
    "brief": "Write a summary.",
    "reward": "2000000",
    "deadline_hours": 24,
    "mode": "manual",
}


def _count(store: Store, table: object, *where: object) -> int:
    with store.read() as tx:
        q = select(func.count()).select_from(table)  # type: ignore[arg-type]
        return int(tx.conn.execute(q.where(*where)).scalar_one())  # type: ignore[arg-type]


def _post(h: Harness, key: str | None, **fields: str) -> Any:
    headers = {} if key is None else {"Idempotency_Key": key}
    return h.call("pat", "POST", "/tasks", {**TASK, **fields}, **headers)


def test_new_keys_past_the_hours_quota_are_refused_and_change_nothing(store: Store) -> None:
    """On each database, three keys an hour: a refused post and posts without a key count
    nothing; the fourth new key is 429 with Retry-After, its task not posted, its reward not
    taken and its key not stored; the answered keys replay; another account and the next hour
    store theirs."""
    h = make_harness(store, settings=Settings(idempotency_keys_per_hour=3))
    poor = _post(h, "too-much", reward="999999999999")
    assert poor.json()["error"]["code"] == "INSUFFICIENT_FUNDS", poor.text
    assert _post(h, None).status_code == 201
    for n in range(3):
        assert _post(h, f"k{n}").status_code == 201
    tasks, wallet = _count(store, s.tasks), h.balance("wallet:pat")
    stored = _count(store, s.idempotency, s.idempotency.c.account_id == "pat")
    assert stored == 3

    over = _post(h, "k3")
    assert over.status_code == 429
    assert over.json()["error"]["code"] == "IDEMPOTENCY_KEYS_QUOTA_EXCEEDED"
    assert 0 < int(over.headers["Retry-After"]) <= 3601
    assert _count(store, s.tasks) == tasks and h.balance("wallet:pat") == wallet
    assert _count(store, s.idempotency, s.idempotency.c.account_id == "pat") == stored

    again = _post(h, "k1")
    assert again.status_code == 201
    assert again.headers.get("Idempotent-Replayed") == "true"
    other = h.call("root", "POST", "/accounts/bob/deposits", {"amount": "1"}, Idempotency_Key="b")
    assert other.status_code == 200, other.text

    h.advance(hours=1)
    assert _post(h, "k3").status_code == 201
    assert _count(store, s.tasks) == tasks + 1


def test_the_counters_of_ended_windows_are_forgotten(store: Store) -> None:
    """On each database: the upkeep forgets the counters of windows that started more than the
    longest window ago, in batches, and keeps the others; revision 0062 downgrades cleanly."""
    h = make_harness(store)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    with store.write() as tx:
        for n in range(5):
            quotas.use(tx, f"post:a{n}", start)
        quotas.use(tx, "post:late", start + timedelta(days=1))
    h.clock.current = start + quotas.LONGEST_WINDOW + timedelta(hours=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(maintenance, "PRUNE_BATCH", 2)
        done = maintenance.run_once(h.app)
    assert done["windows_forgotten"] == 5 and done["failed"] == 0
    with store.read() as tx:
        assert quotas.count(tx, "post:late", start + timedelta(days=1)) == 1
        assert all(quotas.count(tx, f"post:a{n}", start) == 0 for n in range(5))
    downgrade(store, "0061")
    store.migrate()


def test_the_ended_windows_are_read_on_their_index(sqlite_store: Store) -> None:
    """SQLite's plan: the pruning's read searches ``ix_quotas_window``, sorting nothing."""
    now = datetime(2026, 3, 1, tzinfo=UTC)
    [(_, plan), *_] = sqlite_plans(sqlite_store, lambda tx: quotas.prune(tx, now, 10), write=True)
    assert any("ix_quotas_window" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan


def test_a_counter_is_written_at_the_commit_holding_nothing_before(store: Store) -> None:
    """PostgreSQL: the change counting a key leaves the account's counter unlocked while it
    runs (another transaction takes the row at once), and adds to it as it commits. Locked from
    the count on, a change that then waited for a balance at its commit (its credits) waited
    in a cycle with one holding that balance and wanting the counter."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: nothing else holds a row meanwhile")
    start = datetime(2026, 3, 1, tzinfo=UTC)
    with store.write() as tx:
        quotas.use(tx, "idempotency:pat", start)
    with store.write() as tx:
        assert quotas.count_at_commit(tx, "idempotency:pat", start) == 1
        assert quotas.count_at_commit(tx, "idempotency:pat", start) == 2
        with store.engine.connect() as other, other.begin():
            other.exec_driver_sql("SET LOCAL lock_timeout = '2s'")
            other.exec_driver_sql(
                "SELECT used FROM quotas WHERE scope = 'idempotency:pat' FOR UPDATE NOWAIT"
            )
    with store.read() as tx:
        assert quotas.count(tx, "idempotency:pat", start) == 3


def test_no_quota_window_is_longer_than_the_counters_are_kept() -> None:
    """The longest window a setting may give (the webhooks' test window) fits in
    :data:`quotas.LONGEST_WINDOW`: the upkeep never forgets a counter whose window still runs."""
    longest = Settings(webhooks_test_window_hours=24 * 7).webhooks_test_window
    assert longest <= quotas.LONGEST_WINDOW
    with pytest.raises(Error, match="webhooks_test_window_hours"):
        Settings(webhooks_test_window_hours=24 * 7 + 1)
