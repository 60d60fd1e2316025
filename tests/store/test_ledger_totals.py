"""The ledger page's totals (``ledger.movement_totals``), read from the counts kept by day and
from the lines of a day's part and of one task's or call's accounts, equal a sum of every line
the filter keeps: for any account, kind and range, its bounds at midnight, inside a day, or
none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.market import WORLD, Transfer
from adjudge.store import Store, ledger
from support.counts import ledger_totals

T0 = datetime(2026, 3, 10, tzinfo=UTC)  # a midnight
MEMOS = ("charge", "reserve", "fee")
#: Kept by day (a wallet, a provider's hold, the world's account), and summed from their lines
#: (a task's escrow, a call's reservation).
ACCOUNTS = ("wallet:a", "held:p", "escrow:t", "hold:call:c")
#: Moments on five days: at midnight, a microsecond either side of it, or anywhere in the day.
_moment = st.builds(
    lambda day, second, micro: T0 + timedelta(days=day, seconds=second, microseconds=micro),
    st.integers(-1, 4),
    st.sampled_from((0, 1, 43_200, 86_399)) | st.integers(0, 86_399),
    st.sampled_from((0, 1, 999_999)),
)
_move = st.tuples(st.sampled_from(MEMOS), st.integers(1, 10**9), _moment, st.sampled_from(ACCOUNTS))
_which = st.builds(
    ledger.Movements,
    accounts=st.sampled_from(
        (None, (WORLD,), ("wallet:a",), ("escrow:t",), ("wallet:a", "held:p", "escrow:t", WORLD))
    ),
    kind=st.none() | st.sampled_from((*MEMOS, "payout")),
    since=st.none() | _moment,
    until=st.none() | _moment,
)


def _clear(store: Store) -> None:
    with store.write() as tx:
        for table in ("day_counts", "ledger_entries", "balances", "held_days"):
            tx.conn.execute(text(f"DELETE FROM {table}"))


def test_the_totals_equal_a_sum_of_the_lines(store: Store) -> None:
    """Money moved in a few transactions on five days; any filter's totals equal the sum of
    the lines it keeps. (Fewer examples on PostgreSQL, where each costs ten times as much.)"""

    @settings(
        max_examples=60 if store.dialect == "sqlite" else 15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(
        txns=st.lists(st.lists(_move, min_size=1, max_size=4), max_size=6),
        queries=st.lists(_which, min_size=1, max_size=8),
    )
    def check(txns: list[list[Any]], queries: list[ledger.Movements]) -> None:
        _clear(store)
        for moves in txns:
            with store.write() as tx:
                for memo, amount, at, account in moves:
                    move = [Transfer(WORLD, account, amount, memo)]
                    ledger.transfer(tx, move, task_id=None, at=at)
        with store.read() as tx:
            for which in queries:
                assert ledger.movement_totals(tx, which) == ledger_totals(tx, which), which

    check()


def test_a_day_is_read_from_its_counts_not_its_lines(sqlite_store: Store) -> None:
    """A whole day's totals come from the counts: a line the counts do not know of (written
    around the store's functions) shows in a part of a day, not in a whole one."""
    with sqlite_store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 5, "fee")], task_id=None, at=T0)
        tx.conn.execute(
            text(
                "INSERT INTO ledger_entries (txn, account, amount, memo, at) "
                "VALUES ('x', 'wallet:a', 7, 'fee', :at)"
            ),
            {"at": (T0 + timedelta(hours=1)).replace(tzinfo=None)},
        )
    day = ledger.Movements(accounts=("wallet:a",), since=T0, until=T0 + timedelta(days=1))
    part = ledger.Movements(accounts=("wallet:a",), since=T0 + timedelta(minutes=1), until=None)
    with sqlite_store.read() as tx:
        assert ledger.movement_totals(tx, day)["credits"] == 5
        assert ledger.movement_totals(tx, part)["credits"] == 7
