"""Idempotency records: the answer a state change gave, under the key its caller sent.

The key itself is stored only as its sha256: a stored answer can hold a secret sealed under the
key (a new account's API key), so the database alone must not hand out the key that opens it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, delete, insert, select, tuple_
from sqlalchemy.exc import IntegrityError

from adjudge.digests import sha256_digest
from adjudge.store import schema as s
from adjudge.store.transaction import ConcurrentUpdate, Transaction

#: The stored answer under a key, read on the hot path (built once: every keyed change reads it).
_RECALL = select(s.idempotency.c.fingerprint, s.idempotency.c.body).where(
    and_(
        s.idempotency.c.account_id == bindparam("k_account"),
        s.idempotency.c.key == bindparam("k_key"),
    )
)


def _hashed(key: str) -> str:
    return sha256_digest(key)


def recalled(tx: Transaction, account_id: str, key: str) -> tuple[str, Any] | None:
    """The fingerprint and answer stored under an idempotency key, or None."""
    rows = tx.rows(_RECALL, {"k_account": account_id, "k_key": _hashed(key)})
    return (rows[0]["fingerprint"], rows[0]["body"]) if rows else None


def remember(
    tx: Transaction, *, account_id: str, key: str, fingerprint: str, answer: Any, at: datetime
) -> None:
    """Store an answer under an idempotency key in the same transaction as its effects.

    A concurrent request that stored the same key first makes this raise
    :class:`ConcurrentUpdate`; the retry then finds and replays the stored answer.
    """
    try:
        tx.conn.execute(
            insert(s.idempotency).values(
                account_id=account_id,
                key=_hashed(key),
                fingerprint=fingerprint,
                status_code=0,
                body=answer,
                at=at,
            )
        )
    except IntegrityError as exc:
        raise ConcurrentUpdate("The same Idempotency-Key is in flight; try again.") from exc


def prune(tx: Transaction, before: datetime, limit: int) -> int:
    """Forget at most ``limit`` stored answers made before ``before``, oldest first (on the
    time's index); how many. A retry with a forgotten key is decided anew."""
    i = s.idempotency
    oldest = select(i.c.account_id, i.c.key).where(i.c.at < before).order_by(i.c.at).limit(limit)
    rows = [tuple(r) for r in tx.conn.execute(oldest)]
    if rows:
        tx.conn.execute(delete(i).where(tuple_(i.c.account_id, i.c.key).in_(rows)))
    return len(rows)
