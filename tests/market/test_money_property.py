"""The money invariant over random event sequences: nothing creates or destroys money."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge import Error
from adjudge.market import (
    Accept,
    AgentPenalized,
    AgentRecord,
    Cancel,
    Collect,
    Context,
    Dispute,
    DisputeFiled,
    Draft,
    Event,
    Finalize,
    Lapse,
    Ledger,
    Reclaim,
    Release,
    Review,
    Rule,
    Status,
    Submit,
    Task,
    Transfer,
    VerifierVerdict,
    escrow_account,
    penalize,
    post,
    step,
    wallet_account,
)
from adjudge.market.money import WORLD
from support.fakes import FakeChecker
from support.verdicts import VERIFIER_KEY, verifier_verdict

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ACTORS = st.sampled_from(["P", "A", "B", "V", "ADM"])
RESULTS = st.sampled_from(["A long enough result.", "FAIL", "short"])

EVENTS: st.SearchStrategy[Event] = st.one_of(
    st.builds(Accept, ACTORS),
    st.builds(Release, ACTORS),
    st.builds(Submit, ACTORS, RESULTS),
    st.builds(Finalize, ACTORS, RESULTS),
    st.builds(Review, ACTORS, st.booleans(), stored_result=RESULTS),
    # Signed and grounded against the task it reaches (see the loop), with a stored copy.
    st.builds(VerifierVerdict, ACTORS, st.booleans(), stored_result=RESULTS),
    st.builds(Dispute, ACTORS),
    st.builds(Reclaim, ACTORS),
    st.builds(Collect, ACTORS),
    st.builds(Cancel, ACTORS),
    st.builds(Rule, st.just("ADM"), st.booleans(), stored_result=RESULTS),
    st.just(Lapse()),
)
STEPS = st.lists(st.tuples(EVENTS, st.integers(0, 6 * 24 * 3600)), max_size=40)


@settings(max_examples=400, deadline=None)
@given(
    modes=st.lists(st.sampled_from(["auto", "agent", "manual"]), min_size=1, max_size=3),
    rewards=st.lists(st.integers(1, 10**12), min_size=3, max_size=3),
    fee_bps=st.integers(0, 3000),
    steps=STEPS,
    picks=st.lists(st.integers(0, 2), min_size=40, max_size=40),
    windows=st.lists(st.one_of(st.none(), st.integers(1, 40)), min_size=3, max_size=3),
)
def test_no_event_creates_or_destroys_money(
    modes: list[str],
    rewards: list[int],
    fee_bps: int,
    steps: list[tuple[Event, int]],
    picks: list[int],
    windows: list[int | None],
) -> None:
    """Any sequence of events, take windows and their lapses included, keeps the ledger
    balanced and every escrow whole or empty; a task that was ever disputed stays marked."""
    now = T0
    checker = FakeChecker()
    ledger = Ledger().apply([Transfer(WORLD, wallet_account("P"), sum(rewards))])
    tasks: list[Task] = []
    for i, mode in enumerate(modes):
        draft = Draft(
            "P",
            rewards[i],
            T0 + timedelta(days=2),
            mode=mode,
            criteria={"min_length": 10},
            verifier="V" if mode == "agent" else None,
            verifier_opted_in=True,
            verifier_key=VERIFIER_KEY.keyid if mode == "agent" else None,
            take_window_hours=windows[i],
        )
        out = post(f"t{i}", draft, Context(now, checker, fee_bps))
        ledger = ledger.apply(out.transfers)
        tasks.append(out.task)
    records: dict[str, AgentRecord] = {}
    for (drawn, dt), pick in zip(steps, picks, strict=False):
        now += timedelta(seconds=dt)
        idx = pick % len(tasks)
        before = tasks[idx]
        event = drawn
        if isinstance(drawn, VerifierVerdict) and before.result_digest is not None:
            event = verifier_verdict(
                before, drawn.passed, stored=drawn.stored_result, actor=drawn.actor
            )
        try:
            out = step(before, event, Context(now, checker, fee_bps))
        except Error:
            continue  # a refused event changes nothing
        assert not before.terminal
        ledger = ledger.apply(out.transfers)
        for e in out.effects:
            if isinstance(e, AgentPenalized):
                records[e.agent] = penalize(records.get(e.agent, AgentRecord()))
        tasks[idx] = out.task
        if before.disputed_by is not None or any(isinstance(e, DisputeFiled) for e in out.effects):
            assert out.task.disputed_by is not None  # a task's view reads disputes only then
        assert ledger.total() == 0
        for name, balance in ledger.balances.items():
            assert name == WORLD or balance >= 0
        for task in tasks:
            held = ledger.balance(escrow_account(task.id))
            assert held == (0 if task.terminal else task.reward)
            assert task.attempts <= 3
            if task.status is Status.COMPLETED:
                assert task.agent is not None
    for record in records.values():
        assert 0 <= record.reputation <= 100
    assert ledger.balance(WORLD) == -sum(rewards)
