"""Storing a task event's outcome: its new state, the verdict's signed receipt, the money it
releases, and every effect the parties hear of — in one transaction.

The market decides (:mod:`adjudge.market.lifecycle`, with each verdict's kernel determination
built by :mod:`adjudge.market.proof`); this module only records what it decided: the state
first (a lost race fails as soon as the update is sent), then the receipt signed as
determined (never re-derived), then the money through :mod:`adjudge.app.settlement` (the one
writer of the ledger) against that receipt, then the events (``outbox.emit``: the webhook
outbox), disputes, penalties and takes. A change that rolls back leaves no event; delivery
happens later and can never undo it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from adjudge.app import metrics, settlement
from adjudge.app.timing import stage
from adjudge.errors import InternalError
from adjudge.kernel import Determination
from adjudge.market import (
    AgentPenalized,
    DisputeFiled,
    Outcome,
    RevealRequested,
    Routed,
    Settlement,
    Status,
    TakeEnded,
    TakeHeld,
    TakeLapsed,
    Transfer,
    VerdictReached,
    VoteCast,
    penalize,
    proof,
)
from adjudge.receipts import Issuer
from adjudge.receipts.issuer import Place
from adjudge.store import (
    StoredDispute,
    StoredLapse,
    StoredTask,
    Transaction,
    outbox,
    receipt_log,
    records,
    takes,
)
from adjudge.webhooks import events


def record(
    tx: Transaction, stored: StoredTask, out: Outcome, issuer: Issuer, *, at: datetime
) -> StoredTask:
    """Store a task event's outcome: the new state first (a lost race fails as soon as the
    update is sent), then the verdict's receipt — its kernel determination, built by the market
    (:mod:`adjudge.market.proof`) and signed here as it is — the money it releases, and the
    rest of the effects, each with the event its parties' webhooks hear of. A take that ends
    or starts moves its agent's counter of held takes here too; a take over the agent's limit
    refuses the whole outcome (``TAKE_LIMIT_REACHED``: the transaction rolls back)."""
    updated = records.update_task(tx, stored, out.task)
    task = out.task
    task_id = task.id
    parties = events.task_parties(task)

    def emit(event: tuple[str, dict[str, object]]) -> None:
        outbox.emit(tx, parties, event[0], events.payload(*event, at), at=at)

    verdict = next((e for e in out.effects if isinstance(e, VerdictReached)), None)
    settled = next((e for e in out.effects if isinstance(e, Settlement)), None)
    if verdict is not None:
        about = proof.round_of(task_id, verdict.attempt)
        decided = _determination(verdict.determination)

        def signed(previous: Place) -> Mapping[str, Any]:
            with stage("receipt.sign"):
                return issuer.sign(decided, previous, about=about)

        receipt = receipt_log.append(tx, signed, task_id=task_id, at=at)
        records.add_verdict(tx, verdict, receipt.id, poster=task.poster)
        metrics.verdict(tx, "task", "PASS" if verdict.passed else "FAIL")
        emit(events.verdict(verdict, task, receipt.id))
        if settled is not None:
            settlement.release_task(tx, settled, task_id=task_id, receipt_id=receipt.id, at=at)
            emit(events.settlement(settled, task, receipt.id))
    elif settled is not None:
        sub = records.submission(tx, task_id, settled.attempt) if settled.attempt else None
        found = records.verdicts(tx, task_id)
        basis = found[-1].receipt_id if found else None
        ending = proof.ending(
            task,
            sub.result if sub else None,
            {**settled.decision(), "basis": basis},
            result_digest=settled.result_digest,
            at=settled.at,
        )
        about = proof.round_of(task_id, settled.attempt)
        receipt = receipt_log.append(
            tx, lambda previous: issuer.sign(ending, previous, about=about), task_id=task_id, at=at
        )
        settlement.release_task(tx, settled, task_id=task_id, receipt_id=receipt.id, at=at)
        emit(events.settlement(settled, task, receipt.id))
    for notice in _notices(stored, out):
        emit(notice)
    for effect in out.effects:
        if isinstance(effect, VoteCast):
            records.add_vote(tx, effect.task_id, effect.attempt, effect.vote)
        if isinstance(effect, Routed):
            _route(tx, effect, issuer, at)
        if isinstance(effect, Transfer):
            raise InternalError(  # only posting funds an escrow, through :func:`post`
                "A task event moved money outside a settlement.", code="UNPROVEN_RELEASE"
            )
        if isinstance(effect, AgentPenalized):
            record = records.record_to_change(tx, effect.agent)
            if record is not None:
                records.save_record(tx, effect.agent, penalize(record))
        elif isinstance(effect, DisputeFiled):
            records.add_dispute(
                tx,
                StoredDispute(effect.task_id, effect.attempt, effect.by, effect.reason, effect.at),
            )
            emit(events.dispute(effect, task))
        elif isinstance(effect, TakeLapsed):
            records.add_lapse(
                tx, StoredLapse(effect.task_id, effect.agent, effect.taken_at, effect.at)
            )
        elif isinstance(effect, TakeEnded):
            takes.end(tx, effect.agent)
        elif isinstance(effect, TakeHeld):
            takes.hold(tx, effect.agent, effect.limit)
    return updated


def _notices(stored: StoredTask, out: Outcome) -> list[tuple[str, dict[str, Any]]]:
    """The events of a change no money follows: an escalation (the poster's reclaim, or a
    sealed task's broken or withheld seal), and a sealed task's reveal falling due."""
    task = out.task
    found = [events.reveal_due(e, task) for e in out.effects if isinstance(e, RevealRequested)]
    if task.status is Status.ESCALATED and stored.task.status is not Status.ESCALATED:
        found.append(events.escalated(task))
    return found


def _route(tx: Transaction, routed: Routed, issuer: Issuer, at: datetime) -> None:
    """Record an agent review that decided nothing, with its (undecided) receipt."""
    decided = _determination(routed.determination)
    about = proof.round_of(routed.task_id, routed.attempt)
    receipt = receipt_log.append(
        tx,
        lambda previous: issuer.sign(decided, previous, about=about),
        task_id=routed.task_id,
        at=at,
    )
    records.add_routing(tx, routed, receipt.id)


def _determination(determination: Determination | None) -> Determination:
    """The market's determination of a judgment, which is signed as it is (never re-derived)."""
    if determination is None:
        raise InternalError(
            "A judgment reached the service without its kernel determination; nothing was "
            "signed or moved.",
            code="INTERNAL_ERROR",
        )
    return determination
