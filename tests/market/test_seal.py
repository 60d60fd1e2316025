"""Sealed criteria in the pure core: the commitment, the reveal's rules, and what a broken or
withheld seal does to a task (no money), and that no receipt is signed over a reveal that does
not open its seal."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adjudge import Error
from adjudge.app.wiring import AutoCheck
from adjudge.market import (
    Accept,
    Collect,
    Context,
    Draft,
    Finalize,
    Reveal,
    RevealRequested,
    SealBroken,
    Settlement,
    Status,
    Submit,
    Task,
    Transfer,
    VerdictReached,
    post,
    step,
)
from adjudge.market import seal as sealing

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ANSWER = {"expected_answer": "42"}
SALT = "0123456789abcdef"
RESULT = "The answer is 42."


def ctx(at: datetime = T0) -> Context:
    """The market's context at ``at`` with the real auto check."""
    return Context(now=at, checker=AutoCheck())


def waiting(at: datetime = T0) -> Task:
    """A sealed auto task whose agent submitted and finalized: the check waits for the reveal."""
    draft = Draft(
        poster="pat",
        reward=1000,
        deadline=at + timedelta(days=1),
        mode="auto",
        criteria={"max_length": 100},
        seal=sealing.commit(ANSWER, SALT),
    )
    task = post("t1", draft, ctx(at)).task
    task = step(task, Accept("ann"), ctx(at)).task
    task = step(task, Submit("ann", RESULT), ctx(at)).task
    out = step(task, Finalize("ann", RESULT), ctx(at))
    assert out.task.status is Status.AWAITING_VERIFICATION
    assert [type(e) for e in out.effects] == [RevealRequested]
    return out.task


def reveal(criteria: dict[str, str] = ANSWER, salt: str = SALT) -> dict[str, object]:
    """A reveal document."""
    return {"criteria": dict(criteria), "salt": salt}


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40), st.data())
def test_a_commitment_changes_with_any_character_of_the_answer_or_the_salt(
    answer: str, salt: str, data: st.DataObject
) -> None:
    """The commitment is a function of the reveal's canonical bytes: any change to the answer
    or the salt is another commitment."""
    c = sealing.commit({"expected_answer": answer}, salt)
    assert c == sealing.parse_reveal(reveal({"expected_answer": answer}, salt)).digest
    where = data.draw(st.integers(0, len(answer) - 1))
    swap = data.draw(st.characters(exclude_characters=answer[where], exclude_categories=("Cs",)))
    other = answer[:where] + swap + answer[where + 1 :]
    assert sealing.commit({"expected_answer": other}, salt) != c
    assert sealing.commit({"expected_answer": answer}, salt + "x") != c


@pytest.mark.parametrize(
    "bad",
    [None, "x", [], {"criteria": {}}, {"criteria": "42", "salt": "s"}, {"criteria": {}, "salt": ""},
     {"criteria": {}, "salt": "s", "extra": 1}, {"criteria": {"a": 1.5}, "salt": "s"}],
)  # fmt: skip
def test_what_is_not_a_reveal_is_refused_with_its_code(bad: object) -> None:
    """A reveal is exactly criteria (an object) and salt (a string), in plain JSON."""
    with pytest.raises(Error) as refused:
        sealing.parse_reveal(bad)
    assert refused.value.code == "SEAL_REVEAL_INVALID"


def test_a_matching_reveal_judges_at_once() -> None:
    """The reveal that opens the seal runs the check on the public and revealed criteria."""
    out = step(waiting(), Reveal("pat", reveal(), RESULT), ctx())
    verdict = next(e for e in out.effects if isinstance(e, VerdictReached))
    assert out.task.status is Status.COMPLETED and verdict.passed
    assert out.task.reveal == reveal()
    assert sealing.judged_criteria(out.task) == {"max_length": 100, **ANSWER}


@pytest.mark.parametrize(
    "sent",
    [
        reveal({"expected_answer": "43"}),
        reveal(salt=SALT + " "),
        reveal({"expected_answer": "42 "}),
    ],
)
def test_a_reveal_that_does_not_match_escalates_and_moves_no_money(sent: dict[str, object]) -> None:
    """A broken seal: the task escalates with the reason, no verdict, no transfer."""
    out = step(waiting(), Reveal("pat", sent, RESULT), ctx())
    assert out.task.status is Status.ESCALATED and out.task.reveal is None
    assert out.task.seal_broken and "is not the commitment" in out.task.seal_broken
    assert [type(e) for e in out.effects] == [SealBroken]
    assert not any(isinstance(e, Transfer | Settlement | VerdictReached) for e in out.effects)


def test_an_overdue_reveal_escalates_before_any_event() -> None:
    """Past the reveal window, any event sees the task escalated from the due time; the agent
    collects 14 days after that."""
    task = waiting()
    due = T0 + sealing.REVEAL_WINDOW
    assert task.reveal_due_at == due
    with pytest.raises(Error) as late:
        step(task, Reveal("pat", reveal(), RESULT), ctx(due))
    assert late.value.code == "REVEAL_OVERDUE"
    with pytest.raises(Error) as early:
        step(task, Collect("ann"), ctx(due + timedelta(days=13)))
    assert early.value.code == "COLLECT_TOO_EARLY"
    paid = step(task, Collect("ann"), ctx(due + timedelta(days=14)))
    assert paid.task.status is Status.COMPLETED and paid.task.escalated_at == due


def test_no_verdict_is_decided_over_a_reveal_that_does_not_open_the_seal() -> None:
    """The determination re-checks the held reveal with the oracle: one that does not open the
    commitment is a MISMATCH, so the finalize is refused and no money moves; the right one is
    bound beside the criteria judged."""
    opened = step(waiting(), Reveal("pat", reveal(), RESULT), ctx()).task
    verdict = next(
        e
        for e in step(waiting(), Reveal("pat", reveal(), RESULT), ctx()).effects
        if isinstance(e, VerdictReached)
    )
    assert verdict.determination is not None
    expressions = [c.expression for c in verdict.determination.checks]
    assert f'(= sealed-criteria "{opened.seal}")' in expressions
    pending = replace(opened, status=Status.SUBMITTED)
    tampered = replace(pending, reveal=reveal({"expected_answer": "43"}))
    with pytest.raises(Error) as refused:
        step(tampered, Finalize("ann", RESULT), ctx())
    assert refused.value.code == "RESULT_DIGEST_MISMATCH"
    assert step(pending, Finalize("ann", RESULT), ctx()).task.status is Status.COMPLETED
