"""The receipt log: every signed receipt the service issues, on a few hash-chained lanes.

The log is a small fixed set of lanes (``chain_lanes``: one head row each; how many is the
store's setting, :attr:`adjudge.store.Store.lanes` — one on SQLite, where writes are serial
anyway). Each receipt names its lane, its sequence on the lane and the digest of the lane's
receipt before it (:mod:`adjudge.receipts.checkpoints`). A transaction chains its receipts as it
commits on a lane no other transaction holds — it takes any free one, and waits for one only
when all are busy — so writers on several processes do not queue behind each other, and no lane
ever forks. A checkpoint receipt names every lane's head (:func:`checkpoint`). Nothing here
edits or deletes a receipt.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, or_, select, update

from adjudge.errors import StorageError
from adjudge.receipts.checkpoints import NamedHead
from adjudge.receipts.issuer import Place
from adjudge.store import ids
from adjudge.store import schema as s
from adjudge.store.transaction import Read, Transaction

#: ``issue(place)``: the receipt to append at ``place`` (its lane, and the lane's head: id and
#: sequence from 0, None for the lane's first). It must carry its own id as ``digest``.
Issue = Callable[[Place], Mapping[str, Any]]
#: ``issue(place, heads)``: a checkpoint at ``place`` naming ``heads`` (every lane's).
IssueCheckpoint = Callable[[Place, Sequence[NamedHead]], Mapping[str, Any]]


@dataclass(frozen=True)
class StoredReceipt:
    """A receipt at its place on the log: ``seq`` from 1 on its ``lane``; ``position`` from 1
    in the order the log was written (a receipt's position is above those of every receipt
    committed before its transaction began)."""

    id: str
    seq: int
    task_id: str | None
    digest: str
    previous: str | None
    body: Mapping[str, Any]
    at: datetime
    lane: int = 0
    position: int = 0


@dataclass(frozen=True)
class PendingReceipt:
    """A receipt appended in a transaction still running: its id is known at once, so the
    ledger can move money against it and records can name it; its place on the log, and so
    its signed bytes, are given when the transaction's receipts are flushed (:func:`flush`)."""

    id: str


def append(tx: Transaction, issue: Issue, *, task_id: str | None, at: datetime) -> PendingReceipt:
    """Append the receipt ``issue(place)`` will return to the log.

    Its id joins :attr:`Transaction.appended` at once, which is what lets the ledger release
    money against it; it is signed onto a lane when the transaction flushes its receipts,
    which the store does just before it commits (:func:`flush`). So a lane's head row is
    locked for the last few statements of a transaction only, not from its first receipt to
    its commit.
    """
    pending = PendingReceipt("rcpt_" + ids.ordered_hex())
    tx.receipts_due.append((pending.id, issue, task_id, at))
    tx.appended.add(pending.id)
    return pending


def flush(tx: Transaction) -> list[StoredReceipt]:
    """Sign the transaction's pending receipts onto its lane, in the order they were appended:
    take a lane (:func:`_take_lane`), chain each after the one before. The lane's new head is
    kept by the transaction (its row stays locked by it) and written once, as it commits
    (:func:`commit`). A no-op without pending receipts."""
    if not tx.receipts_due:
        return []
    due = list(tx.receipts_due)
    tx.receipts_due.clear()
    return _write(tx, _take_lane(tx), due)


def commit(tx: Transaction) -> None:
    """As the transaction commits: :func:`flush` what is pending, then write its lane's head
    once. A group commit flushes each unit's receipts before the next unit begins, and wrote
    the head each time (a statement a unit); no other transaction reads the row while this
    one holds it, and this one reads its own head from memory (``Transaction.lane_head``,
    taken back to a savepoint's with the receipts after it)."""
    flush(tx)
    head = tx.lane_head
    if head is not None:
        tx.later(_SET_LANE, {"l_id": head["id"], "h_seq": head["seq"], "h_digest": head["digest"]})


def checkpoint(tx: Transaction, issue: IssueCheckpoint, *, at: datetime) -> StoredReceipt:
    """Append a checkpoint: a receipt naming the head of every lane as committed now (its own
    lane's: the receipt before it), so cutting any lane short shows against it."""
    flush(tx)
    lane = _take_lane(tx)
    heads: list[NamedHead] = []
    for found in tx.rows(_LANES, {}):
        row = lane if found["id"] == lane["id"] else found
        seq, digest = int(row["seq"]), row["digest"]
        heads.append((int(row["id"]), digest, seq - 1 if digest is not None else None))
    receipt_id = "rcpt_" + ids.ordered_hex()
    tx.appended.add(receipt_id)
    (made,) = _write(tx, lane, [(receipt_id, lambda place: issue(place, heads), None, at)])
    return made


def lane(tx: Transaction) -> int:
    """The lane this transaction chains on: the one it took, else one taken now (locked until
    it commits). What only this lane's holder may write is written under it (held_days)."""
    if tx.lane is None:
        _take_lane(tx)
    assert tx.lane is not None
    return tx.lane


def _take_lane(tx: Transaction) -> dict[str, Any]:
    """The head row of the lane this transaction chains on, locked: the one it took already,
    else any free lane, else (all busy) one of them, waited for."""
    if tx.lane is not None:
        if tx.lane_head is not None:  # written by this transaction, and still locked by it
            return tx.lane_head
        # Locked again: a savepoint rolled back may have released it.
        return tx.rows(_LANE_FOR_UPDATE, {"l_id": tx.lane})[0]
    rows = tx.rows(_FREE_LANE, {"l_count": tx.lanes}) if tx.lanes > 1 else []
    if not rows:
        rows = tx.rows(_LANE_FOR_UPDATE, {"l_id": random.randrange(tx.lanes)})
    if not rows:  # a lane the setting names but the database has not made: lane 0 exists
        rows = tx.rows(_LANE_FOR_UPDATE, {"l_id": 0})
    tx.lane = int(rows[0]["id"])
    return rows[0]


def _write(
    tx: Transaction, head: Mapping[str, Any], due: list[tuple[str, Issue, str | None, datetime]]
) -> list[StoredReceipt]:
    lane, seq, head_digest = int(head["id"]), int(head["seq"]), head["digest"]
    made = []
    rows = []
    for receipt_id, issue, task_id, at in due:
        place = Place(lane, (head_digest, seq - 1) if head_digest is not None else None)
        body = dict(issue(place))
        digest = body.get("digest")
        if not isinstance(digest, str):
            raise StorageError("The receipt issuer returned a receipt without a digest.")
        seq += 1
        row = {
            "id": receipt_id,
            "lane": lane,
            "seq": seq,
            "task_id": task_id,
            "digest": digest,
            "previous": head_digest,
            "body": body,
            "at": at,
        }
        if tx.sqlite:  # one lane, one writer: the log's order is the lane's
            row["position"] = seq
        rows.append(row)
        made.append(StoredReceipt(receipt_id, seq, task_id, digest, head_digest, body, at, lane))
        head_digest = digest
    tx.later_many(_INSERT_RECEIPT, rows)  # its result unread: sent with the next round trip
    tx.lane_head = {"id": lane, "seq": seq, "digest": head_digest}
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


def on_log(tx: Transaction, receipt_ids: Iterable[str]) -> set[str]:
    """Which of ``receipt_ids`` are on the log (one read a 500 of them)."""
    wanted = set(receipt_ids)
    if wanted & tx.appended:
        flush(tx)
    found: set[str] = set()
    listed = sorted(wanted)
    for start in range(0, len(listed), _IDS_AT_ONCE):
        chunk = listed[start : start + _IDS_AT_ONCE]
        found.update(str(r) for r in tx.conn.execute(_ON_LOG, {"ids": chunk}).scalars())
    return found


#: The most receipt ids :func:`on_log` names in one statement.
_IDS_AT_ONCE = 500
_ON_LOG = select(s.receipts.c.id).where(s.receipts.c.id.in_(bindparam("ids", expanding=True)))


def id_of_digest(tx: Transaction, digest: str) -> str | None:
    """The id of the receipt with this digest (the id a signed statement names), or None."""
    flush(tx)
    q = select(s.receipts.c.id).where(s.receipts.c.digest == digest)
    value = tx.conn.execute(q).scalar_one_or_none()
    return None if value is None else str(value)


def receipts(tx: Transaction, task_id: str) -> list[StoredReceipt]:
    """A task's receipts in the order they were written (this transaction's pending ones
    signed first)."""
    flush(tx)
    return [_receipt(r._mapping) for r in tx.conn.execute(_RECEIPTS, {"k_task": task_id})]


def receipt_ids(tx: Transaction, task_id: str) -> list[str]:
    """The ids of a task's receipts in the order they were written (without reading their
    bodies); the ones this transaction appended come last, without taking a lane."""
    stored = [r["id"] for r in tx.rows(_RECEIPT_IDS, {"k_task": task_id})]
    return stored + [due[0] for due in tx.receipts_due if due[2] == task_id]


def receipt_ids_read(task_id: str) -> Read:
    """What :func:`receipt_ids` reads (to read it ahead with others: ``Transaction.ahead``)."""
    return _RECEIPT_IDS, {"k_task": task_id}


@dataclass(frozen=True)
class LaneHead:
    """One lane: how many receipts it holds, and the digest of its last (None when empty)."""

    lane: int
    count: int
    digest: str | None


def lanes(tx: Transaction) -> list[LaneHead]:
    """Every lane's head, by lane."""
    flush(tx)
    return [LaneHead(int(r["id"]), int(r["seq"]), r["digest"]) for r in tx.rows(_LANES, {})]


def head(tx: Transaction) -> tuple[int, str | None]:
    """The log's length, and the digest of its last receipt when one lane holds them all (None
    when it is empty, or several lanes hold receipts: each has its own head)."""
    found = lanes(tx)
    used = [lane for lane in found if lane.count]
    return sum(lane.count for lane in found), used[0].digest if len(used) == 1 else None


@dataclass(frozen=True)
class Cut:
    """A log cut at a checkpoint: the last receipt (seq, from 1) of each lane it holds, and
    the checkpoint's position, above every one of them."""

    heads: Mapping[int, int]
    position: int


def chain(
    tx: Transaction,
    *,
    after: int = 0,
    limit: int | None = None,
    through: Cut | None = None,
) -> list[StoredReceipt]:
    """Receipts in the order the log was written, from position ``after + 1`` (every one when
    ``limit`` is None); with ``through``, a log cut at a checkpoint: only each lane's receipts
    up to the one it names (none of a lane it does not name).

    A cut's page walks the positions from ``after`` to the checkpoint's, the lanes' bounds
    checked on each row (``+ 0``: not an index SQLite may take instead): every receipt of the
    cut sits below the checkpoint, as each committed before the checkpoint was written. With
    the bounds alone, SQLite read each lane's receipts from its first and sorted them, for
    every page (an export of the log was quadratic in it), and PostgreSQL walked on past the
    checkpoint to the log's end."""
    flush(tx)
    c = s.receipts.c
    q = select(s.receipts).where(c.position > after).order_by(c.position)
    if through is not None:
        heads = [(c.lane + 0 == n) & (c.seq + 0 <= k) for n, k in through.heads.items()]
        q = q.where(c.position <= through.position, or_(False, *heads))
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
        lane=int(m["lane"]),
        position=int(m["position"]),
    )


_RECEIPTS = (
    select(s.receipts)
    .where(s.receipts.c.task_id == bindparam("k_task"))
    .order_by(s.receipts.c.position)
)
_RECEIPT_IDS = (
    select(s.receipts.c.id)
    .where(s.receipts.c.task_id == bindparam("k_task"))
    .order_by(s.receipts.c.position)
)
_LANES = select(s.chain_lanes).order_by(s.chain_lanes.c.id)
_LANE_FOR_UPDATE = (
    select(s.chain_lanes).where(s.chain_lanes.c.id == bindparam("l_id")).with_for_update()
)
#: A lane no other transaction holds (PostgreSQL; SQLite has one lane, and one writer).
_FREE_LANE = (
    select(s.chain_lanes)
    .where(s.chain_lanes.c.id < bindparam("l_count"))
    .order_by(s.chain_lanes.c.id)
    .limit(1)
    .with_for_update(skip_locked=True)
)
_SET_LANE = (
    update(s.chain_lanes)
    .where(s.chain_lanes.c.id == bindparam("l_id"))
    .values(seq=bindparam("h_seq"), digest=bindparam("h_digest"))
)
_INSERT_RECEIPT = insert(s.receipts)
