"""The upkeep's recovery of paid calls a stopped process left pending: a bounded read, batch
after batch, the oldest first; a call whose end fails is put back with a growing delay, out of
the pending order until its retry, and holds up none of the calls left pending after it."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from adjudge.app import maintenance, settlement
from adjudge.app.gateway.calls import RECOVER_BATCH
from adjudge.store import ConcurrentUpdate, Store, Transaction, gateway, receipt_log
from support.audit import audit
from support.harness import FUNDS, make_harness
from support.rows import pending_call, provided_tool

PRICE = 10


def _left_pending(store: Store, ids: list[str], *, at: datetime, version: int = 1) -> None:
    """Calls by ann of the provider's tool (``version`` of it), started at ``at`` and left
    pending, each with its price reserved as a call's start reserves it."""
    with store.write() as tx:
        for call_id in ids:
            call = pending_call(call_id, started_at=at, caller="ann", price_minor=PRICE)
            assert gateway.start_call(tx, replace(call, tool_version=version))
            settlement.reserve(tx, "ann", f"hold:call:{call_id}", PRICE, at=at)


def _calls(store: Store) -> dict[str, tuple[str, str | None, int | None, Any]]:
    """Each call's state, status, failed recoveries in a row and retry time, from its row."""
    c = gateway.calls.c
    with store.read() as tx:
        rows = tx.conn.execute(
            select(c.id, c.state, c.status, c.recover_failures, c.recover_retry_at)
        )
        return {r.id: (r.state, r.status, r.recover_failures, r.recover_retry_at) for r in rows}


def test_calls_that_fail_to_recover_hold_up_none_left_pending_after_them(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """On each database: 150 calls left pending whose end fails on every pass, all older than
    a healthy one and one whose tool version's row is gone. The upkeep's pass ends both, their
    reservations back to the caller against a receipt, reading a batch at a time; it puts each
    failing call back, logged with its failures, to be tried a minute later, then two; a pass
    before then tries none of them; one that no longer fails ends when tried and leaves the
    retries; the books balance throughout (before, a pass read every pending call at once,
    tried the failing ones first again on every pass, and left the call whose tool row was gone
    pending, its price reserved, for good)."""
    h = make_harness(store)
    start = h.clock.now()
    provided_tool(store, price=PRICE, at=start)
    failing = {f"call-{n:03d}" for n in range(150)}
    _left_pending(store, sorted(failing), at=start)
    _left_pending(store, ["healthy"], at=start + timedelta(seconds=1))
    _left_pending(store, ["orphan"], at=start + timedelta(seconds=2), version=7)  # no such row
    h.advance(minutes=10)
    assert h.balance("wallet:ann") == FUNDS - 152 * PRICE

    release, tried = settlement.release_call, []

    def faulty(tx: Transaction, hold: str, *, call_id: str, **kwargs: Any) -> Any:
        if call_id in failing:
            tried.append(call_id)
            raise RuntimeError("a fault of this call")
        return release(tx, hold, call_id=call_id, **kwargs)

    pending_before, reads = gateway.pending_before, []

    def counted(tx: Transaction, before: datetime, **kwargs: Any) -> Any:
        found = pending_before(tx, before, **kwargs)
        reads.append(len(found))
        return found

    monkeypatch.setattr(settlement, "release_call", faulty)
    monkeypatch.setattr(gateway, "pending_before", counted)
    first = h.clock.now()
    with caplog.at_level(logging.ERROR, logger="adjudge.gateway"):
        done = maintenance.run_once(h.app)
    assert (done["recovered"], done["failed"]) == (2, 0), done
    assert reads == [RECOVER_BATCH, 152 - RECOVER_BATCH], reads  # a batch a read, oldest first
    state = _calls(store)
    assert state["healthy"] == ("done", "voided", None, None)
    assert state["orphan"] == ("done", "voided", None, None)
    assert {state[c] for c in failing} == {("pending", None, 1, first + timedelta(minutes=1))}
    assert sorted(tried) == sorted(failing)  # each once
    assert "(1 failure(s) in a row; tried again from" in caplog.text
    with store.read() as tx:
        for call_id in ("healthy", "orphan"):
            ended = gateway.call(tx, call_id)
            assert ended is not None and ended.receipt_id is not None
            assert receipt_log.receipt(tx, ended.receipt_id) is not None
    assert h.balance("wallet:ann") == FUNDS - 150 * PRICE

    tried.clear()
    reads.clear()
    assert maintenance.run_once(h.app)["recovered"] == 0 and tried == []  # none due yet
    assert reads == [0]
    h.advance(minutes=1)
    mended = min(failing)
    failing.discard(mended)
    second = h.clock.now()
    done = maintenance.run_once(h.app)
    assert (done["recovered"], done["failed"]) == (1, 0), done
    state = _calls(store)
    assert state[mended] == ("done", "voided", None, None)
    assert {state[c] for c in failing} == {("pending", None, 2, second + timedelta(minutes=2))}
    assert sorted(tried) == sorted(failing)  # each alone, once
    monkeypatch.setattr(settlement, "release_call", release)
    h.advance(minutes=1)
    assert maintenance.run_once(h.app)["recovered"] == 0  # not yet: two minutes now
    h.advance(minutes=1)
    assert maintenance.run_once(h.app)["recovered"] == 149
    assert set(_calls(store).values()) == {("done", "voided", None, None)}
    assert h.balance("wallet:ann") == FUNDS
    audit(store)


def test_a_recovery_that_loses_a_race_to_no_end_is_put_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call's end that keeps losing a race to something other than another end of the call
    (here the release of its reservation, on every try) leaves the call pending: the upkeep
    reads the call again, finds it not ended, and puts it back to be tried a minute later, as
    any failed end (before, any lost race was taken for another process's end, and the call
    stayed pending with no retry, counted as nothing)."""
    h = make_harness(store)
    start = h.clock.now()
    provided_tool(store, price=PRICE, at=start)
    _left_pending(store, ["raced"], at=start)
    h.advance(minutes=10)
    release = settlement.release_call

    def clashing(tx: Transaction, hold: str, *, call_id: str, **kwargs: Any) -> Any:
        raise ConcurrentUpdate("a row this end reads changed meanwhile")

    monkeypatch.setattr(settlement, "release_call", clashing)
    first = h.clock.now()
    assert maintenance.run_once(h.app)["recovered"] == 0
    assert _calls(store)["raced"] == ("pending", None, 1, first + timedelta(minutes=1))

    monkeypatch.setattr(settlement, "release_call", release)
    h.advance(minutes=1)
    assert maintenance.run_once(h.app)["recovered"] == 1
    assert _calls(store)["raced"] == ("done", "voided", None, None)
    assert h.balance("wallet:ann") == FUNDS
    audit(store)
