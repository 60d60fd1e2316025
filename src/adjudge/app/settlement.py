"""Where money moves: the one module of adjudge that writes the ledger.

Three kinds of movement, each in the transaction of the use case that causes it:

- **deposits** bring money in from outside (an admin's instruction);
- **funding** moves a poster's own money into a task's escrow when it posts, and a
  **reservation** a caller's into a paid call's hold when the call starts;
- **releases** move money out of an escrow or a hold (a payout and its fee, a refund, a
  call's charge) — only against a receipt signed in the same transaction: the receipt of the
  verdict, ruling or call determination that decided it, or a settlement receipt of its own for
  the endings no judgment decides (a refund of work never delivered, a payout after
  escalation). The ledger itself refuses a release without one
  (:class:`adjudge.store.ledger.UnprovenRelease`), and each leg names its receipt;
- **holds**: a settled call's charge waits in its provider's hold until the call's report
  deadline passes (settled is not yet paid, spec 003), then **matures** into the provider's
  wallet against the receipt that settled it (:func:`mature`);
- **report refunds** give a settled call's charge back from the provider's hold when an admin
  upholds its caller's report, against the ruling's receipt.

Every change a marketplace hears of happens here too, and so its event is written here, in the
same transaction (``outbox.emit``: the webhook outbox, :mod:`adjudge.store.outbox`): a
verdict or a ruling, a payout, a refund, a dispute, an escalation. A change that rolls back
leaves no event; delivery happens later and can never undo it.

The HTTP service, the CLI and the workers never reach this module (an import-linter contract
keeps it so); they call use cases, which call it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from adjudge.app import metrics
from adjudge.app.timing import stage
from adjudge.errors import BadInput, InternalError, NotFound
from adjudge.kernel import Determination
from adjudge.market import (
    WORLD,
    AgentPenalized,
    DisputeFiled,
    Outcome,
    Routed,
    Settlement,
    Status,
    TakeEnded,
    TakeHeld,
    TakeLapsed,
    Transfer,
    VerdictReached,
    penalize,
    proof,
    provider_hold_account,
    wallet_account,
)
from adjudge.receipts import Issuer
from adjudge.receipts.issuer import Place
from adjudge.store import (
    StoredDispute,
    StoredLapse,
    StoredTask,
    Transaction,
    holds,
    ledger,
    outbox,
    receipt_log,
    records,
    takes,
)
from adjudge.webhooks import events

#: The most money the ledger holds in total (its columns are signed 64-bit integers).
MAX_MONEY = 2**63 - 1


def _transfer(tx: Transaction, transfers: Sequence[Transfer], **where: Any) -> None:
    """The ledger's transfer, counted for the metrics once the transaction commits."""
    ledger.transfer(tx, transfers, **where)
    metrics.moved(tx, transfers)


def deposit(tx: Transaction, account_id: str, amount: int, *, at: datetime) -> int:
    """Credit money from outside into an account's wallet; returns the new balance."""
    if records.account(tx, account_id) is None:
        raise NotFound(f"No account {account_id}.", code="ACCOUNT_NOT_FOUND")
    # Only deposits bring money in, so capping their total keeps every balance within the
    # ledger's 64-bit columns (SQLite would silently turn an overflow into a float).
    if ledger.deposits(tx) + amount > MAX_MONEY:
        raise BadInput(
            "Deposits would exceed the most money the ledger holds.", code="INVALID_AMOUNT"
        )
    wallet = wallet_account(account_id)
    _transfer(tx, [Transfer(WORLD, wallet, amount, "deposit")], task_id=None, at=at)
    return ledger.balance(tx, wallet)


def post(tx: Transaction, out: Outcome, *, title: str, brief: str, at: datetime) -> StoredTask:
    """Store a newly posted task and fund its escrow from the poster's wallet."""
    stored = records.insert_task(tx, out.task, title=title, brief=brief)
    _transfer(tx, out.transfers, task_id=out.task.id, at=at)
    return stored


def apply(
    tx: Transaction, stored: StoredTask, out: Outcome, issuer: Issuer, *, at: datetime
) -> StoredTask:
    """Store a task event's outcome: the new state first (a lost race fails fast), then the
    verdict's receipt — its kernel determination, built by the market
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
    settlement = next((e for e in out.effects if isinstance(e, Settlement)), None)
    if verdict is not None:
        about = proof.round_of(task_id, verdict.attempt)
        decided = _determination(verdict.determination)

        def signed(previous: Place) -> Mapping[str, Any]:
            with stage("receipt.sign"):
                return issuer.sign(decided, previous, about=about)

        receipt = receipt_log.append(tx, signed, task_id=task_id, at=at)
        records.add_verdict(tx, verdict, receipt.id)
        metrics.verdict(tx, "task", "PASS" if verdict.passed else "FAIL")
        emit(events.verdict(verdict, task, receipt.id))
        if settlement is not None:
            _transfer(tx, settlement.transfers, task_id=task_id, at=at, receipt_id=receipt.id)
            emit(events.settlement(settlement, task, receipt.id))
    elif settlement is not None:
        sub = records.submission(tx, task_id, settlement.attempt) if settlement.attempt else None
        found = records.verdicts(tx, task_id)
        basis = found[-1].receipt_id if found else None
        ending = proof.ending(
            task,
            sub.result if sub else None,
            {**settlement.decision(), "basis": basis},
            result_digest=settlement.result_digest,
            at=settlement.at,
        )
        about = proof.round_of(task_id, settlement.attempt)
        receipt = receipt_log.append(
            tx, lambda previous: issuer.sign(ending, previous, about=about), task_id=task_id, at=at
        )
        _transfer(tx, settlement.transfers, task_id=task_id, at=at, receipt_id=receipt.id)
        emit(events.settlement(settlement, task, receipt.id))
    if task.status is Status.ESCALATED and stored.task.status is not Status.ESCALATED:
        emit(events.escalated(task))
    for effect in out.effects:
        if isinstance(effect, Routed):
            _route(tx, effect, issuer, at)
        if isinstance(effect, Transfer):
            raise InternalError(  # only posting funds an escrow, through :func:`post`
                "A task event moved money outside a settlement.", code="UNPROVEN_RELEASE"
            )
        if isinstance(effect, AgentPenalized):
            agent = records.account(tx, effect.agent)
            if agent is not None:
                records.save_record(tx, agent.id, penalize(agent.record))
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


def reserve(tx: Transaction, payer: str, hold: str, amount: int, *, at: datetime) -> None:
    """Take a paid call's listed price from the caller's wallet into the call's hold before the
    provider is called (``INSUFFICIENT_FUNDS`` when the wallet is short; a free call holds
    nothing)."""
    if amount > 0:
        _transfer(
            tx, [Transfer(wallet_account(payer), hold, amount, "reserve")], task_id=None, at=at
        )


def release_call(
    tx: Transaction,
    hold: str,
    *,
    call_id: str,
    payer: str,
    provider: str,
    payment: str,
    amount: int,
    receipt_id: str,
    report_deadline: datetime | None,
    at: datetime,
) -> None:
    """Release a paid call's reservation as its signed receipt decided (spec 003's table):
    ``refund`` and ``void`` return it to the caller; ``settle`` charges it — into the provider's
    hold until the call's report deadline passes (settled is not yet paid), or straight to the
    provider's wallet when the call cannot be reported (no deadline)."""
    if amount <= 0:
        return
    if payment != "settle":
        memo = {"refund": "refund", "void": "void"}[payment]
        _transfer(
            tx,
            [Transfer(hold, wallet_account(payer), amount, memo)],
            task_id=None,
            at=at,
            receipt_id=receipt_id,
        )
        return
    to = wallet_account(provider) if report_deadline is None else provider_hold_account(provider)
    _transfer(
        tx, [Transfer(hold, to, amount, "charge")], task_id=None, at=at, receipt_id=receipt_id
    )
    if report_deadline is not None:
        holds.add(
            tx,
            call_id=call_id,
            provider=provider,
            caller=payer,
            amount=amount,
            receipt_id=receipt_id,
            matures_at=report_deadline,
        )


def mature(tx: Transaction, now: datetime, *, provider: str | None = None, limit: int = 500) -> int:
    """Pay providers the held charges whose report deadline passed with no report open: each
    moves from the provider's hold to its wallet against the receipt that settled the call (on
    the log, checked by the ledger). Returns how many matured; a hold a report claimed first is
    left to its ruling."""
    matured = 0
    for due in holds.due(tx, now, provider=provider, limit=limit):
        if not holds.move(tx, due.call_id, from_state=holds.HELD, to_state=holds.RELEASED, at=now):
            continue  # a report claimed it in the meantime
        _transfer(
            tx,
            [
                Transfer(
                    provider_hold_account(due.provider),
                    wallet_account(due.provider),
                    due.amount,
                    "release",
                )
            ],
            task_id=None,
            at=now,
            receipt_id=due.receipt_id,
            matured=True,
        )
        matured += 1
    return matured


def claim_hold(tx: Transaction, call_id: str) -> bool:
    """A report filed in time keeps the call's held charge until it is ruled on; False when
    the call has no hold waiting (it matured, or was never held)."""
    return holds.move(tx, call_id, from_state=holds.HELD, to_state=holds.REPORTED)


def unclaim_hold(tx: Transaction, call_id: str) -> None:
    """A dismissed report lets the held charge mature as if no report had been filed."""
    holds.move(tx, call_id, from_state=holds.REPORTED, to_state=holds.HELD)


def refund_upheld_report(
    tx: Transaction,
    *,
    call_id: str,
    provider: str,
    payer: str,
    amount: int,
    receipt_id: str,
    at: datetime,
) -> None:
    """Give a settled call's charge back to its caller, as the ruling's receipt signed in this
    transaction decided: from the provider's hold, where a report filed in time keeps it, so it
    can never fail for lack of provider funds. A call settled before holds existed (or without
    a deadline) has none: then from the provider's wallet (``INSUFFICIENT_FUNDS`` when it holds
    less, and nothing is written)."""
    if receipt_id not in tx.appended:
        raise ledger.UnprovenRelease(
            "A report's refund moves only against the ruling's receipt signed in the same "
            "transaction; nothing was moved."
        )
    held = holds.get(tx, call_id)
    if held is not None and holds.move(
        tx,
        call_id,
        from_state=holds.REPORTED,
        to_state=holds.REFUNDED,
        at=at,
        end_receipt_id=receipt_id,
    ):
        source, amount = provider_hold_account(provider), held.amount
    else:
        source = wallet_account(provider)
    _transfer(
        tx,
        [Transfer(source, wallet_account(payer), amount, "report refund")],
        task_id=None,
        at=at,
        receipt_id=receipt_id,
    )
