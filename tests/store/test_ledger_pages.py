"""A listing of ledger lines, page after page, is exactly the lines its filters keep, newest
first (ties by the later line first): whatever the accounts asked for and the kind, and when a
page of a kind within accounts walks only a few lines of each account (2,000 in service), its
pages come short, some empty, each with the cursor to read on, and still together hold every
line kept once."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text

from adjudge.market import WORLD, Transfer
from adjudge.store import Store, ledger
from adjudge.store import schema as s
from adjudge.store.ledger import Movements
from support.plans import sqlite_plans

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
WALLETS = ("wallet:ann", "wallet:bob", "wallet:cy")
KINDS = ("deposit", "fee", "payout")
_runs = itertools.count()

#: A transfer from the world: to which wallet, its kind, seconds after T0.
_line = st.tuples(st.sampled_from(WALLETS), st.sampled_from(KINDS), st.integers(0, 4))
_asked = st.tuples(
    st.sampled_from((None, ("wallet:ann",), ("wallet:ann", "wallet:bob"), (WORLD,))),
    st.sampled_from((None, *KINDS)),
)


def _made(store: Store, plans: list[tuple[str, str, int]]) -> list[tuple[int, str, str, datetime]]:
    with store.write() as tx:
        for table in ("ledger_entries", "balances"):
            tx.conn.execute(text(f"DELETE FROM {table}"))
        for wallet, kind, seconds in plans:
            at = T0 + timedelta(seconds=seconds)
            ledger.transfer(tx, [Transfer(WORLD, wallet, 1, kind)], task_id=None, at=at)
    with store.read() as tx:
        e = s.ledger_entries.c
        return [
            (int(r.id), r.account, r.memo, r.at)
            for r in tx.conn.execute(select(e.id, e.account, e.memo, e.at))
        ]


def _pages(store: Store, which: Movements, limit: int) -> list[int]:
    found: list[int] = []
    cursor = None
    while True:
        with store.read() as tx:
            lines, cursor = ledger.movements(tx, which, limit=limit, cursor=cursor)
        assert len(lines) <= limit
        found += [int(line["id"]) for line in lines]
        if cursor is None:
            return found


def _wanted(made: list[tuple[int, str, str, datetime]], which: Movements) -> list[int]:
    kept = [
        (at, line_id)
        for line_id, account, memo, at in made
        if (which.accounts is None or account in which.accounts)
        and (which.kind is None or memo == which.kind)
    ]
    return [line_id for _, line_id in sorted(kept, reverse=True)]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    plans=st.lists(_line, min_size=1, max_size=14),
    asked=st.lists(_asked, min_size=1, max_size=4),
    limit=st.integers(1, 4),
    walked=st.sampled_from((1, 2, 3, ledger.SIFTED_LINES)),
)
def test_every_page_of_lines_is_exactly_the_lines_kept(
    sqlite_store: Store,
    plans: list[tuple[str, str, int]],
    asked: list[tuple[tuple[str, ...] | None, str | None]],
    limit: int,
    walked: int,
) -> None:
    """For any lines and filters, with an account's walk of one to three lines or the
    service's: the pages together are the lines kept, newest first, each once."""
    made = _made(sqlite_store, plans)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ledger, "SIFTED_LINES", walked)
        for accounts, kind in asked:
            which = Movements(accounts=accounts, kind=kind)
            assert _pages(sqlite_store, which, limit) == _wanted(made, which), (accounts, kind)


def test_a_page_of_a_rare_kind_walks_a_bounded_range(sqlite_store: Store) -> None:
    """Ann's fees among 30 deposits, an account's walk cut to 10 lines: empty pages, each a
    cursor on, until her one fee."""
    plans = [("wallet:ann", "deposit", 3)] * 30 + [("wallet:ann", "fee", 0)]
    _made(sqlite_store, plans)
    which = Movements(accounts=("wallet:ann",), kind="fee")
    sizes: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ledger, "SIFTED_LINES", 10)
        cursor = None
        while True:
            with sqlite_store.read() as tx:
                lines, cursor = ledger.movements(tx, which, limit=5, cursor=cursor)
            sizes.append(len(lines))
            if cursor is None:
                break
    assert sizes == [0, 0, 0, 1]


def test_lines_of_a_kind_within_accounts_read_the_accounts_lines(sqlite_store: Store) -> None:
    """SQLite's plans: a page of a kind within an account, and its totals, search the
    account's lines (``ix_ledger_entries_account_at``), never the kind's index (which walked
    every line of the kind, every account's, to find the account's few: 2.95 → 26.9 ms from
    4,000 to 120,000 lines); a page of a kind across every account reads the kind's."""
    _made(sqlite_store, [("wallet:ann", "fee", 0), ("wallet:bob", "fee", 1)])
    mine = Movements(accounts=("wallet:ann",), kind="fee")

    def steps(run: Any) -> list[str]:
        return [step for _, plan in sqlite_plans(sqlite_store, run) for step in plan]

    page = [x for x in steps(lambda tx: ledger.movements(tx, mine, limit=5)) if "ledger_" in x]
    assert any("ix_ledger_entries_account_at" in step for step in page), page
    totals = steps(lambda tx: ledger.movement_totals(tx, mine))
    for found in (page, totals):
        assert not any("memo_at" in step or "SCAN" in step for step in found), found
    every = steps(lambda tx: ledger.movements(tx, Movements(kind="fee"), limit=5))
    assert any("ix_ledger_entries_memo_at" in step for step in every), every
