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


def append(tx: Transaction, issue: Issue, *, task_id: str | None, at: datetime) -> StoredReceipt:
    """Append the receipt ``issue(previous head)`` returns to the one hash chain.

    The head row is locked for the rest of the transaction. The new receipt's id joins
    :attr:`Transaction.appended`, which is what lets the ledger release money against it.
    """
    head = tx.rows(_HEAD_FOR_UPDATE, {})[0]
    seq, head_digest = int(head["seq"]), head["digest"]
    previous = (head_digest, seq - 1) if head_digest is not None else None
    body = dict(issue(previous))
    digest = body.get("digest")
    if not isinstance(digest, str):
        raise StorageError("The receipt issuer returned a receipt without a digest.")
    receipt = StoredReceipt(
        id="rcpt_" + uuid.uuid4().hex,
        seq=seq + 1,
        task_id=task_id,
        digest=digest,
        previous=head_digest,
        body=body,
        at=at,
    )
    tx.run(
        _INSERT_RECEIPT,
        {
            "id": receipt.id,
            "seq": receipt.seq,
            "task_id": task_id,
            "digest": digest,
            "previous": head_digest,
            "body": body,
            "at": at,
        },
    )
    tx.run(_SET_HEAD, {"h_seq": receipt.seq, "h_digest": digest})
    tx.appended.add(receipt.id)
    return receipt


def receipt(tx: Transaction, receipt_id: str) -> StoredReceipt | None:
    """One receipt, or None."""
    row = tx.conn.execute(select(s.receipts).where(s.receipts.c.id == receipt_id)).first()
    return _receipt(row._mapping) if row else None


def id_of_digest(tx: Transaction, digest: str) -> str | None:
    """The id of the receipt with this digest (the id a signed statement names), or None."""
    q = select(s.receipts.c.id).where(s.receipts.c.digest == digest)
    value = tx.conn.execute(q).scalar_one_or_none()
    return None if value is None else str(value)


def receipts(tx: Transaction, task_id: str) -> list[StoredReceipt]:
    """A task's receipts in chain order."""
    return [_receipt(r._mapping) for r in tx.conn.execute(_RECEIPTS, {"k_task": task_id})]


def receipt_ids(tx: Transaction, task_id: str) -> list[str]:
    """The ids of a task's receipts in chain order (without reading their bodies)."""
    return [r["id"] for r in tx.rows(_RECEIPT_IDS, {"k_task": task_id})]


def head(tx: Transaction) -> tuple[int, str | None]:
    """The chain's length and the digest of its last receipt (None when empty)."""
    row = tx.conn.execute(select(s.chain_head).where(s.chain_head.c.id == 1)).one()
    return int(row.seq), row.digest


def chain(tx: Transaction, *, after: int = 0, limit: int | None = None) -> list[StoredReceipt]:
    """Receipts in chain order from sequence ``after + 1`` (every one when ``limit`` is None)."""
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
