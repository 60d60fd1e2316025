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
  upholds its caller's report, against the ruling's receipt;
- **judged refunds** give it back from the hold when the meaning judges, asked after the answer,
  fail the call, against the superseding receipt of their judgment (:func:`refund_judged_call`).

Nothing here decides or records anything but money: a task event's outcome (its new state,
the verdict's receipt, disputes, penalties, takes and the events the parties hear of) is stored
by :mod:`adjudge.app.outcomes`, which calls :func:`release_task` for the money in the same
transaction; a paid call's events are written by its use case beside :func:`release_call`.

The HTTP service, the CLI and the workers never reach this module (an import-linter contract
keeps it so); they call use cases, which call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adjudge.app import metrics
from adjudge.errors import BadInput, NotFound
from adjudge.market import (
    WORLD,
    Outcome,
    Settlement,
    Transfer,
    provider_hold_account,
    wallet_account,
)
from adjudge.store import (
    ConcurrentUpdate,
    StoredTask,
    Transaction,
    holds,
    ledger,
    records,
)

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


def release_task(
    tx: Transaction, settlement: Settlement, *, task_id: str, receipt_id: str, at: datetime
) -> None:
    """Release a task's escrow as its settlement says (a payout and its fee, or a refund),
    against the receipt signed for it in this transaction: the verdict's, or the settlement's
    own for an ending no judgment decided (:mod:`adjudge.app.outcomes` signs it first)."""
    _transfer(tx, settlement.transfers, task_id=task_id, at=at, receipt_id=receipt_id)


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


#: The most due holds one transaction matures (:func:`mature`).
MATURE_BATCH = 500


def mature(
    tx: Transaction,
    now: datetime,
    *,
    provider: str | None = None,
    limit: int = MATURE_BATCH,
    call_ids: Sequence[str] | None = None,
) -> int:
    """Pay providers the held charges whose report deadline passed with no report open: each
    moves from the provider's hold to its wallet against the receipt that settled the call (on
    the log, checked by the ledger). Returns how many matured; a hold a report claimed first is
    left to its ruling.

    The batch is released as a set, not a hold at a time: one statement releases every hold
    still held, one read finds their receipts on the log, and each provider's hold is debited
    once for all its matured charges (each charge its own ledger lines, naming its receipt).
    The batch locks every wallet it credits and every hold it debits first, in the one order of
    balances; a hold at a time, it held each provider's hold from its release to the commit
    while it went on to the next, and every settled call of that provider waited as long.
    With ``call_ids``, only those calls' holds (a batch that failed, taken apart, and a retry:
    :mod:`adjudge.app.maturity`)."""
    due = holds.due(tx, now, provider=provider, limit=limit, call_ids=call_ids)
    released = holds.release(tx, [d.call_id for d in due], at=now)
    matured = sorted((d for d in due if d.call_id in released), key=lambda d: d.provider)
    _transfer(
        tx,
        [
            Transfer(
                provider_hold_account(d.provider), wallet_account(d.provider), d.amount, "release"
            )
            for d in matured
        ],
        task_id=None,
        at=now,
        matured=[d.receipt_id for d in matured],
    )
    return len(matured)


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
    if held is None:
        source = wallet_account(provider)
    elif holds.move(
        tx,
        call_id,
        from_state=holds.REPORTED,
        to_state=holds.REFUNDED,
        at=at,
        end_receipt_id=receipt_id,
    ):
        source, amount = provider_hold_account(provider), held.amount
    else:
        # The report's hold ended since the ruling read the call (its meaning judgment
        # refunded it in another transaction): read again, the call is refunded, and this
        # ruling moves nothing. Taken from the wallet, the caller was refunded twice.
        raise ConcurrentUpdate(f"The hold of the call {call_id} changed while it was ruled on.")
    _transfer(
        tx,
        [Transfer(source, wallet_account(payer), amount, "report refund")],
        task_id=None,
        at=at,
        receipt_id=receipt_id,
    )


def refund_judged_call(
    tx: Transaction,
    *,
    call_id: str,
    provider: str,
    payer: str,
    receipt_id: str,
    at: datetime,
) -> int:
    """Give a settled call's held charge back to its caller, as the superseding receipt of its
    meaning judgment (signed in this transaction) decided; returns what moved. Only from the
    provider's hold, while it is ``held`` or claimed by an open report (the judgment decides
    the money; the report's ruling then finds the call refunded and moves nothing more); one
    already paid out is not taken back without the provider's word (0, nothing moved)."""
    if receipt_id not in tx.appended:
        raise ledger.UnprovenRelease(
            "A judged call's refund moves only against the receipt signed for it in the same "
            "transaction; nothing was moved."
        )
    held = holds.get(tx, call_id)
    if held is None or not any(
        holds.move(
            tx, call_id, from_state=state, to_state=holds.REFUNDED, at=at, end_receipt_id=receipt_id
        )
        for state in (holds.HELD, holds.REPORTED)
    ):
        return 0
    _transfer(
        tx,
        [Transfer(provider_hold_account(provider), wallet_account(payer), held.amount, "refund")],
        task_id=None,
        at=at,
        receipt_id=receipt_id,
    )
    return held.amount
