"""A day count past 64 bits: each row keeps ``high * 2^32 + n`` and every addition carries
(revision 0048), so the money counts, which grow with every transfer for all time while the
money in the ledger is bounded, read back exact whatever they add up to, on both databases;
and the service keeps funding tasks after flows past 2^63 (before: PostgreSQL refused every
funding, bigint out of range, and SQLite's sums turned into floats)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.store import Store, Transaction
from adjudge.store import day_counts as dc
from support.harness import make_harness
from support.migrations import downgrade

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
MAX = 2**63 - 1
#: Additions to a few counts, as large as a transfer's and as small, either sign.
_addition = st.tuples(
    st.sampled_from(("a", "b")),
    st.one_of(st.integers(-MAX, MAX), st.integers(-3, 3), st.sampled_from((MAX, 2**62, -(2**62)))),
)


def _write(store: Store, batches: list[list[tuple[str, int]]]) -> Counter[str]:
    """Each batch in a transaction of its own (a row's additions summed in it, as the store
    sums them); the exact totals."""
    total: Counter[str] = Counter()
    with store.write() as tx:
        tx.conn.execute(text("DELETE FROM day_counts"))
    for batch in batches:
        with store.write() as tx:
            for name, delta in batch:
                dc.note(tx, dc.LEDGER, dc.EVERYONE, dc.ALL_TIME, name, delta)
                total[name] += delta
    return total


def _read(tx: Transaction) -> dict[str, int]:
    found = dc.summed(tx, dc.LEDGER, [dc.EVERYONE], None, None)
    assert {k[3]: v for k, v in dc.stored(tx).items()} == dict(found)
    return dict(found)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=st.lists(st.lists(_addition, min_size=1, max_size=4), min_size=1, max_size=8))
def test_a_count_is_its_additions_whatever_they_add_up_to(
    sqlite_store: Store, batches: list[list[tuple[str, int]]]
) -> None:
    """Any additions, each within 64 bits, their sums past them: the count reads their exact
    sum (every reader: by name over all time, and each row)."""
    total = _write(sqlite_store, batches)
    with sqlite_store.read() as tx:
        assert _read(tx) == {k: v for k, v in total.items() if v}


def test_counts_past_64_bits_on_each_database(store: Store) -> None:
    """On each database: three additions of 2^63 - 1 and one of -2^62 in turn, and a row
    written in one statement with many (PostgreSQL's arrays)."""
    batches = [[("a", MAX)], [("a", MAX), ("b", -MAX)], [("a", MAX), ("b", -MAX)]]
    batches.append([("a", -(2**62)), ("b", 5)])
    total = _write(store, batches)
    with store.read() as tx:
        assert _read(tx) == dict(total)
    assert total["a"] == 3 * MAX - 2**62 and total["b"] == 5 - 2 * MAX


def test_migration_0048_splits_each_count_and_joins_it_back(store: Store) -> None:
    """0048 keeps each count as it was, in its two parts (a negative one and one past 2^32
    included), and downgrades by joining them."""
    downgrade(store, "0047")
    with store.engine.begin() as conn:
        for name, n in (("neg", -7), ("big", 2**40 + 3), ("small", 9)):
            conn.execute(
                text(
                    "INSERT INTO day_counts (family, subject, day, name, lane, n) "
                    "VALUES ('ledger', '', '', :name, 0, :n)"
                ),
                {"name": name, "n": n},
            )
    store.migrate()
    with store.read() as tx:
        assert _read(tx) == {"neg": -7, "big": 2**40 + 3, "small": 9}
        low = tx.conn.execute(text("SELECT min(n), max(n) FROM day_counts")).one()
        assert low[0] >= 0 and low[1] < 2**32
    downgrade(store, "0047")
    with store.engine.begin() as conn:
        rows = conn.execute(text("SELECT name, n FROM day_counts ORDER BY name")).all()
    assert dict(rows) == {"neg": -7, "big": 2**40 + 3, "small": 9}
    store.migrate()


def test_flows_past_2_63_stop_no_one_funding(store: Store) -> None:
    """A poster posts and cancels tasks of 2^62 and of the rest up to 2^63 - 1, more than once:
    the money funded and refunded for all time passes 2^63, and another poster still funds a
    task; the ledger's totals and the operator's money read exact."""
    h = make_harness(store)
    try:
        big = 2**62
        h.ok("root", "POST", "/accounts/pat/deposits", {"amount": str(MAX - 10**9)})
        funded = 0
        for reward in (big, MAX - 10**9 - 100_000_000 - big, big):
            task = h.post("manual", reward=str(reward))
            h.ok("pat", "POST", f"/tasks/{task}/cancel")
            funded += reward
        assert funded > MAX
        other = h.post("manual", reward="2000000")
        assert h.ok("pat", "GET", f"/tasks/{other}")["status"] == "funded"
        h.ledger()
        lines = h.ok("root", "GET", "/ledger/lines?kind=fund&totals=true")
        assert int(lines["totals"]["credits"]) == funded + 2_000_000
    finally:
        h.app.close()
