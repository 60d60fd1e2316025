"""Paid calls whose meaning judges are asked after the answer: one row per sampled call.

A call whose policy says ``meaning.when: after_answer`` is answered and settled into its
provider's hold at once; this row, written in the call's own transaction, says its judgment is
``pending``. A worker judges it and, in the transaction of the superseding receipt, marks it
``judged`` with one conditional UPDATE (``WHERE state = 'pending'``): of two workers judging the
same row, only the first commits anything, so a call is never refunded twice. While a row is
pending its call's hold does not mature: both transactions mark the hold too
(``provider_holds.judgment_queued_at``), which keeps it out of the due order
(:func:`adjudge.store.holds.due`) without asking this table.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Index,
    Integer,
    String,
    Table,
    and_,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from adjudge.store import schema as s
from adjudge.store.holds import provider_holds
from adjudge.store.transaction import ConcurrentUpdate, Transaction

__all__ = [
    "JUDGED",
    "PENDING",
    "QueuedJudgment",
    "add",
    "add_key_judgment",
    "asked_of",
    "asks",
    "claim_pending",
    "get",
    "judged",
    "key_judgments",
    "pending",
    "queue",
]

PENDING = "pending"
JUDGED = "judged"

queue = Table(
    "meaning_queue",
    s.metadata,
    Column("call_id", String(64), primary_key=True),
    Column("provider", String(64), nullable=False),
    Column("policy_digest", String(71), nullable=False),
    Column("response_digest", String(71), nullable=False),
    Column("receipt_id", String(64), nullable=False),  # the call's first receipt
    Column("state", String(16), nullable=False),  # pending | judged
    Column("queued_at", s.UTCDateTime, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("judged_at", s.UTCDateTime, nullable=True),
    Column("outcome", String(16), nullable=True),  # the meaning row's final outcome
    Column("final_receipt_id", String(64), nullable=True),  # the superseding receipt
    # What the superseding receipt was derived from, for a replay bundle: {"record": the final
    # verification record, "judgments": every judge's judgment as read[, "payment": "none"
    # when the receipt moved no money, the call's charge having gone back before it]}.
    Column("verification", JSON, nullable=True),
    # A pass takes the least tried first, then the oldest (pending): it walks its batch.
    Index("ix_meaning_queue_pending", "state", "attempts", "queued_at"),
)


#: What a verifier key signed about a queued call: one row per call and key, never replaced.
key_judgments_table = Table(
    "meaning_key_judgments",
    s.metadata,
    Column("call_id", String(64), primary_key=True),
    Column("judge", String(80), primary_key=True),  # key:<fingerprint>
    Column("conflict", Boolean, nullable=False),
    Column("reason", String(2000), nullable=False),
    Column("citations", JSON, nullable=False),  # [{"pointer", "quote_sha256"}]
    Column("signature", String(200), nullable=False),
    Column("public_key", String(100), nullable=False),
    Column("at", s.UTCDateTime, nullable=False),
)


#: Who is still asked to sign a judgment of a pending call: one row per call and named key
#: (``key:<fingerprint>``), written as the call is queued and deleted as that key's judgment is
#: kept or the call is judged. A key owner's list reads its own rows by index (the oldest
#: first), however many calls other keys have pending.
asks = Table(
    "meaning_asks",
    s.metadata,
    Column("call_id", String(64), primary_key=True),
    Column("judge", String(80), primary_key=True),  # key:<fingerprint>
    Column("queued_at", s.UTCDateTime, nullable=False),
    Index("ix_meaning_asks_judge", "judge", "queued_at"),
)


@dataclass(frozen=True)
class QueuedJudgment:
    """One call's judgment after the answer: waiting, or given."""

    call_id: str
    provider: str
    policy_digest: str
    response_digest: str
    receipt_id: str
    state: str
    queued_at: datetime
    attempts: int
    judged_at: datetime | None
    outcome: str | None
    final_receipt_id: str | None
    verification: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire shape a call's view shows as its meaning check's state."""
        return {
            "state": self.state,
            "queued_at": self.queued_at.isoformat(),
            "judged_at": None if self.judged_at is None else self.judged_at.isoformat(),
            "outcome": self.outcome,
            "receipt_id": self.final_receipt_id,
        }


def add(
    tx: Transaction,
    *,
    call_id: str,
    provider: str,
    policy_digest: str,
    response_digest: str,
    receipt_id: str,
    at: datetime,
    key_judges: Sequence[str] = (),
) -> None:
    """Queue a call's judgment (in the call's own transaction), asking each of ``key_judges``
    (the policy's named verifier keys) for theirs."""
    if key_judges:
        rows = [{"call_id": call_id, "judge": j, "queued_at": at} for j in sorted(set(key_judges))]
        tx.conn.execute(insert(asks), rows)
    tx.conn.execute(
        insert(queue).values(
            call_id=call_id,
            provider=provider,
            policy_digest=policy_digest,
            response_digest=response_digest,
            receipt_id=receipt_id,
            state=PENDING,
            queued_at=at,
            attempts=0,
        )
    )
    _hold_waits(tx, call_id, at)  # the call's hold, settled earlier in this transaction


def get(tx: Transaction, call_id: str) -> QueuedJudgment | None:
    """A call's queued judgment, or None (its meaning check was not judged after the answer)."""
    row = tx.conn.execute(select(queue).where(queue.c.call_id == call_id)).first()
    return None if row is None else _row(row._mapping)


def pending(tx: Transaction, *, limit: int) -> list[QueuedJudgment]:
    """The oldest pending judgments, the least tried first (at most ``limit``)."""
    q = (
        select(queue)
        .where(queue.c.state == PENDING)
        .order_by(queue.c.attempts, queue.c.queued_at)
        .limit(limit)
    )
    return [_row(r._mapping) for r in tx.conn.execute(q)]


def tried(tx: Transaction, call_id: str) -> None:
    """Count an attempt that gave no final judgment (so the next pass tries others first)."""
    tx.conn.execute(
        update(queue)
        .where(and_(queue.c.call_id == call_id, queue.c.state == PENDING))
        .values(attempts=queue.c.attempts + 1)
    )


def claim_pending(tx: Transaction, call_id: str) -> bool:
    """Take a pending judgment's row for this transaction, which keeps a key's judgment of it;
    False when it was judged meanwhile. The worker marking it judged takes the same row, so of
    the two the later reads what the earlier committed: a key's judgment is either read by the
    judgment or refused as late, never kept and passed over."""
    q = queue.c
    done = tx.conn.execute(
        update(queue)
        .where(and_(q.call_id == call_id, q.state == PENDING))
        .values(attempts=q.attempts)
    )
    return bool(done.rowcount == 1)


def judged(
    tx: Transaction,
    call_id: str,
    *,
    outcome: str,
    receipt_id: str,
    at: datetime,
    verification: Mapping[str, Any] | None = None,
) -> bool:
    """Mark a pending judgment given, with what its receipt was derived from; False (nothing
    written) when another worker did first."""
    done = tx.conn.execute(
        update(queue)
        .where(and_(queue.c.call_id == call_id, queue.c.state == PENDING))
        .values(
            state=JUDGED,
            outcome=outcome,
            final_receipt_id=receipt_id,
            judged_at=at,
            verification=None if verification is None else dict(verification),
        )
    )
    if done.rowcount != 1:
        return False
    tx.conn.execute(delete(asks).where(asks.c.call_id == call_id))  # nobody is asked any more
    _hold_waits(tx, call_id, None)
    return True


def _hold_waits(tx: Transaction, call_id: str, since: datetime | None) -> None:
    """Mark the call's hold as waiting for its judgment since ``since``, or for it no more (a
    call refunded at its answer has no hold: nothing to mark)."""
    h = provider_holds.c
    tx.conn.execute(
        update(provider_holds).where(h.call_id == call_id).values(judgment_queued_at=since)
    )


def _row(m: Any) -> QueuedJudgment:
    return QueuedJudgment(
        m["call_id"],
        m["provider"],
        m["policy_digest"],
        m["response_digest"],
        m["receipt_id"],
        m["state"],
        m["queued_at"],
        int(m["attempts"]),
        m["judged_at"],
        m["outcome"],
        m["final_receipt_id"],
        m.get("verification"),
    )


def add_key_judgment(
    tx: Transaction,
    *,
    call_id: str,
    judge: str,
    conflict: bool,
    reason: str,
    citations: list[dict[str, str]],
    signature: str,
    public_key: str,
    at: datetime,
) -> bool:
    """Keep a key's signed judgment of a call; False (nothing written) when that key judged the
    call already (two racing: one wins, the other is retried by the unit of work and finds it)."""
    t = key_judgments_table
    seen = select(t.c.judge).where(and_(t.c.call_id == call_id, t.c.judge == judge))
    if tx.conn.execute(seen).first() is not None:
        return False
    try:
        tx.conn.execute(
            insert(key_judgments_table).values(
                call_id=call_id,
                judge=judge,
                conflict=conflict,
                reason=reason,
                citations=citations,
                signature=signature,
                public_key=public_key,
                at=at,
            )
        )
    except IntegrityError as exc:
        raise ConcurrentUpdate("The key is judging this call at the same time.") from exc
    tx.conn.execute(delete(asks).where(and_(asks.c.call_id == call_id, asks.c.judge == judge)))
    return True


def key_judgments(tx: Transaction, call_id: str) -> list[dict[str, Any]]:
    """The key judges' signed judgments of a call, as stored."""
    t = key_judgments_table
    rows = tx.conn.execute(select(t).where(t.c.call_id == call_id).order_by(t.c.judge))
    return [dict(r._mapping) for r in rows]


def asked_of(
    tx: Transaction, judges: Collection[str], *, limit: int
) -> list[tuple[QueuedJudgment, str]]:
    """The pending judgments ``judges`` are still asked for, oldest first (at most ``limit``),
    each with the key asked: each key's oldest page read by its index, merged, so the cost is
    the pages', not the queue's (with the keys in one ``IN``, a planner read every pending
    judgment of every provider to find them)."""
    a = asks.c
    found = []
    for judge in sorted(judges):
        q = (
            select(queue, a.judge.label("asked"))
            .join(asks, a.call_id == queue.c.call_id)
            .where(a.judge == judge, queue.c.state == PENDING)
            .order_by(a.queued_at, a.call_id)
            .limit(limit)
        )
        found += [(_row(r._mapping), str(r.asked)) for r in tx.conn.execute(q)]
    found.sort(key=lambda pair: (pair[0].queued_at, pair[0].call_id, pair[1]))
    return found[:limit]
