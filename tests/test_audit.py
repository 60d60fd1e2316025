"""The audit every money test ends with refuses books that disagree with their receipts: money
that left an escrow, a call's reservation or a provider's hold must be exactly what the receipt
it names decided, in amount and in the party it went to (before, it only asked that the amount's
digits occur somewhere in the decision: a payout and fee swapped, or paid to another party,
passed); and each receipt's decision must state exactly the lines written with it (a receipt
stating money that never moved passed, as no line was there to check)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from adjudge.app import maintenance, settlement
from adjudge.market import Settlement
from adjudge.store import Store, gateway
from support.audit import audit
from support.harness import Harness, make_harness
from support.rows import pending_call, provided_tool

Bug = Callable[[Settlement], Settlement]


def _paid_task(store: Store, monkeypatch: pytest.MonkeyPatch, bug: Bug | None) -> None:
    """An auto task passed and paid, its settlement changed by ``bug`` after it was signed."""
    h = make_harness(store)
    tid = h.post("auto")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    if bug is not None:
        real = settlement.release_task
        monkeypatch.setattr(
            settlement, "release_task", lambda tx, done, **kw: real(tx, bug(done), **kw)
        )
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A summary well over ten."})
    assert h.ok("ann", "POST", f"/tasks/{tid}/finalize")["status"] == "completed"


def _moved(memo: str, **changes: Any) -> Bug:
    def bug(done: Settlement) -> Settlement:
        transfers = tuple(replace(t, **changes) if t.memo == memo else t for t in done.transfers)
        return replace(done, transfers=transfers)

    return bug


def _swapped(done: Settlement) -> Settlement:
    amounts = {t.memo: t.amount for t in done.transfers}
    other = {"payout": amounts["fee"], "fee": amounts["payout"]}
    return replace(done, transfers=tuple(replace(t, amount=other[t.memo]) for t in done.transfers))


def test_a_paid_task_as_signed_passes(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    _paid_task(store, monkeypatch, None)
    audit(store)


@pytest.mark.parametrize(
    "bug",
    [_moved("payout", credit="wallet:pat"), _swapped],
    ids=["payout to the poster", "payout and fee swapped"],
)
def test_a_task_paid_otherwise_than_signed_fails_the_audit(
    store: Store, monkeypatch: pytest.MonkeyPatch, bug: Bug
) -> None:
    _paid_task(store, monkeypatch, bug)
    with pytest.raises(AssertionError):
        audit(store)


def _interrupted_call(store: Store) -> Harness:
    """ann's call of a 10-unit tool, started and reserved, left pending as by a process that
    died (the upkeep ends it after its time)."""
    h = make_harness(store)
    start = h.clock.now()
    provided_tool(store, price=10, at=start)
    with store.write() as tx:
        call = pending_call("c-1", started_at=start, caller="ann", price_minor=10)
        assert gateway.start_call(tx, call)
        settlement.reserve(tx, "ann", "hold:call:c-1", 10, at=start)
    return h


@pytest.mark.parametrize("to", ["ann", "pat"], ids=["to its caller", "to another"])
def test_a_call_voided_back_to_another_than_its_caller_fails_the_audit(
    store: Store, monkeypatch: pytest.MonkeyPatch, to: str
) -> None:
    """An interrupted call's reservation goes back to its caller (ann); sent to pat, the
    audit refuses the books."""
    h = _interrupted_call(store)
    real = settlement.release_call
    monkeypatch.setattr(
        settlement, "release_call", lambda tx, hold, **kw: real(tx, hold, **kw | {"payer": to})
    )
    h.advance(minutes=10)
    assert maintenance.run_once(h.app)["recovered"] == 1
    if to == "ann":
        audit(store)
    else:
        with pytest.raises(AssertionError):
            audit(store)


def test_a_call_receipt_stating_money_that_never_moved_fails_the_audit(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other way round: an interrupted call's receipt says its reservation was voided back
    to its caller; kept in the reservation instead (no line written with the receipt), the
    audit refuses the books (it read only the lines that moved, and found none to check)."""
    h = _interrupted_call(store)
    monkeypatch.setattr(settlement, "release_call", lambda tx, hold, **kw: None)
    h.advance(minutes=10)
    assert maintenance.run_once(h.app)["recovered"] == 1
    with pytest.raises(AssertionError, match="'payment': 'void'"):
        audit(store)
