"""``GET /dashboard/{operator,provider,poster}``: each role's numbers, day by day, against the
ledger and the records they summarise; and who may read which."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from adjudge.store import Store, calls
from support.audit import audit
from support.harness import Harness, make_harness
from support.migrations import downgrade
from support.statements import statements
from support.trips import traced
from support.weather import PRICE, PROVIDER, World, weather_world


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    """The weather provider's world, its books audited after the test."""
    with weather_world(store) as w:
        yield w
    audit(store)


@pytest.fixture
def checked_world(store: Store) -> Iterator[World]:
    """The weather provider's world with the real auto check, its books audited after."""
    with weather_world(store, real_checker=True) as w:
        yield w
    audit(store)


def _approved(h: Harness, tid: str) -> None:
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A summary of the work."})
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True, "reasons": []})


def _row(rows: list[dict[str, Any]], day: str) -> dict[str, Any]:
    return next(r for r in rows if r["day"] == day)


def test_the_operator_sees_money_held_over_time_and_each_days_flows(world: World) -> None:
    """A reward sits in escrow on the day it is posted and leaves it, as payout and fee, the
    next; a paid call's charge goes into the provider's hold: each day's row says so, and the
    held balance at the last day's end is the ledger's now."""
    h = world.h
    tid = h.post("manual", deadline_hours=72)
    first = h.ok("root", "GET", "/dashboard/operator?days=3")["days"][-1]
    h.later(days=1)
    _approved(h, tid)
    assert world.call({"city": "berlin", "days": 3}).json()["verdict"] == "PASS"
    board = h.ok("root", "GET", "/dashboard/operator?days=3")
    second = board["days"][-1]
    assert board["days"][-2] == first and len(board["days"]) == 3
    money = board["money"]
    assert _row(money, first)["held"] == "2000000"
    today = _row(money, second)
    assert today == {
        "day": second,
        "held": "0",
        "provider_holds": str(PRICE),
        "charged": str(PRICE),
        "refunded": "0",
        "paid_out": "1800000",
        "fees": "200000",
    }
    assert int(today["provider_holds"]) == h.balance(f"held:{PROVIDER}")
    assert board["calls"]["rows"][-1] == {"day": second, "PASS": 1}
    assert board["calls"]["totals"] == {"PASS": 1}
    assert _row(board["tasks"], second) == {"day": second, "passed": 1, "failed": 0}
    assert _row(board["tasks"], first) == {"day": first, "passed": 0, "failed": 0}


def test_providers_closest_to_their_declared_rate_come_first(world: World) -> None:
    """The operator's list puts a provider failing at twice its declared rate first, with its
    observed and declared rates as exact ratios."""
    h = world.h
    h.ok(
        PROVIDER,
        "POST",
        "/tools",
        {
            "contract": {"tool": "weather_unused", "version": "1"},
            "quality": {"declared_failure_rate": "1/4", "sample_gate": 3, "window_days": 7},
        },
    )
    world.script.answer = "bad"
    world.call({"city": "berlin"})
    world.script.answer = "good"
    world.call({"city": "paris"})
    [near] = h.ok("root", "GET", "/dashboard/operator")["providers"]
    assert near == {
        "provider": PROVIDER,
        "failure_rate": "1/2",
        "declared_failure_rate": "1/4",
        "observations": 2,
        "failures": 1,
        "share_of_declared": "2/1",
    }
    board = h.ok(PROVIDER, "GET", "/dashboard/provider")
    quality = board["quality"]
    assert quality["failure_rate"] == "1/2" and quality["declared_failure_rate"] == "1/4"
    # With 2 observations at a declared 1/4, no count of failures is improbable enough at 95%.
    assert quality["penalty_threshold"] == {
        "observations": 2,
        "failures_at_least": None,
        "rate": None,
        "gate_met": False,
    }
    assert board["calls"]["totals"] == {"FAIL": 1, "PASS": 1}
    # The bad answer broke the contract's schema: that check failed once.
    assert board["failing_checks"] == [{"name": "schema", "failures": 1}]


def test_the_operators_list_is_one_read_however_many_providers_declared_terms(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's dashboard reads every provider with declared terms in its one read
    transaction (it made one more a provider), so every figure of the page is of one moment:
    with five providers more it begins as many transactions as before, and lists them all. On
    PostgreSQL it makes as many round trips as before too (it made seven more a provider)."""
    h = world.h
    engine = h.app.store.engine

    def declare(first: int) -> None:
        for i in range(first, first + 5):
            name = f"prov{i}"
            h.keys[name] = h.app.accounts.create(None, name, ["provider"]).value["api_key"]
            quality = {"declared_failure_rate": f"1/{i + 2}", "sample_gate": 3, "window_days": 7}
            contract = {"tool": f"tool_{i}", "version": "1"}
            h.ok(name, "POST", "/tools", {"contract": contract, "quality": quality})

    def transactions() -> tuple[int, int, set[str]]:
        begun: list[int] = []

        def begin(conn: Any) -> None:
            begun.append(1)

        event.listen(engine, "begin", begin)
        try:
            with monkeypatch.context() as m, statements(engine) as through:
                reads = traced(m)
                board = h.ok("root", "GET", "/dashboard/operator")
        finally:
            event.remove(engine, "begin", begin)
        trips = len(through) + sum(r.trips for r in reads)
        return len(begun), trips, {p["provider"] for p in board["providers"]}

    declare(0)
    h.ok("root", "GET", "/dashboard/operator")  # the key's first use, read and kept
    five, five_trips, listed = transactions()
    assert listed == {f"prov{i}" for i in range(5)}
    declare(5)
    ten, ten_trips, listed = transactions()
    assert listed == {f"prov{i}" for i in range(10)}
    assert ten == five
    if engine.dialect.name == "postgresql":  # SQLite's statements are calls, not round trips
        assert ten_trips == five_trips


def test_terms_stored_that_no_longer_parse_leave_the_operators_list_readable(
    world: World,
) -> None:
    """A provider whose stored terms no longer parse (a stricter check since they were
    declared) is listed without a declared rate, read over the default window; its own
    quality page says what is wrong; the rest of the list reads as before (the whole page was
    refused before)."""
    h = world.h
    for name, rate in (("prov0", "1/4"), ("prov1", "1/3")):
        h.keys[name] = h.app.accounts.create(None, name, ["provider"]).value["api_key"]
        quality = {"declared_failure_rate": rate, "sample_gate": 3, "window_days": 7}
        contract = {"tool": f"tool_{name}", "version": "1"}
        h.ok(name, "POST", "/tools", {"contract": contract, "quality": quality})
    with h.app.store.write() as tx:
        bad = {"declared_failure_rate": "3/2", "sample_gate": 3, "window_days": 7}
        calls.set_terms(tx, "prov1", bad, h.clock.now())
    listed = h.ok("root", "GET", "/dashboard/operator")["providers"]
    assert [p["provider"] for p in listed] == ["prov0", "prov1"]
    assert listed[0]["declared_failure_rate"] == "1/4"
    assert listed[1]["declared_failure_rate"] is listed[1]["share_of_declared"] is None
    assert h.refused("root", "GET", "/providers/prov1/quality")[1] == "QUALITY_TERMS_INVALID"


def test_the_poster_sees_its_tasks_by_state_and_the_rules_that_fail(sqlite_store: Store) -> None:
    """pat's dashboard counts its tasks by state and names the auto check's rule that failed
    (a breakdown item below full marks, or the gate that stopped it); bob's is empty."""
    h = make_harness(sqlite_store, real_checker=True)
    short = h.post("auto", criteria={"min_length": 500})
    words = h.post("auto", criteria={"min_length": 5, "contains_keywords": ["escrow"]})
    h.post("manual")
    for tid in (short, words):
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Long enough to be judged."})
        h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    board = h.ok("pat", "GET", "/dashboard/poster?days=1")
    assert board["tasks_by_state"]["failed"] == 2 and board["tasks_by_state"]["funded"] == 1
    assert sum(board["tasks_by_state"].values()) == 3
    assert {r["name"] for r in board["failing_rules"]} == {"contains_keywords", "Output too short"}
    assert board["tasks"] == [{"day": board["days"][0], "passed": 0, "failed": 2}]
    empty = h.ok("bob", "GET", "/dashboard/poster")
    assert sum(empty["tasks_by_state"].values()) == 0 and empty["failing_rules"] == []


def test_who_may_read_which_dashboard(sqlite_store: Store) -> None:
    """The operator's is for admins, a provider's for providers (its own); the window is 1 to
    90 days."""
    h = make_harness(sqlite_store)
    assert h.refused("pat", "GET", "/dashboard/operator") == (403, "ROLE_REQUIRED")
    assert h.refused("pat", "GET", "/dashboard/provider") == (403, "ROLE_REQUIRED")
    assert h.refused("root", "GET", "/dashboard/operator?days=91")[0] == 422
    assert len(h.ok("root", "GET", "/dashboard/operator?days=90")["days"]) == 90


def _history(world: World) -> None:
    """A day of tasks (one approved, one failing its auto check) and calls (one passing, one
    breaking its contract), then a day of more."""
    h = world.h
    tid = h.post("manual", deadline_hours=72)
    _approved(h, tid)
    failing = h.post("auto", criteria={"min_length": 500})
    h.ok("ann", "POST", f"/tasks/{failing}/accept")
    h.ok("ann", "POST", f"/tasks/{failing}/submissions", {"result": "Too short to pass."})
    h.ok("ann", "POST", f"/tasks/{failing}/finalize")
    world.call({"city": "berlin"})
    world.script.answer = "bad"
    world.call({"city": "rome"})
    h.later(days=1)
    world.script.answer = "good"
    world.call({"city": "paris"})
    h.post("manual")


def _boards(h: Harness) -> list[dict[str, Any]]:
    return [
        h.ok("root", "GET", "/dashboard/operator?days=5"),
        h.ok(PROVIDER, "GET", "/dashboard/provider?days=5"),
        h.ok("pat", "GET", "/dashboard/poster?days=5"),
    ]


def test_the_migration_counts_the_history_before_it(checked_world: World) -> None:
    """Upgrading a store with history counts it once: the dashboards read the same after the
    counts are dropped (the revision before) and made again (0026), and what follows is counted
    on top."""
    world = checked_world
    _history(world)
    before = _boards(world.h)
    assert before[0]["calls"]["totals"] == {"FAIL": 1, "PASS": 2}
    assert before[2]["failing_rules"] == [{"name": "Output too short", "failures": 1}]
    store = world.h.app.store
    downgrade(store, "0025")
    store.migrate()
    assert _boards(world.h) == before
    world.script.answer = "bad"
    world.call({"city": "oslo"})
    after = _boards(world.h)
    assert after[0]["calls"]["totals"] == {"FAIL": 2, "PASS": 2}
    assert after[1]["failing_checks"] == [{"name": "schema", "failures": 2}]


def test_a_dashboard_reads_days_not_the_rows_it_counts(world: World) -> None:
    """Every dashboard's statements read the daily counts and figures (and the providers with
    terms, their quality windows and the viewer), never the calls, verdicts, ledger lines,
    records or tasks counted: its cost does not grow with them."""
    _history(world)
    seen: list[str] = []

    def statement(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        seen.append(sql.lower())

    engine = world.h.app.store.engine
    event.listen(engine, "before_cursor_execute", statement)
    try:
        _boards(world.h)
    finally:
        event.remove(engine, "before_cursor_execute", statement)
    assert any("day_counts" in sql for sql in seen)
    counted = ("gateway_calls", "verdicts", "ledger_entries", "call_records", " tasks")
    assert not [sql for sql in seen if any(f"from {t.strip()}" in sql for t in counted)], seen
