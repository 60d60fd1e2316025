"""The receipt log: one append-only hash chain of every signed receipt the service issues.

Each receipt names the digest of the one before it; appends queue on the locked head row, so
concurrent appends (a task's verdict, a paid call) never fork the chain. Nothing here edits or
deletes a receipt.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from adjudge.errors import StorageError
from adjudge.store import schema as s
from adjudge.store.transaction import Transaction

#: ``issue(previous)``: the receipt to append after the head (its id and sequence from 0, None
#: for the first). It must carry its own id as ``digest``.
Issue = Callable[[tuple[str, int] | None], Mapping[str, Any]]


@dataclass(frozen=True)
class StoredReceipt:
    """A receipt at its place in the hash chain (``seq`` from 1)."""

    id: str
    seq: int
    task_id: str | None
    digest: str
    previous: str | None
    body: Mapping[str, Any]
    at: datetime


@dataclass(frozen=True)
class PendingReceipt:
    """A receipt appended in a transaction still running: its id is known at once, so the
    ledger can move money against it and records can name it; its place on the chain, and so
    its signed bytes, are given when the transaction's receipts are flushed (:func:`flush`)."""

    id: str


def append(tx: Transaction, issue: Issue, *, task_id: str | None, at: datetime) -> PendingReceipt:
    """Append the receipt ``issue(previous head)`` will return to the one hash chain.

    Its id joins :attr:`Transaction.appended` at once, which is what lets the ledger release
    money against it; it is signed onto the chain when the transaction flushes its receipts,
    which the store does just before it commits (:func:`flush`). So the chain's head row — the
    one row every writer of a receipt locks — is locked for the last few statements of a
    transaction only, not from its first receipt to its commit.
    """
    pending = PendingReceipt("rcpt_" + uuid.uuid4().hex)
    tx.receipts_due.append((pending.id, issue, task_id, at))
    tx.appended.add(pending.id)
    return pending


def flush(tx: Transaction) -> list[StoredReceipt]:
    """Sign the transaction's pending receipts onto the chain, in the order they were appended:
    lock the head, chain each after the one before, move the head once. A no-op without
    pending receipts."""
    if not tx.receipts_due:
        return []
    head = tx.rows(_HEAD_FOR_UPDATE, {})[0]
    seq, head_digest = int(head["seq"]), head["digest"]
    made = []
    rows = []
    for receipt_id, issue, task_id, at in tx.receipts_due:
        previous = (head_digest, seq - 1) if head_digest is not None else None
        body = dict(issue(previous))
        digest = body.get("digest")
        if not isinstance(digest, str):
            raise StorageError("The receipt issuer returned a receipt without a digest.")
        seq += 1
        receipt = StoredReceipt(receipt_id, seq, task_id, digest, head_digest, body, at)
        rows.append(
            {
                "id": receipt_id,
                "seq": seq,
                "task_id": task_id,
                "digest": digest,
                "previous": head_digest,
                "body": body,
                "at": at,
            }
        )
        made.append(receipt)
        head_digest = digest
    tx.receipts_due.clear()
    tx.run_many(_INSERT_RECEIPT, rows)
    tx.run(_SET_HEAD, {"h_seq": seq, "h_digest": head_digest})
    for receipt in made:
        tx.flushed[receipt.id] = receipt
    return made


def signed(tx: Transaction, pending: PendingReceipt) -> StoredReceipt:
    """A receipt appended in this transaction, as signed onto the chain (flushing what is
    pending first): for the rare use case that must hand back the signed bytes themselves."""
    flush(tx)
    found = tx.flushed[pending.id]
    assert isinstance(found, StoredReceipt)
    return found


def receipt(tx: Transaction, receipt_id: str) -> StoredReceipt | None:
    """One receipt, or None (one appended in this transaction is signed first, so a read
    inside the transaction that wrote it sees it)."""
    if receipt_id in tx.appended:
        flush(tx)
    row = tx.conn.execute(select(s.receipts).where(s.receipts.c.id == receipt_id)).first()
    return _receipt(row._mapping) if row else None


def id_of_digest(tx: Transaction, digest: str) -> str | None:
    """The id of the receipt with this digest (the id a signed statement names), or None."""
    flush(tx)
    q = select(s.receipts.c.id).where(s.receipts.c.digest == digest)
    value = tx.conn.execute(q).scalar_one_or_none()
    return None if value is None else str(value)


def receipts(tx: Transaction, task_id: str) -> list[StoredReceipt]:
    """A task's receipts in chain order (this transaction's pending ones signed first)."""
    flush(tx)
    return [_receipt(r._mapping) for r in tx.conn.execute(_RECEIPTS, {"k_task": task_id})]


def receipt_ids(tx: Transaction, task_id: str) -> list[str]:
    """The ids of a task's receipts in chain order (without reading their bodies); the ones
    this transaction appended come last, as they will on the chain, without locking the head."""
    stored = [r["id"] for r in tx.rows(_RECEIPT_IDS, {"k_task": task_id})]
    return stored + [due[0] for due in tx.receipts_due if due[2] == task_id]


def head(tx: Transaction) -> tuple[int, str | None]:
    """The chain's length and the digest of its last receipt (None when empty)."""
    flush(tx)
    row = tx.conn.execute(select(s.chain_head).where(s.chain_head.c.id == 1)).one()
    return int(row.seq), row.digest


def chain(tx: Transaction, *, after: int = 0, limit: int | None = None) -> list[StoredReceipt]:
    """Receipts in chain order from sequence ``after + 1`` (every one when ``limit`` is None)."""
    flush(tx)
    q = select(s.receipts).where(s.receipts.c.seq > after).order_by(s.receipts.c.seq)
    if limit is not None:
        q = q.limit(limit)
    return [_receipt(r._mapping) for r in tx.conn.execute(q)]


def _receipt(m: Any) -> StoredReceipt:
    return StoredReceipt(
        id=m["id"],
        seq=int(m["seq"]),
        task_id=m["task_id"],
        digest=m["digest"],
        previous=m["previous"],
        body=m["body"],
        at=m["at"],
    )


_RECEIPTS = (
    select(s.receipts).where(s.receipts.c.task_id == bindparam("k_task")).order_by(s.receipts.c.seq)
)
_RECEIPT_IDS = (
    select(s.receipts.c.id)
    .where(s.receipts.c.task_id == bindparam("k_task"))
    .order_by(s.receipts.c.seq)
)
_HEAD_FOR_UPDATE = select(s.chain_head).where(s.chain_head.c.id == 1).with_for_update()
_SET_HEAD = (
    update(s.chain_head)
    .where(s.chain_head.c.id == 1)
    .values(seq=bindparam("h_seq"), digest=bindparam("h_digest"))
)
_INSERT_RECEIPT = insert(s.receipts)
