"""An account's webhook endpoints: its enabled ones listed whole, its disabled ones a page at a
time, newest disabled first (ties by id), each once; neither listing reads the endpoints of the
other kind (revisions 0046 and 0047), however many the account made and deleted."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.store import Store, Transaction, outbox, records
from adjudge.store.outbox import StoredEndpoint
from adjudge.store.pages import Page
from support.migrations import downgrade
from support.paging import every_page
from support.plans import sqlite_plans

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
OWNERS = ("ann", "bob")
_runs = itertools.count()

#: An endpoint: its owner, seconds after T0 it was made, and when it was disabled (None: never).
_endpoint = st.tuples(st.sampled_from(OWNERS), st.integers(0, 3), st.sampled_from((None, 4, 5, 6)))
Plan = tuple[str, int, int | None]


def _made(store: Store, plans: list[Plan]) -> list[StoredEndpoint]:
    run = next(_runs)
    made = []
    with store.write() as tx:
        tx.conn.execute(text("DELETE FROM webhook_endpoints"))
        for name in OWNERS:
            if records.account(tx, name) is None:
                records.create_account(tx, name, ["agent"], f"k-{name}", opt_in=False, at=T0)
        for n, (owner, made_at, disabled_at) in enumerate(plans):
            endpoint_id = f"whep_{run}_{n:03d}"
            outbox.add_endpoint(
                tx,
                endpoint_id=endpoint_id,
                account_id=owner,
                url=f"https://hooks.example/{n}",
                sealed_secret="sealed",
                event_types=None,
                description="",
                at=T0 + timedelta(seconds=made_at),
            )
            if disabled_at is not None:
                outbox.disable_endpoint(tx, endpoint_id, at=T0 + timedelta(seconds=disabled_at))
            made.append(outbox.endpoint(tx, endpoint_id))
    return [e for e in made if e is not None]


def _disabled_pages(store: Store, owner: str, limit: int) -> list[str]:
    def read(tx: Transaction, cursor: str | None) -> Page:
        return outbox.disabled_endpoints(tx, owner, cursor=cursor, limit=limit)

    return [e.id for e in every_page(store, read, limit)]


def _check(store: Store, made: list[StoredEndpoint], limit: int) -> None:
    for owner in OWNERS:
        mine = [e for e in made if e.account_id == owner]
        live = sorted((e for e in mine if e.enabled), key=lambda e: (e.created_at, e.id))
        gone = sorted((e for e in mine if not e.enabled), key=lambda e: e.id)
        gone.sort(key=lambda e: e.disabled_at or T0, reverse=True)
        with store.read() as tx:
            assert [e.id for e in outbox.endpoints(tx, owner)] == [e.id for e in live]
            assert outbox.enabled_count(tx, owner) == len(live)
        assert _disabled_pages(store, owner, limit) == [e.id for e in gone]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plans=st.lists(_endpoint, max_size=12), limit=st.integers(1, 4))
def test_the_enabled_endpoints_and_the_pages_of_disabled_ones_are_each_once(
    sqlite_store: Store, plans: list[Plan], limit: int
) -> None:
    """For any endpoints of two accounts, some disabled (several at one moment): an account's
    listed endpoints are exactly its enabled ones, oldest first, and counted so; its disabled
    ones, page after page, are each of them once, newest disabled first and ties by id."""
    _check(sqlite_store, _made(sqlite_store, plans), limit)


def test_the_endpoint_listings_on_each_database(store: Store) -> None:
    """On each database: enabled and disabled endpoints of two accounts, three disabled at one
    moment, two a page."""
    plans: list[Plan] = [
        ("ann", 0, None),
        ("ann", 1, 5),
        ("bob", 1, 5),
        ("ann", 2, 5),
        ("ann", 2, None),
        ("ann", 3, 4),
        ("ann", 3, 5),
        ("bob", 3, None),
    ]
    _check(store, _made(store, plans), 2)


def test_migration_0047_reads_a_page_of_disabled_endpoints_on_its_range(store: Store) -> None:
    """After 0047, the enabled endpoints' listing searches their range of the account's index
    and a page of the disabled ones from a cursor searches the account's range of
    ``ix_webhook_endpoints_account_disabled`` and sorts nothing (SQLite's plans: before, each
    read every endpoint the account ever made); 0047 also downgrades cleanly."""
    made = _made(store, [("ann", 0, None), ("ann", 1, 4), ("ann", 2, 5)])
    downgrade(store, "0046")
    with store.read() as tx:
        assert [e.id for e in outbox.endpoints(tx, "ann")] == [made[0].id]
    store.migrate()
    if store.dialect != "sqlite":
        return
    with store.read() as tx:
        cursor = outbox.disabled_endpoints(tx, "ann", cursor=None, limit=1).next_cursor
    [(_, enabled)] = sqlite_plans(store, lambda tx: outbox.endpoints(tx, "ann"))
    assert any(
        "USING INDEX ix_webhook_endpoints_account_enabled (account_id=? AND enabled=?)" in step
        for step in enabled
    ), enabled
    assert not any("TEMP B-TREE" in step for step in enabled), enabled
    [(_, page)] = sqlite_plans(
        store, lambda tx: outbox.disabled_endpoints(tx, "ann", cursor=cursor, limit=1)
    )
    assert any(
        "USING INDEX ix_webhook_endpoints_account_disabled (account_id=? AND disabled_at" in step
        for step in page
    ), page
    assert not any("TEMP B-TREE" in step for step in page), page
