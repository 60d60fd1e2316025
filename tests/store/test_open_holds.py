"""The metrics' open holds (``holds.open_summary``), read from the counts every hold's opening
and end keep and from the holds of one hour at most, equal a count of the open holds
themselves: for any holds opened, reported, dismissed, released (one at a time, or matured as a
set) and refunded, at any moment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.store import Store, Transaction, day_counts, holds
from support.counts import recount
from support.plans import sqlite_plans

T0 = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)

#: A moment within three days of T0: on the hour, a microsecond either side of it, or anywhere.
_moment = st.builds(
    lambda hour, second, micro: T0 + timedelta(hours=hour, seconds=second, microseconds=micro),
    st.integers(-30, 72),
    st.sampled_from((0, 1, 1_799, 1_800, 3_599)) | st.integers(0, 3_599),
    st.sampled_from((0, 1, 999_999)),
)
#: A change of one hold (by its index in those opened): (from, to) as the settlement moves it.
_CHANGES = (
    (holds.HELD, holds.REPORTED),  # a report filed in time
    (holds.REPORTED, holds.HELD),  # dismissed
    (holds.HELD, holds.RELEASED),  # matured
    (holds.REPORTED, holds.REFUNDED),  # upheld
    (holds.HELD, holds.REFUNDED),  # a later judgment refunded it
    (holds.RELEASED, holds.REFUNDED),  # never happens: it must change nothing
)
_step = st.one_of(
    st.tuples(st.just("open"), _moment, st.integers(1, 10**12)),
    st.tuples(st.just("move"), st.integers(0, 30), st.sampled_from(_CHANGES)),
    # Matured as a set: those of them still held are released (a hold twice in it, once).
    st.tuples(st.just("release"), st.lists(st.integers(0, 30), max_size=5), st.none()),
)


def _open(tx: Transaction, call_id: str, amount: int, matures_at: datetime) -> None:
    """A settled call's charge held until ``matures_at``, as the settlement holds one."""
    holds.add(
        tx,
        call_id=call_id,
        provider="p",
        caller="a",
        amount=amount,
        receipt_id=f"r-{call_id}",
        matures_at=matures_at,
    )


def _clear(store: Store) -> None:
    with store.write() as tx:
        for table in ("day_counts", "provider_holds"):
            tx.conn.execute(text(f"DELETE FROM {table}"))


def test_the_open_holds_equal_a_count_of_them(store: Store) -> None:
    """Holds opened and moved in a few transactions; at any moment the summary the metrics read
    equals one counted from the open holds, and the kept counts a recount. (Fewer examples on
    PostgreSQL, where each costs ten times as much.)"""

    @settings(
        max_examples=60 if store.dialect == "sqlite" else 15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(
        txns=st.lists(st.lists(_step, min_size=1, max_size=5), max_size=6),
        moments=st.lists(_moment, min_size=1, max_size=6),
    )
    def check(txns: list[list[Any]], moments: list[datetime]) -> None:
        _clear(store)
        opened = 0
        for steps in txns:
            with store.write() as tx:
                for kind, first, second in steps:
                    if kind == "open":
                        _open(tx, f"c{opened}", second, first)
                        opened += 1
                    elif kind == "release":
                        holds.release(tx, [f"c{i}" for i in first], at=T0)
                    else:
                        was, to = second
                        holds.move(tx, f"c{first}", from_state=was, to_state=to, at=T0)
        with store.read() as tx:
            for now in moments:
                assert holds.open_summary(tx, now) == holds.recount_summary(tx, now), now
            kept = {k: n for k, n in day_counts.stored(tx).items() if k[0] == day_counts.HOLDS}
            assert kept == {k: n for k, n in recount(tx).items() if k[0] == day_counts.HOLDS}

    check()


def test_a_summary_reads_counts_not_the_holds(sqlite_store: Store) -> None:
    """The count and the money come from the counts: a hold written around the store's
    functions is not among them, though it is open (and a recount finds it)."""
    with sqlite_store.write() as tx:
        _open(tx, "c", 7, T0)
        tx.conn.execute(
            holds.provider_holds.insert().values(
                call_id="d",
                provider="p",
                caller="a",
                amount=5,
                receipt_id="r2",
                matures_at=T0,
                state=holds.HELD,
            )
        )
    with sqlite_store.read() as tx:
        assert holds.open_summary(tx, T0) == {"count": 1, "amount": 7, "maturing_24h": 1}
        assert holds.recount_summary(tx, T0) == {"count": 2, "amount": 12, "maturing_24h": 2}


def test_the_hours_either_side_of_now_plus_a_day(store: Store) -> None:
    """Holds at ``now + 24h`` and a microsecond after, and at the start of the next hour and a
    microsecond before: the summary counts the first, as a count of the holds does."""
    soon = T0 + timedelta(hours=24)  # 09:30 the next day
    hour = soon.replace(minute=0)
    at = (
        soon,
        soon + timedelta(microseconds=1),
        hour + timedelta(hours=1) - timedelta(microseconds=1),
        hour + timedelta(hours=1),
        hour,
    )
    with store.write() as tx:
        for i, matures_at in enumerate(at):
            _open(tx, f"c{i}", 1, matures_at)
    with store.read() as tx:
        summary = holds.open_summary(tx, T0)
        assert summary == holds.recount_summary(tx, T0)
        assert summary == {"count": 5, "amount": 5, "maturing_24h": 2}


def test_a_release_reads_its_holds_by_id(sqlite_store: Store) -> None:
    """SQLite's plan of a matured set's release, among 300 holds still held: the holds by
    their ids' index, not every hold held (it took the state's equality for a narrow range and
    read them all: 60 ms at 100,000, inside the upkeep's write); the five released."""
    _clear(sqlite_store)
    with sqlite_store.write() as tx:
        for n in range(300):
            _open(tx, f"later-{n:04d}", 10, T0 + timedelta(days=3))
        for n in range(5):
            _open(tx, f"due-{n}", 10, T0)
    released: list[set[str]] = []

    def release(tx: Transaction) -> None:
        released.append(holds.release(tx, [f"due-{n}" for n in range(5)], at=T0))

    plans = sqlite_plans(sqlite_store, release, write=True)
    [steps] = [steps for sql, steps in plans if sql.lstrip().startswith("UPDATE")]
    assert steps == [
        "SEARCH provider_holds USING INDEX sqlite_autoindex_provider_holds_1 (call_id=?)"
    ]
    assert released == [{f"due-{n}" for n in range(5)}]
