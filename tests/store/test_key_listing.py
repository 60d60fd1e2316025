"""An account's API keys: its live ones listed whole, its revoked ones a page at a time, newest
revoked first (ties by id), each once, and the live ones counted; none of the three reads the
keys of the other kind (revision 0044), however many the account revoked."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.store import Store, Transaction, api_keys, records
from adjudge.store.api_keys import KeyGrant
from adjudge.store.pages import Page
from support.migrations import downgrade
from support.paging import every_page
from support.plans import sqlite_plans

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
OWNERS = ("ann", "bob")
_runs = itertools.count()

#: A key: its owner, seconds after T0 it was made, and when it was revoked (None: live).
_key = st.tuples(st.sampled_from(OWNERS), st.integers(0, 3), st.sampled_from((None, 4, 5, 6)))
Plan = tuple[str, int, int | None]


def _made(store: Store, plans: list[Plan]) -> list[KeyGrant]:
    run = next(_runs)
    made = []
    with store.write() as tx:
        tx.conn.execute(text("DELETE FROM api_keys"))
        for name in OWNERS:
            if records.account(tx, name) is None:
                records.create_account(tx, name, ["agent"], f"k-{name}", opt_in=False, at=T0)
        for n, (owner, made_at, revoked_at) in enumerate(plans):
            at = T0 + timedelta(seconds=made_at)
            grant = KeyGrant(f"key_{run}_{n:03d}", owner, f"k{n}", None, None, at)
            api_keys.add(tx, grant, f"sha256:{run:032x}{n:032x}")
            if revoked_at is not None:
                api_keys.revoke(tx, grant.id, T0 + timedelta(seconds=revoked_at))
            made.append(api_keys.get(tx, grant.id))
    return [g for g in made if g is not None]


def _revoked_pages(store: Store, owner: str, limit: int) -> list[str]:
    def read(tx: Transaction, cursor: str | None) -> Page:
        return Page(*api_keys.revoked(tx, owner, cursor=cursor, limit=limit))

    return [g.id for g in every_page(store, read, limit)]


def _check(store: Store, made: list[KeyGrant], limit: int) -> None:
    for owner in OWNERS:
        mine = [g for g in made if g.account_id == owner]
        live = sorted((g for g in mine if g.revoked_at is None), key=lambda g: (g.created_at, g.id))
        gone = sorted((g for g in mine if g.revoked_at is not None), key=lambda g: g.id)
        gone.sort(key=lambda g: g.revoked_at or T0, reverse=True)
        with store.read() as tx:
            assert [g.id for g in api_keys.live(tx, owner)] == [g.id for g in live]
            assert api_keys.live_count(tx, owner) == len(live)
        assert _revoked_pages(store, owner, limit) == [g.id for g in gone]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plans=st.lists(_key, max_size=12), limit=st.integers(1, 4))
def test_the_live_keys_and_the_pages_of_revoked_ones_are_each_key_once(
    sqlite_store: Store, plans: list[Plan], limit: int
) -> None:
    """For any keys of two accounts, some revoked (several at one moment): an account's live
    keys are exactly its unrevoked ones, oldest first, and counted so; its revoked ones, page
    after page, are each of them once, newest revoked first and ties by id."""
    _check(sqlite_store, _made(sqlite_store, plans), limit)


def test_the_key_listings_on_each_database(store: Store) -> None:
    """On each database: live and revoked keys of two accounts, three revoked at one moment,
    two a page."""
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


def test_migration_0044_reads_each_kind_of_key_on_its_own_range(store: Store) -> None:
    """After 0044, the live keys' listing and count, and a page of the revoked ones from a
    cursor, each search the account's range of ``ix_api_keys_account_revoked`` for their kind
    of key and the page sorts nothing (SQLite's plans: before, each read every key the account
    ever made by its account index); 0044 also downgrades cleanly."""
    made = _made(store, [("ann", 0, None), ("ann", 1, 4), ("ann", 2, 5)])
    downgrade(store, "0043")
    with store.read() as tx:
        assert [g.id for g in api_keys.live(tx, "ann")] == [made[0].id]
    store.migrate()
    if store.dialect != "sqlite":
        return
    with store.read() as tx:
        _, cursor = api_keys.revoked(tx, "ann", cursor=None, limit=1)
    reads = {
        "live": lambda tx: api_keys.live(tx, "ann"),
        "count": lambda tx: api_keys.live_count(tx, "ann"),
        "revoked": lambda tx: api_keys.revoked(tx, "ann", cursor=cursor, limit=1),
    }
    for name, read in reads.items():
        [(_, plan)] = sqlite_plans(store, read)
        assert any(
            "USING INDEX ix_api_keys_account_revoked (account_id=? AND revoked_at" in step
            or "USING COVERING INDEX ix_api_keys_account_revoked (account_id=? AND revoked_at"
            in step
            for step in plan
        ), (name, plan)
        if name == "revoked":
            assert not any("TEMP B-TREE" in step for step in plan), plan
