"""Where money moves: the one module of adjudge that writes the ledger.

Three kinds of movement, each in the transaction of the use case that causes it:

- **deposits** bring money in from outside (an admin's instruction);
- **funding** moves a poster's own money into a task's escrow when it posts;
- **releases** move money out of an escrow (a payout and its fee, or a refund) — only against
  a receipt signed in the same transaction: the receipt of the verdict or ruling that decided
  it, or a settlement receipt of its own for the endings no judgment decides (a refund of work
  never delivered, a payout after escalation). The ledger itself refuses a release without one
  (:class:`adjudge.store.ledger.UnprovenRelease`), and each leg names its receipt.

Every change a marketplace hears of happens here too, and so its event is written here, in the
same transaction (``outbox.emit``: the webhook outbox, :mod:`adjudge.store.outbox`): a
verdict or a ruling, a payout, a refund, a dispute, an escalation. A change that rolls back
leaves no event; delivery happens later and can never undo it.

The HTTP service, the CLI and the workers never reach this module (an import-linter contract
keeps it so); they call use cases, which call it.
"""

from __future__ import annotations

from datetime import datetime

from adjudge.errors import Error
from adjudge.market import (
    WORLD,
    AgentPenalized,
    DisputeFiled,
    Outcome,
    ReceiptIssuer,
    Settlement,
    Status,
    Transfer,
    VerdictReached,
    penalize,
    wallet_account,
)
from adjudge.store import (
    StoredDispute,
    StoredTask,
    Transaction,
    ledger,
    outbox,
    receipt_log,
    records,
)
from adjudge.webhooks import events

#: The most money the ledger holds in total (its columns are signed 64-bit integers).
MAX_MONEY = 2**63 - 1


def deposit(tx: Transaction, account_id: str, amount: int, *, at: datetime) -> int:
    """Credit money from outside into an account's wallet; returns the new balance."""
    if records.account(tx, account_id) is None:
        raise Error(f"No account {account_id}.", code="ACCOUNT_NOT_FOUND")
    # Only deposits bring money in, so capping their total keeps every balance within the
    # ledger's 64-bit columns (SQLite would silently turn an overflow into a float).
    if ledger.deposits(tx) + amount > MAX_MONEY:
        raise Error("Deposits would exceed the most money the ledger holds.", code="INVALID_AMOUNT")
    wallet = wallet_account(account_id)
    ledger.transfer(tx, [Transfer(WORLD, wallet, amount, "deposit")], task_id=None, at=at)
    return ledger.balance(tx, wallet)


def post(tx: Transaction, out: Outcome, *, title: str, brief: str, at: datetime) -> StoredTask:
    """Store a newly posted task and fund its escrow from the poster's wallet."""
    stored = records.insert_task(tx, out.task, title=title, brief=brief)
    ledger.transfer(tx, out.transfers, task_id=out.task.id, at=at)
    return stored


def apply(
    tx: Transaction, stored: StoredTask, out: Outcome, issuer: ReceiptIssuer, *, at: datetime
) -> StoredTask:
    """Store a task event's outcome: the new state first (a lost race fails fast), then the
    verdict's receipt, the money it releases, and the rest of the effects, each with the
    event its parties' webhooks hear of."""
    updated = records.update_task(tx, stored, out.task)
    task = out.task
    task_id = task.id
    parties = events.task_parties(task)

    def emit(event: tuple[str, dict[str, object]]) -> None:
        outbox.emit(tx, parties, event[0], events.payload(*event, at), at=at)

    verdict = next((e for e in out.effects if isinstance(e, VerdictReached)), None)
    settlement = next((e for e in out.effects if isinstance(e, Settlement)), None)
    if verdict is not None:
        sub = records.submission(tx, task_id, verdict.attempt)
        result = sub.result if sub else None
        receipt = receipt_log.append(
            tx,
            lambda previous: issuer.issue(verdict, result, previous, settlement),
            task_id=task_id,
            at=at,
        )
        records.add_verdict(tx, verdict, receipt.id)
        emit(events.verdict(verdict, task, receipt.id))
        if settlement is not None:
            ledger.transfer(tx, settlement.transfers, task_id=task_id, at=at, receipt_id=receipt.id)
            emit(events.settlement(settlement, task, receipt.id))
    elif settlement is not None:
        sub = records.submission(tx, task_id, settlement.attempt) if settlement.attempt else None
        found = records.verdicts(tx, task_id)
        basis = found[-1].receipt_id if found else None
        receipt = receipt_log.append(
            tx,
            lambda previous: issuer.issue_settlement(
                settlement, out.task, sub.result if sub else None, basis, previous
            ),
            task_id=task_id,
            at=at,
        )
        ledger.transfer(tx, settlement.transfers, task_id=task_id, at=at, receipt_id=receipt.id)
        emit(events.settlement(settlement, task, receipt.id))
    if task.status is Status.ESCALATED and stored.task.status is not Status.ESCALATED:
        emit(events.escalated(task))
    for effect in out.effects:
        if isinstance(effect, Transfer):
            raise Error(  # only posting funds an escrow, through :func:`post`
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
    return updated
