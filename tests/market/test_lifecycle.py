"""The market's lifecycle: every ending, every refusal the spec names, and the money."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adjudge import Error
from adjudge.market import (
    Accept,
    AgentPenalized,
    Cancel,
    Collect,
    Context,
    Dispute,
    Draft,
    Ending,
    Finalize,
    Ledger,
    Outcome,
    Reclaim,
    Review,
    Rule,
    Status,
    Submit,
    Task,
    Transfer,
    VerdictReached,
    fee_of,
    post,
    step,
    wallet_account,
)
from adjudge.market.money import WORLD
from adjudge.market.tasks import digest_of
from support.fakes import FakeChecker
from support.verdicts import VERIFIER_KEY, verifier_verdict

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GOOD = "A long enough result."
BAD = "FAIL FAIL FAIL FAIL"


def ctx(at: datetime = T0, fee_bps: int = 1000) -> Context:
    return Context(now=at, checker=FakeChecker(), fee_bps=fee_bps)


def posted(mode: str = "auto", **kw: object) -> Task:
    draft = Draft(
        poster="P",
        reward=2_000_000,
        deadline=T0 + timedelta(days=1),
        mode=mode,
        criteria={"min_length": 10} if mode == "auto" else {},
        verifier="V" if mode == "agent" else None,
        verifier_opted_in=True,
        verifier_key=VERIFIER_KEY.keyid if mode == "agent" else None,
        **kw,  # type: ignore[arg-type]
    )
    return post("t1", draft, ctx()).task


def run(task: Task, *events: object, at: datetime = T0) -> Outcome:
    out = Outcome(task)
    for e in events:
        out = step(out.task, e, ctx(at))  # type: ignore[arg-type]
    return out


def delivered(mode: str, result: str = GOOD) -> Task:
    return run(posted(mode), Accept("A"), Submit("A", result)).task


def stored(task: Task) -> str:
    """The stored copy of the task's latest submission (one of the results these tests send)."""
    return next(r for r in (GOOD, BAD) if digest_of(r) == task.result_digest)


def review(task: Task, passed: bool, reasons: tuple[str, ...] = (), actor: str = "P") -> Review:
    """The poster's review of the latest submission, with the server's stored copy."""
    return Review(actor, passed, reasons, stored_result=stored(task))


def rule(task: Task, pay_agent: bool, actor: str = "ADM") -> Rule:
    """An admin's ruling on the task, with the server's stored copy of its latest submission."""
    return Rule(actor, pay_agent, stored_result=stored(task))


def judge(task: Task, passed: bool) -> Outcome:
    if task.mode == "auto":
        return step(task, Finalize("A", stored(task)), ctx())
    if task.mode == "manual":
        return step(task, review(task, passed, ("no",) if not passed else ()), ctx())
    return step(task, verifier_verdict(task, passed, stored=stored(task)), ctx())


def transfers(out: Outcome) -> list[Transfer]:
    return list(out.transfers)


MODES = ["auto", "agent", "manual"]


def test_post_funds_the_escrow() -> None:
    """Posting moves the whole reward from the poster's wallet into the task's escrow."""
    out = post("t1", Draft("P", 500, T0 + timedelta(hours=1)), ctx())
    assert out.task.status is Status.FUNDED and out.task.mode == "manual"
    assert out.effects == (Transfer("wallet:P", "escrow:t1", 500, "fund"),)


@pytest.mark.parametrize(
    ("draft", "code"),
    [
        (Draft("P", 1, T0 + timedelta(days=1), mode="oracle"), "VERIFICATION_MODE_UNSUPPORTED"),
        (Draft("P", 0, T0 + timedelta(days=1)), "INVALID_REWARD"),
        (Draft("P", 1, T0 + timedelta(minutes=59)), "INVALID_DEADLINE"),
        (Draft("P", 1, T0 + timedelta(days=90, seconds=1)), "INVALID_DEADLINE"),
        (Draft("P", 1, T0 + timedelta(days=1), mode="auto"), "AUTO_CRITERIA_REQUIRED"),
        (
            Draft(
                "P", 1, T0 + timedelta(days=1), mode="auto", criteria={"regex_pattern": "(a+)+$"}
            ),
            "REGEX_PATTERN_UNUSABLE",
        ),
        (Draft("P", 1, T0 + timedelta(days=1), mode="agent"), "VERIFIER_REQUIRED"),
        (Draft("P", 1, T0 + timedelta(days=1), mode="agent", verifier="P"), "VERIFIER_IS_POSTER"),
        (
            Draft("P", 1, T0 + timedelta(days=1), mode="agent", verifier="V"),
            "VERIFIER_NOT_OPTED_IN",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_post_refusals(draft: Draft, code: str) -> None:
    """Each post-time refusal carries the spec's code."""
    with pytest.raises(Error) as err:
        post("t1", draft, ctx())
    assert err.value.code == code


def test_deadline_bounds_are_inclusive() -> None:
    """Exactly 1 hour and exactly 90 days are both accepted."""
    for span in (timedelta(hours=1), timedelta(days=90)):
        assert post("t", Draft("P", 1, T0 + span), ctx()).task.deadline == T0 + span


@pytest.mark.parametrize("mode", MODES)
def test_pass_pays_agent_and_platform(mode: str) -> None:
    """A pass pays 90% to the agent and 10% to the platform in one step."""
    out = judge(delivered(mode), True)
    assert out.task.status is Status.COMPLETED and out.task.ending is Ending.PAID_ON_PASS
    assert transfers(out) == [
        Transfer("escrow:t1", "wallet:A", 1_800_000, "payout"),
        Transfer("escrow:t1", "platform:fees", 200_000, "fee"),
    ]
    (verdict,) = [e for e in out.effects if isinstance(e, VerdictReached)]
    assert verdict.passed and verdict.attempt == 1


@pytest.mark.parametrize("mode", MODES)
def test_fail_costs_a_round(mode: str) -> None:
    """A fail moves to failed, records the verdict and penalizes the agent; no money moves."""
    out = judge(delivered(mode, BAD), False)
    assert out.task.status is Status.FAILED and out.task.failed_at == T0
    assert AgentPenalized("A") in out.effects and not transfers(out)


def test_fee_is_floored_and_read_at_settlement() -> None:
    """The fee is floor(amount × bps / 10000), with the bps of the moment of payout."""
    assert fee_of(999, 1000) == 99
    assert fee_of(1, 3000) == 0
    with pytest.raises(Error):
        fee_of(10, 3001)
    task = delivered("manual")
    out = step(task, review(task, True), ctx(fee_bps=2500))
    assert [t.amount for t in transfers(out)] == [1_500_000, 500_000]


@pytest.mark.parametrize("mode", MODES)
def test_three_submissions_then_refused(mode: str) -> None:
    """A fourth submission is refused with MAX_ATTEMPTS_REACHED."""
    task = delivered(mode, BAD)
    for _ in range(2):
        task = judge(task, False).task
        task = step(task, Submit("A", BAD), ctx()).task
    task = judge(task, False).task
    assert task.attempts == 3
    with pytest.raises(Error) as err:
        step(task, Submit("A", GOOD), ctx())
    assert err.value.code == "MAX_ATTEMPTS_REACHED"


def test_submission_after_deadline_refused() -> None:
    """A submission at or after the deadline is refused with DEADLINE_REACHED."""
    task = judge(delivered("manual"), False).task
    with pytest.raises(Error) as err:
        step(task, Submit("A", GOOD), ctx(T0 + timedelta(days=1)))
    assert err.value.code == "DEADLINE_REACHED"


def test_verifier_rules() -> None:
    """The verifier cannot take the task, and only the named verifier may judge."""
    task = posted("agent")
    with pytest.raises(Error) as err:
        step(task, Accept("V"), ctx())
    assert err.value.code == "IS_VERIFIER"
    task = delivered("agent")
    with pytest.raises(Error) as err:
        step(task, verifier_verdict(task, True, stored=GOOD, actor="A"), ctx())
    assert err.value.code == "SELF_VERIFICATION"
    with pytest.raises(Error) as err:
        step(task, verifier_verdict(task, True, stored=GOOD, actor="X"), ctx())
    assert err.value.code == "NOT_TASK_VERIFIER"
    with pytest.raises(Error) as err:
        step(task, verifier_verdict(task, False, tuple("r" * 11), stored=GOOD), ctx())
    assert err.value.code == "TOO_MANY_REASONS"


def test_manual_review_rules() -> None:
    """Only the poster reviews, only while submitted, with at most 20 reasons."""
    task = delivered("manual")
    with pytest.raises(Error) as err:
        step(task, review(task, True, actor="A"), ctx())
    assert err.value.code == "NOT_TASK_POSTER"
    with pytest.raises(Error) as err:
        step(task, review(task, False, tuple("r" * 21)), ctx())
    assert err.value.code == "TOO_MANY_REASONS"
    assert step(task, review(task, False, tuple("r" * 20)), ctx()).task.status is Status.FAILED
    with pytest.raises(Error) as err:
        step(judge(task, False).task, review(task, True), ctx())
    assert err.value.code == "ILLEGAL_TRANSITION"


def test_auto_check_only_on_finalize() -> None:
    """Submitting an auto task judges nothing; only finalize by the agent runs the check."""
    task = delivered("auto")
    assert task.status is Status.SUBMITTED
    with pytest.raises(Error) as err:
        step(task, Finalize("P", GOOD), ctx())
    assert err.value.code == "NOT_TASK_AGENT"
    with pytest.raises(Error) as err:
        step(task, Finalize("A", "something else entirely"), ctx())
    assert err.value.code == "RESULT_DIGEST_MISMATCH"


def test_dispute_windows() -> None:
    """Either side disputes before the deadline; after it only the agent, within 3 days."""
    failed = judge(delivered("manual"), False).task
    assert step(failed, Dispute("P"), ctx()).task.status is Status.DISPUTED
    after = T0 + timedelta(days=1)
    with pytest.raises(Error) as err:
        step(failed, Dispute("P"), ctx(after))
    assert err.value.code == "DEADLINE_REACHED"
    late_fail = step(
        delivered("manual"), review(delivered("manual"), False), ctx(T0 + timedelta(hours=23))
    ).task
    assert step(late_fail, Dispute("A"), ctx(after + timedelta(days=1))).task.disputed_by == "A"
    with pytest.raises(Error) as err:
        step(late_fail, Dispute("A"), ctx(T0 + timedelta(hours=23, days=3)))
    assert err.value.code == "APPEAL_WINDOW_CLOSED"


def test_refund_after_deadline_and_appeal_window() -> None:
    """The poster reclaims the full reward once the deadline and the appeal window have passed."""
    failed = step(
        delivered("manual"), review(delivered("manual"), False), ctx(T0 + timedelta(hours=23))
    ).task
    with pytest.raises(Error) as err:
        step(failed, Reclaim("P"), ctx(T0 + timedelta(hours=12)))
    assert err.value.code == "DEADLINE_NOT_REACHED"
    with pytest.raises(Error) as err:
        step(failed, Reclaim("P"), ctx(T0 + timedelta(days=2)))
    assert err.value.code == "APPEAL_WINDOW_OPEN"
    out = step(failed, Reclaim("P"), ctx(T0 + timedelta(hours=23, days=3)))
    assert out.task.ending is Ending.REFUNDED_AFTER_FAIL
    assert transfers(out) == [Transfer("escrow:t1", "wallet:P", 2_000_000, "refund")]


@pytest.mark.parametrize("mode", MODES)
def test_never_judged_escalates_then_agent_collects(mode: str) -> None:
    """Reclaiming delivered, unjudged work escalates it; the agent collects 14 days later."""
    after = T0 + timedelta(days=1)
    esc = step(delivered(mode), Reclaim("P"), ctx(after))
    assert esc.task.status is Status.ESCALATED and not esc.effects
    with pytest.raises(Error) as err:
        step(esc.task, Collect("A"), ctx(after + timedelta(days=13)))
    assert err.value.code == "COLLECT_TOO_EARLY"
    out = step(esc.task, Collect("A"), ctx(after + timedelta(days=14)))
    assert out.task.ending is Ending.PAID_AFTER_ESCALATION
    ruled = step(esc.task, rule(esc.task, pay_agent=False), ctx(after))
    assert ruled.task.ending is Ending.REFUNDED_BY_RULING
    with pytest.raises(Error):
        step(ruled.task, Collect("A"), ctx(after + timedelta(days=14)))


def test_other_endings() -> None:
    """Cancel, undelivered refund, unaccepted refund and both rulings end as named."""
    assert step(posted("manual"), Cancel("P"), ctx()).task.ending is Ending.REFUNDED_ON_CANCEL
    after = T0 + timedelta(days=1)
    assert (
        step(posted("manual"), Reclaim("P"), ctx(after)).task.ending is Ending.REFUNDED_UNACCEPTED
    )
    assigned = step(posted("manual"), Accept("A"), ctx()).task
    assert step(assigned, Reclaim("P"), ctx(after)).task.ending is Ending.REFUNDED_UNDELIVERED
    with pytest.raises(Error):
        step(assigned, Cancel("P"), ctx())
    disputed = step(judge(delivered("auto", BAD), False).task, Dispute("A"), ctx()).task
    with pytest.raises(Error) as err:
        step(disputed, rule(disputed, pay_agent=True, actor="A"), ctx())
    assert err.value.code == "CONFLICT_OF_INTEREST"
    paid = step(disputed, rule(disputed, pay_agent=True), ctx())
    assert paid.task.ending is Ending.PAID_BY_RULING


def test_terminal_states_absorb() -> None:
    """Nothing happens to a completed task."""
    done = judge(delivered("manual"), True).task
    with pytest.raises(Error) as err:
        step(done, Dispute("A"), ctx())
    assert err.value.code == "ILLEGAL_TRANSITION"


def test_ledger_refuses_overdraft() -> None:
    """A transfer that would overdraw any account but the world is refused, all or nothing."""
    ledger = Ledger().apply([Transfer(WORLD, wallet_account("P"), 10)])
    with pytest.raises(Error) as err:
        ledger.apply([Transfer(wallet_account("P"), "escrow:t", 11)])
    assert err.value.code == "INSUFFICIENT_FUNDS"
    assert ledger.balance(wallet_account("P")) == 10 and ledger.total() == 0
