"""The double-entry ledger: balances, entries, and the one rule every release of money obeys.

A transfer is two legs that sum to zero. Money may leave a holding account (a task's escrow, a
paid call's reservation, a provider's hold) only against a receipt appended in the same
transaction (its id is in :attr:`Transaction.appended`), and each leg records that receipt: no
escrow is released without a signed record of the determination that released it, and a reader
can reconcile every such entry with its receipt.

One release has no new determination: a provider hold maturing once its call's report deadline
passed (``matured=True``). It names the receipt that settled the call, which must be on the log;
:func:`adjudge.app.settlement.mature` checks that the hold is that call's and is due.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.errors import InternalError, StateError
from adjudge.market import WORLD, Transfer
from adjudge.market.money import shown
from adjudge.store import receipt_log
from adjudge.store import schema as s
from adjudge.store.transaction import Transaction

#: Ledger accounts that hold money for a decision still to come: releasing from one needs a
#: receipt (task escrows, paid-call reservations).
HOLDING_PREFIXES = ("escrow:", "hold:", "held:")
#: A provider's hold: settled charges waiting out their report deadlines.
PROVIDER_HOLD_PREFIX = "held:"


class UnprovenRelease(InternalError):
    """Money was to leave a holding account without a receipt from the same transaction."""

    code = "UNPROVEN_RELEASE"


def transfer(
    tx: Transaction,
    transfers: Sequence[Transfer],
    *,
    task_id: str | None,
    at: datetime,
    receipt_id: str | None = None,
    matured: bool = False,
) -> None:
    """Apply transfers as double entries; ``INSUFFICIENT_FUNDS`` if a debit would overdraw.

    The debit is one conditional UPDATE, so two racing spends of one balance cannot both
    succeed; the credit is one upsert. Consecutive transfers out of one account (a payout
    and its fee) are debited together: the total either fits or the whole step is refused,
    as one at a time would be. Only the world account may go below zero. A transfer out of a
    holding account needs ``receipt_id`` to name a receipt appended in this transaction
    (:class:`UnprovenRelease` otherwise) — or, with ``matured``, only out of provider holds,
    a receipt already on the log (the one that settled the call whose hold matured).
    """
    if not transfers:
        return
    if any(t.debit.startswith(HOLDING_PREFIXES) for t in transfers) and not _proven(
        tx, transfers, receipt_id, matured
    ):
        raise UnprovenRelease(
            "Money leaves a holding account only against a receipt signed in the same "
            "transaction; nothing was moved."
        )
    upsert = _UPSERT[tx.dialect]
    legs: list[dict[str, Any]] = []
    for run in _runs(transfers):
        debit, total = run[0].debit, sum(t.amount for t in run)
        if debit == WORLD:
            tx.run(upsert, {"account": WORLD, "amount": 0})
            tx.run(_DEBIT_WORLD, {"acct": debit, "amt": total})
        elif tx.run(_DEBIT, {"acct": debit, "amt": total}).rowcount != 1:
            raise StateError(
                f"{debit} holds too little to move {shown(total)}.", code="INSUFFICIENT_FUNDS"
            )
        for t in run:
            tx.run(upsert, {"account": t.credit, "amount": t.amount})
            txn = uuid.uuid4().hex
            common = {
                "txn": txn,
                "task_id": task_id,
                "memo": t.memo,
                "receipt_id": receipt_id,
                "at": at,
            }
            legs.append({**common, "account": t.debit, "amount": -t.amount})
            legs.append({**common, "account": t.credit, "amount": t.amount})
    tx.run_many(_INSERT_ENTRIES, legs)


def _proven(
    tx: Transaction, transfers: Sequence[Transfer], receipt_id: str | None, matured: bool
) -> bool:
    """Whether ``receipt_id`` may release these transfers' holding debits."""
    if receipt_id is None:
        return False
    if receipt_id in tx.appended:
        return True
    return (
        matured
        and all(t.debit.startswith(PROVIDER_HOLD_PREFIX) for t in transfers)
        and receipt_log.receipt(tx, receipt_id) is not None
    )


def balance(tx: Transaction, account: str) -> int:
    """The balance of a ledger account (0 if never touched)."""
    q = select(s.balances.c.balance).where(s.balances.c.account == account)
    value = tx.conn.execute(q).scalar_one_or_none()
    return int(value or 0)


def balances(tx: Transaction) -> dict[str, int]:
    """Every ledger account's balance."""
    return {r.account: int(r.balance) for r in tx.conn.execute(select(s.balances))}


def total(tx: Transaction) -> tuple[int, int]:
    """The sum of all balances and the sum of all ledger entries: both 0 in a sound ledger."""
    bal = tx.conn.execute(select(func.coalesce(func.sum(s.balances.c.balance), 0))).scalar()
    ent = tx.conn.execute(select(func.coalesce(func.sum(s.ledger_entries.c.amount), 0))).scalar()
    return int(bal or 0), int(ent or 0)


def deposits(tx: Transaction) -> int:
    """All money that ever entered from outside: minus the world account's balance."""
    return -balance(tx, WORLD)


def entries(tx: Transaction, task_id: str) -> list[dict[str, Any]]:
    """The ledger entries of one task, oldest first."""
    return [
        {
            "txn": r["txn"],
            "account": r["account"],
            "amount": int(r["amount"]),
            "memo": r["memo"],
            "receipt_id": r["receipt_id"],
            "at": r["at"].isoformat(),
        }
        for r in tx.rows(_ENTRIES, {"k_task": task_id})
    ]


def releases(tx: Transaction) -> list[dict[str, Any]]:
    """Every leg debiting a holding account, with the receipt it names (for audits)."""
    e = s.ledger_entries
    q = select(e).where(e.c.amount < 0).order_by(e.c.id)
    return [
        dict(r._mapping) for r in tx.conn.execute(q) if str(r.account).startswith(HOLDING_PREFIXES)
    ]


def _runs(transfers: Sequence[Transfer]) -> list[list[Transfer]]:
    """Consecutive transfers out of one account, none of them back into it."""
    runs: list[list[Transfer]] = []
    for t in transfers:
        last = runs[-1] if runs else None
        if last and last[0].debit == t.debit and t.credit != t.debit != last[0].credit:
            last.append(t)
        else:
            runs.append([t])
    return runs


def _upsert(dialect: str) -> Any:
    """Add ``amount`` to an account's balance, creating the row at that amount if missing."""
    module: Any = postgresql if dialect == "postgresql" else sqlite
    stmt = module.insert(s.balances).values(
        account=bindparam("account"), balance=bindparam("amount")
    )
    return stmt.on_conflict_do_update(
        index_elements=[s.balances.c.account],
        set_={"balance": s.balances.c.balance + stmt.excluded.balance},
    )


_DEBIT = (
    update(s.balances)
    .where(s.balances.c.account == bindparam("acct"))
    .where(s.balances.c.balance >= bindparam("amt"))
    .values(balance=s.balances.c.balance - bindparam("amt"))
)
_DEBIT_WORLD = (
    update(s.balances)
    .where(s.balances.c.account == bindparam("acct"))
    .values(balance=s.balances.c.balance - bindparam("amt"))
)
_ENTRIES = (
    select(s.ledger_entries)
    .where(s.ledger_entries.c.task_id == bindparam("k_task"))
    .order_by(s.ledger_entries.c.id)
)
_INSERT_ENTRIES = insert(s.ledger_entries)
_UPSERT = {dialect: _upsert(dialect) for dialect in ("sqlite", "postgresql")}
