"""An account's webhook deliveries of one state or of one endpoint are a page of an index range,
however many others it has; disabling an endpoint ends its pending deliveries from its account's
pending range; the worker's look for due deliveries reads the pending ones only (revision
0050). Each is checked on SQLite's plans, and the listings' answers on both databases."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adjudge.store import Store, Transaction, outbox, pages
from adjudge.store.outbox import DELIVERED, FAILED, PENDING
from support.deliveries import empty, pile
from support.migrations import downgrade
from support.plans import sqlite_plans

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)


def _made(store: Store) -> None:
    """Ann: 400 delivered to one endpoint, 3 failed and 2 pending to another; Bob: 300
    pending."""
    empty(store)
    pile(store, "ann", 400, T0, status=DELIVERED)
    pile(store, "ann", 3, T0 + timedelta(hours=1), status=FAILED, endpoint="ep_ann_b")
    pile(store, "ann", 2, T0 + timedelta(hours=2), endpoint="ep_ann_b")
    pile(store, "bob", 300, T0)


def _steps(store: Store, run: Callable[[Transaction], Any], *, write: bool = False) -> list[str]:
    plans = sqlite_plans(store, run, write=write)
    return [step for _, steps in plans for step in steps]


def test_the_reads_of_deliveries_on_each_database(store: Store) -> None:
    """On each database, after 0050 is downgraded and applied again: a page of Ann's failed
    deliveries is her three, newest first; a page of one endpoint's is its five; disabling
    it ends its two pending ones and no other; Bob's pending are still due."""
    _made(store)
    downgrade(store, "0049")
    store.migrate()
    with store.read() as tx:
        failed = outbox.deliveries(tx, "ann", status=FAILED, limit=10)
        by_endpoint = outbox.deliveries(tx, "ann", endpoint_id="ep_ann_b", limit=10)
    assert [d.status for d in failed.items] == [FAILED] * 3
    assert [d.created_at for d in failed.items] == sorted(
        (d.created_at for d in failed.items), reverse=True
    )
    assert {d.endpoint_id for d in by_endpoint.items} == {"ep_ann_b"}
    assert len(by_endpoint.items) == 5
    with store.write() as tx:
        outbox.disable_endpoint(tx, "ep_ann_b", at=T0 + timedelta(days=1))
    with store.read() as tx:
        ended = outbox.deliveries(tx, "ann", endpoint_id="ep_ann_b", status=PENDING, limit=10)
        assert ended.items == []
        assert len(outbox.deliveries(tx, "ann", status=FAILED, limit=10).items) == 5
        assert len(outbox.deliveries(tx, "bob", status=PENDING, limit=500).items) == 300
        assert outbox.has_due(tx, now=T0 + timedelta(days=1))


def test_reads_of_deliveries_take_their_range(sqlite_store: Store) -> None:
    """SQLite's plans: the state's and the endpoint's pages search their indexes and sort
    nothing; disabling an endpoint searches its account's pending deliveries (before, every
    pending delivery of every account; on PostgreSQL every delivery); the worker's look for
    due ones and the oldest pending read the pending deliveries' index."""
    _made(sqlite_store)

    def failed(tx: Transaction) -> None:
        outbox.deliveries(tx, "ann", status=FAILED, limit=2)

    def of_endpoint(tx: Transaction) -> None:
        outbox.deliveries(tx, "ann", endpoint_id="ep_ann_b", limit=2)

    def look(tx: Transaction) -> None:
        outbox.has_due(tx, now=T0 + timedelta(days=1))
        outbox.oldest_pending(tx)

    def disable(tx: Transaction) -> None:
        outbox.disable_endpoint(tx, "ep_ann_b", at=T0 + timedelta(days=1))

    for run, index in (
        (failed, "ix_webhook_deliveries_account_status (account_id=? AND status=?)"),
        (of_endpoint, "ix_webhook_deliveries_endpoint (endpoint_id=?)"),
    ):
        steps = _steps(sqlite_store, run)
        assert any(index in step for step in steps), steps
        assert not any("TEMP B-TREE" in step for step in steps), steps
    steps = [s for s in _steps(sqlite_store, look) if "webhook_deliveries" in s]
    assert len(steps) == 2 and all("ix_webhook_deliveries_due" in s for s in steps), steps
    steps = [s for s in _steps(sqlite_store, disable, write=True) if "webhook_deliveries" in s]
    ranges = ("_pending_account (account_id=?)", "_account_status (account_id=? AND status=?)")
    assert steps and all(any(r in s for r in ranges) for s in steps), steps


def test_an_endpoints_page_of_one_state_walks_a_bounded_range(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On each database, the walk cut to 10: a page of an endpoint's failed deliveries behind
    40 delivered ones walks at most 10 of them (empty pages, each a cursor on) until the two
    failed, which are all found, each once; another account's endpoint gives nothing (before,
    such a page walked every delivery the endpoint ever had)."""
    empty(store)
    pile(store, "ann", 2, T0, status=FAILED, endpoint="ep_ann_b")
    pile(store, "ann", 40, T0 + timedelta(hours=1), status=DELIVERED, endpoint="ep_ann_b")
    monkeypatch.setattr(pages, "SIFTED_ROWS", 10)
    for account, wanted in (("ann", 2), ("bob", 0)):
        sizes, found, cursor = [], [], None
        while True:
            with store.read() as tx:
                page = outbox.deliveries(
                    tx, account, endpoint_id="ep_ann_b", status=FAILED, limit=5, cursor=cursor
                )
            sizes.append(len(page.items))
            found += [d.id for d in page.items]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(found) == len(set(found)) == wanted and len(sizes) == 5, sizes
