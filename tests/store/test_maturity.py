"""Providers' held charges maturing as a set (``settlement.mature``): each paid into its
provider's wallet against the receipt that settled its call, one statement releasing them all,
each provider's hold debited once, in a number of round trips that does not grow with them."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from adjudge.app import maintenance, maturity, settlement
from adjudge.market import WORLD, Transfer, provider_hold_account, wallet_account
from adjudge.store import Store, Transaction, holds, ledger, meaning_queue, receipt_log, records
from adjudge.store import schema as s
from adjudge.store.ledger import UnprovenRelease
from support.at_once import at_once
from support.audit import audit
from support.fakes import FakeIssuer
from support.harness import make_harness
from support.statements import statements
from support.trips import traced

T0 = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)
_calls = itertools.count()
DUE = T0 + timedelta(days=3)


def _held(store: Store, charges: list[tuple[str, int]], *, matures_at: datetime = T0) -> dict:
    """A settled call's charge held for each (provider, amount), each with its receipt on the
    log: the receipt ids, by call id."""
    receipts = {}
    with store.write() as tx:
        for provider in {p for p, _ in charges}:
            if records.account(tx, provider) is None:
                key = f"k-{provider}"
                records.create_account(tx, provider, ["provider"], key, opt_in=True, at=T0)
        for provider, amount in charges:
            call_id = f"call-{next(_calls)}"
            # What a settled call's receipt decides, as the audit reads it: the charge.
            decided = {"callId": call_id, "provider": provider, "payment": "settle"}
            statement = {"policyDecision": decided | {"chargeMinor": amount}}
            receipt = receipt_log.append(
                tx, lambda prev, d=statement: FakeIssuer.chained(d, prev), task_id=None, at=T0
            )
            fund = [Transfer(WORLD, provider_hold_account(provider), amount, "charge")]
            ledger.transfer(tx, fund, task_id=None, at=T0)
            holds.add(
                tx,
                call_id=call_id,
                provider=provider,
                caller="c",
                amount=amount,
                receipt_id=receipt.id,
                matures_at=matures_at,
            )
            receipts[call_id] = receipt.id
    return receipts


def _released_lines(store: Store) -> list[tuple[str, int, str]]:
    e = s.ledger_entries.c
    q = select(e.account, e.amount, e.receipt_id).where(e.memo == "release").order_by(e.id)
    with store.read() as tx:
        return [(str(a), int(n), str(r)) for a, n, r in tx.conn.execute(q)]


def test_due_holds_mature_as_a_set_each_against_its_own_receipt(store: Store) -> None:
    """Five due holds of two providers mature in one pass: each provider's wallet gets its
    charges, each charge's lines name its own call's receipt; a hold a report claimed and one
    not yet due stay held; a second pass pays nothing; the ledger still sums to zero."""
    due = _held(store, [("p1", 10), ("p2", 20), ("p1", 30), ("p2", 40), ("p1", 50)])
    later = _held(store, [("p1", 7)], matures_at=DUE + timedelta(days=1))
    claimed = _held(store, [("p2", 9)])
    with store.write() as tx:
        assert settlement.claim_hold(tx, next(iter(claimed)))
    with store.write() as tx:
        assert settlement.mature(tx, DUE) == 5
    with store.write() as tx:
        assert settlement.mature(tx, DUE) == 0
    with store.read() as tx:
        assert ledger.balance(tx, wallet_account("p1")) == 90
        assert ledger.balance(tx, wallet_account("p2")) == 60
        assert ledger.balance(tx, provider_hold_account("p1")) == 7
        assert ledger.balance(tx, provider_hold_account("p2")) == 9
        assert ledger.total(tx) == (0, 0)
        states = {h.call_id: h.state for h in holds.open_holds(tx)}
        assert holds.open_summary(tx, DUE) == holds.recount_summary(tx, DUE)
    assert states == {next(iter(later)): holds.HELD, next(iter(claimed)): holds.REPORTED}
    lines = _released_lines(store)
    by_receipt = {r: (a, n) for a, n, r in lines if n > 0}
    assert sorted(by_receipt) == sorted(due.values())
    amounts = dict(zip(due.values(), (10, 20, 30, 40, 50), strict=True))
    for receipt, (account, amount) in by_receipt.items():
        assert amount == amounts[receipt]
        assert account == wallet_account("p1" if amount in (10, 30, 50) else "p2")
    assert sorted(r for _, n, r in lines if n < 0) == sorted(due.values())


def test_a_matured_release_needs_each_receipt_on_the_log(store: Store) -> None:
    """A hold's release with no new determination names, for each charge, a receipt already on
    the log, and moves only out of providers' holds: a made-up receipt, one receipt short, or a
    release out of a task's escrow moves nothing."""
    receipts = list(_held(store, [("p1", 10), ("p1", 20)]).values())
    out = [
        Transfer(provider_hold_account("p1"), wallet_account("p1"), n, "release") for n in (10, 20)
    ]
    escrow = [Transfer(WORLD, "escrow:t", 5, "fund")]
    with store.write() as tx:
        ledger.transfer(tx, escrow, task_id="t", at=T0)
    refused: list[tuple[list[Transfer], list[str]]] = [
        (out, [receipts[0], "rcpt_made_up"]),
        (out, receipts[:1]),
        ([Transfer("escrow:t", wallet_account("p1"), 5, "payout")], receipts[:1]),
    ]
    for transfers, matured in refused:
        with pytest.raises(UnprovenRelease), store.write() as tx:
            ledger.transfer(tx, transfers, task_id=None, at=T0, matured=matured)
    with store.write() as tx:
        ledger.transfer(tx, out, task_id=None, at=T0, matured=receipts)
    with store.read() as tx:
        assert ledger.balance(tx, wallet_account("p1")) == 30
        assert ledger.total(tx) == (0, 0)


def test_a_maturity_makes_as_many_round_trips_for_many_holds_as_for_few(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a pass of 12 holds of four providers makes the round trips a pass of 2
    holds of one does (a hold at a time, it made three more a hold: 38 against 8 here)."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite's statements are calls into the library: there is no round trip")

    def trips(now: datetime) -> int:
        with monkeypatch.context() as m, statements(store.engine) as through:
            sent = traced(m)
            with store.write() as tx:
                settlement.mature(tx, now)
        return len(through) + sum(t.trips for t in sent)

    _held(store, [("p1", 1), ("p1", 2)])
    few = trips(DUE)
    _held(store, [(f"p{i % 4}", i + 1) for i in range(12)], matures_at=DUE)
    many = trips(DUE + timedelta(seconds=1))
    assert many == few
    with store.read() as tx:
        assert ledger.total(tx) == (0, 0)
        assert holds.open_holds(tx) == []


def test_two_upkeeps_at_once_pay_each_hold_once(store: Store) -> None:
    """Two processes' upkeeps maturing the same due holds at once (two engines): the second
    waits for the first's holds and finds them paid; both commit, each charge is paid once."""
    due = _held(store, [("p1", 10), ("p2", 20), ("p1", 30), ("p2", 40)])
    matured: list[int] = []

    def upkeep(tx: Transaction) -> None:
        matured.append(settlement.mature(tx, DUE))

    assert at_once(store, upkeep, upkeep) == []
    assert sorted(matured) == [0, 4]
    with store.read() as tx:
        assert ledger.balance(tx, wallet_account("p1")) == 40
        assert ledger.balance(tx, wallet_account("p2")) == 60
        assert ledger.total(tx) == (0, 0)
    assert sorted(r for _, n, r in _released_lines(store) if n > 0) == sorted(due.values())


_examples = itertools.count()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    charges=st.lists(
        st.tuples(st.integers(0, 3), st.integers(1, 10**9), st.integers(-2, 2), st.booleans()),
        max_size=12,
    ),
    passes=st.lists(st.integers(-1, 3), min_size=1, max_size=3),
)
def test_maturity_conserves_money_and_pays_each_charge_once(
    sqlite_store: Store,
    charges: list[tuple[int, int, int, bool]],
    passes: list[int],
) -> None:
    """For any holds of a few providers (due or not, some claimed by a report) and passes at
    any moments: after each pass a provider's wallet holds exactly its charges that were due
    and unclaimed, its hold the rest, every release names its own charge's receipt, and the
    ledger sums to zero."""
    store, n = sqlite_store, next(_examples)
    made = {}  # call id: (provider, amount, matures_at, claimed)
    for provider, amount, days, claimed in charges:
        name, at = f"x{n}p{provider}", T0 + timedelta(days=days)
        (call_id, receipt), *_ = _held(store, [(name, amount)], matures_at=at).items()
        made[call_id] = (name, amount, at, receipt)
        if claimed:
            with store.write() as tx:
                assert settlement.claim_hold(tx, call_id)
    claimed = {c for c, (_, _, _, k) in zip(made, charges, strict=True) if k}
    paid: set[str] = set()
    for days in sorted(passes):
        now = T0 + timedelta(days=days)
        with store.write() as tx:
            settlement.mature(tx, now)
        # Due only after its deadline, the window's last instant: never at it.
        paid |= {c for c, (_, _, at, _) in made.items() if at < now and c not in claimed}
        with store.read() as tx:
            for name in {p for p, *_ in made.values()}:
                mine = {c: v for c, v in made.items() if v[0] == name}
                owed = sum(v[1] for c, v in mine.items() if c in paid)
                assert ledger.balance(tx, wallet_account(name)) == owed
                left = sum(v[1] for c, v in mine.items() if c not in paid)
                assert ledger.balance(tx, provider_hold_account(name)) == left
            assert ledger.total(tx) == (0, 0)
    released = [r for a, _, r in _released_lines(store) if a.startswith(f"wallet:x{n}p")]
    assert sorted(released) == sorted(made[c][3] for c in paid)


def _hold_state(store: Store) -> dict[str, tuple[str, int | None, datetime | None]]:
    """Each hold's state, failed releases in a row and retry time, read from its row."""
    h = holds.provider_holds.c
    with store.read() as tx:
        rows = tx.conn.execute(select(h.call_id, h.state, h.release_failures, h.retry_at))
        return {r.call_id: (r.state, r.release_failures, r.retry_at) for r in rows}


def test_holds_that_fail_to_mature_hold_up_none_due_after_them(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On each database, batches of 20: 21 due holds whose release fails on every pass, all due
    before two healthy ones (one of the same provider, one of another). The upkeep's pass pays
    both healthy ones all the same, and puts each failing one back, logged, to be tried a
    minute later, then two; a pass before then tries none of them; one that no longer fails is
    paid when tried and leaves the retries; the books balance throughout (before, the batch of
    the oldest failed whole on every pass, and every hold due behind it waited for good)."""
    monkeypatch.setattr(settlement, "MATURE_BATCH", 20)
    h = make_harness(store)
    now = h.clock.now()
    failing = set(_held(store, [("p1", 10 + i % 7) for i in range(21)], matures_at=now))
    healthy = [
        *_held(store, [("p1", 1_000)], matures_at=now + timedelta(seconds=1)),
        *_held(store, [("p2", 2_000)], matures_at=now + timedelta(seconds=2)),
    ]
    h.advance(minutes=1)
    release, tried = holds.release, []

    def faulty(tx: Transaction, call_ids: list[str], *, at: datetime) -> set[str]:
        tried.extend(c for c in call_ids if c in failing)
        if failing.intersection(call_ids):
            raise RuntimeError("a fault of this hold")
        return release(tx, call_ids, at=at)

    monkeypatch.setattr(holds, "release", faulty)
    first = h.clock.now()
    done = maintenance.run_once(h.app)
    assert (done["matured"], done["failed"]) == (2, 0), done
    state = _hold_state(store)
    assert {state[c][0] for c in healthy} == {holds.RELEASED}
    assert {state[c] for c in failing} == {(holds.HELD, 1, first + timedelta(minutes=1))}
    assert failing <= set(tried)
    tried.clear()
    assert maintenance.run_once(h.app)["matured"] == 0 and tried == []  # none due yet
    h.advance(minutes=1)
    mended = min(failing)
    failing.discard(mended)
    second = h.clock.now()
    done = maintenance.run_once(h.app)
    assert (done["matured"], done["failed"]) == (1, 0), done
    state = _hold_state(store)
    assert state[mended] == (holds.RELEASED, None, None)
    assert {state[c] for c in failing} == {(holds.HELD, 2, second + timedelta(minutes=2))}
    assert sorted(tried) == sorted(failing)  # each alone, once
    monkeypatch.setattr(holds, "release", release)
    h.advance(minutes=2)
    assert maintenance.run_once(h.app)["matured"] == 20
    assert {s[0] for s in _hold_state(store).values()} == {holds.RELEASED}
    with store.read() as tx:
        assert ledger.balance(tx, wallet_account("p2")) == 2_000
        assert ledger.balance(tx, wallet_account("p1")) == 1_000 + sum(
            10 + i % 7 for i in range(21)
        )
        assert ledger.balance(tx, provider_hold_account("p1")) == 0
        assert ledger.total(tx) == (0, 0)
    audit(store)


def test_a_hold_paid_while_its_failure_is_recorded_keeps_no_retry_mark(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass's release of a hold fails; before the pass records the failure, another process
    (or the provider's own read of its account) pays the hold. The paid hold takes no retry
    mark (kept, nothing cleared it: it stayed in the retries' index, read on every pass for
    good); a hold marked and then paid by a release of its own loses its mark too."""
    h = make_harness(store)
    now = h.clock.now()
    (raced,) = _held(store, [("p1", 10)], matures_at=now)
    h.advance(minutes=1)
    release = holds.release
    each = maturity._each

    def faulty(tx: Transaction, call_ids: list[str], *, at: datetime) -> set[str]:
        raise RuntimeError("a fault of this hold")

    def racing(*args: Any, **kwargs: Any) -> int:
        paid = each(*args, **kwargs)
        with store.write() as other:  # the fault was passing: another process pays it
            monkeypatch.setattr(holds, "release", release)
            assert settlement.mature(other, h.clock.now(), call_ids=[raced]) == 1
        return paid

    monkeypatch.setattr(holds, "release", faulty)
    monkeypatch.setattr(maturity, "_each", racing)
    maintenance.run_once(h.app)
    assert _hold_state(store)[raced] == (holds.RELEASED, None, None)
    (marked,) = _held(store, [("p2", 20)], matures_at=h.clock.now() - timedelta(seconds=1))
    with store.write() as tx:
        holds.defer(tx, {marked: (1, h.clock.now() + timedelta(hours=1))})
        assert settlement.mature(tx, h.clock.now(), call_ids=[marked]) == 1
    assert _hold_state(store)[marked] == (holds.RELEASED, None, None)
    audit(store)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    holds_made=st.lists(
        st.tuples(st.integers(-2, 2), st.booleans(), st.booleans(), st.booleans()),
        max_size=10,
    ),
    days=st.integers(-1, 3),
)
def test_the_due_order_equals_a_recount_of_the_holds_waiting_for_nothing(
    sqlite_store: Store, holds_made: list[tuple[int, bool, bool, bool]], days: int
) -> None:
    """For any holds (due or not, each call's judgment queued or not, then given or not, some
    waiting for a retry): each hold's mark of a pending judgment says what the judgment queue
    says, and the due order is exactly a recount of every held hold past its deadline that waits
    for no retry and no judgment, oldest first."""
    store, n = sqlite_store, next(_examples)
    now = T0 + timedelta(days=days)
    for i, (age, queued, judged, retry) in enumerate(holds_made):
        at = T0 + timedelta(days=age, seconds=i)
        (call_id, receipt), *_ = _held(store, [(f"j{n}p", 5)], matures_at=at).items()
        with store.write() as tx:
            if queued:
                meaning_queue.add(
                    tx,
                    call_id=call_id,
                    provider=f"j{n}p",
                    policy_digest="sha256:pol",
                    response_digest="sha256:r",
                    receipt_id=receipt,
                    at=at,
                )
            if queued and judged:
                assert meaning_queue.judged(
                    tx, call_id, outcome="no_conflict", receipt_id=receipt, at=at
                )
            if retry:
                holds.defer(tx, {call_id: (1, now + timedelta(minutes=1))})
    q = meaning_queue.queue.c
    with store.read() as tx:
        pending = set(tx.conn.scalars(select(q.call_id).where(q.state == meaning_queue.PENDING)))
        rows = tx.conn.execute(select(holds.provider_holds)).all()
        marked = {r.call_id for r in rows if r.judgment_queued_at is not None}
        assert marked == pending & {r.call_id for r in rows}
        recount = {
            r.call_id
            for r in rows
            if r.state == holds.HELD
            and r.matures_at < now
            and r.retry_at is None
            and r.call_id not in pending
        }
        due = holds.due(tx, now, limit=100_000)  # every example's holds (they share the store)
        assert {d.call_id for d in due} == recount and len(due) == len(recount)
        assert [d.matures_at for d in due] == sorted(d.matures_at for d in due)
