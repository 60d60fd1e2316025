"""A provider's declared quality terms: the latest declaration holds, also when two arrive at
once (two processes, a double click), where the second used to fail on the row's key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adjudge.store import Store, Transaction, calls, records
from support.at_once import at_once

T0 = datetime(2026, 3, 1, tzinfo=UTC)
FIRST = {"window": "P30D", "min_pass_rate": 0.9}
LATER = {"window": "P7D", "min_pass_rate": 0.95}


def test_two_declarations_at_once_both_land_the_later_last(store: Store) -> None:
    with store.write() as tx:
        records.create_account(tx, "prov", ["provider"], "key-prov", opt_in=False, at=T0)

    def first(tx: Transaction) -> None:
        calls.set_terms(tx, "prov", FIRST, T0)

    def second(tx: Transaction) -> None:
        calls.set_terms(tx, "prov", LATER, T0 + timedelta(seconds=1))

    assert at_once(store, first, second) == []
    with store.read() as tx:
        assert calls.terms(tx, "prov") == LATER


def test_a_declaration_replaces_the_one_before(store: Store) -> None:
    with store.write() as tx:
        records.create_account(tx, "prov", ["provider"], "key-prov", opt_in=False, at=T0)
        calls.set_terms(tx, "prov", FIRST, T0)
    with store.write() as tx:
        calls.set_terms(tx, "prov", LATER, T0 + timedelta(days=1))
    with store.read() as tx:
        assert calls.terms(tx, "prov") == LATER
