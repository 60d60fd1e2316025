"""An account's extra API keys, with spending limits, and what each spent today.

An account's own key (``accounts.key_hash``) is its owner's. An owner may make more keys for the
agents and scripts it runs, each optionally limited per call and per UTC day; such a key makes
paid calls and does the rest of its account's work, but cannot manage keys or fund tasks
(:mod:`adjudge.app.accounts`). Keys are kept as digests; a revoked key stays on record.

What a key spent on a day is one row, changed by one conditional upsert in the transaction
that reserves a call's price: two calls racing the last of a day's allowance cannot both pass,
and the figure is never recounted from the calls.

An account's live keys are at most a few dozen, however many it made and revoked over the
years: they are listed whole, and the revoked ones a page at a time, newest revoked first, each
a range of one index (account, revocation time, id), so neither listing nor the count of live
keys reads the keys revoked before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    String,
    Table,
    and_,
    bindparam,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.store import schema as s
from adjudge.store.pages import newest_first
from adjudge.store.transaction import Transaction

api_keys = Table(
    "api_keys",
    s.metadata,
    Column("id", String(40), primary_key=True),
    Column("account_id", String(64), ForeignKey("accounts.id"), nullable=False),
    Column("key_hash", String(71), nullable=False, unique=True),  # sha256:<hex> of the key
    Column("label", String(100), nullable=False),
    Column("max_per_call_minor", BigInteger, nullable=True),  # None: no limit
    Column("max_per_day_minor", BigInteger, nullable=True),
    Column("created_at", s.UTCDateTime, nullable=False),
    Column("revoked_at", s.UTCDateTime, nullable=True),
)
# An account's live keys (revoked_at null) are one range of it, its revoked ones the rest, newest
# revoked first: each listing and the live count read what they show (revision 0044).
Index(
    "ix_api_keys_account_revoked",
    api_keys.c.account_id,
    api_keys.c.revoked_at.desc(),
    api_keys.c.id,
)

key_spend = Table(
    "key_spend",
    s.metadata,
    Column("key_id", String(40), primary_key=True),
    Column("day", String(10), primary_key=True),  # the UTC date, YYYY-MM-DD
    Column("spent", BigInteger, nullable=False),
)


@dataclass(frozen=True)
class KeyGrant:
    """One of an account's extra keys: its id, label and limits (None: no limit)."""

    id: str
    account_id: str
    label: str
    max_per_call: int | None
    max_per_day: int | None
    created_at: datetime
    revoked_at: datetime | None = None


def add(tx: Transaction, grant: KeyGrant, key_hash: str) -> None:
    """Store a new key (its digest only)."""
    tx.conn.execute(
        insert(api_keys).values(
            id=grant.id,
            account_id=grant.account_id,
            key_hash=key_hash,
            label=grant.label,
            max_per_call_minor=grant.max_per_call,
            max_per_day_minor=grant.max_per_day,
            created_at=grant.created_at,
        )
    )
    made = s.accounts.c.keys_made
    tx.conn.execute(
        update(s.accounts).where(s.accounts.c.id == grant.account_id).values(keys_made=made + 1)
    )


def by_hash(tx: Transaction, key_hash: str) -> KeyGrant | None:
    """The live (not revoked) key with this digest, or None."""
    rows = tx.rows(_BY_HASH, {"k_hash": key_hash})
    return _grant(rows[0]) if rows else None


def get(tx: Transaction, key_id: str) -> KeyGrant | None:
    """A key by id (revoked ones too), or None."""
    rows = tx.rows(_BY_ID, {"k_id": key_id})
    return _grant(rows[0]) if rows else None


def live(tx: Transaction, account_id: str) -> list[KeyGrant]:
    """An account's live keys (at most ``MAX_KEYS``), oldest first."""
    k = api_keys.c
    q = select(api_keys).where(k.account_id == account_id, k.revoked_at.is_(None))
    return [_grant(r._mapping) for r in tx.conn.execute(q.order_by(k.created_at, k.id))]


def revoked(
    tx: Transaction, account_id: str, *, cursor: str | None, limit: int
) -> tuple[list[KeyGrant], str | None]:
    """A page of an account's revoked keys, newest revoked first, and the next page's cursor."""
    k = api_keys.c
    q = select(api_keys).where(k.account_id == account_id, k.revoked_at.is_not(None))
    rows, more = newest_first(tx, q, k.revoked_at, k.id, cursor, limit)
    return [_grant(r._mapping) for r in rows], more


def set_limits(
    tx: Transaction, key_id: str, *, max_per_call: int | None, max_per_day: int | None
) -> None:
    """Replace a key's limits."""
    tx.conn.execute(
        update(api_keys)
        .where(api_keys.c.id == key_id)
        .values(max_per_call_minor=max_per_call, max_per_day_minor=max_per_day)
    )


def revoke(tx: Transaction, key_id: str, at: datetime) -> None:
    """End a key: it authenticates nothing from now on."""
    k = api_keys.c
    tx.conn.execute(
        update(api_keys).where(and_(k.id == key_id, k.revoked_at.is_(None))).values(revoked_at=at)
    )


def spent(tx: Transaction, key_id: str, day: str) -> int:
    """What a key spent on a UTC day."""
    rows = tx.rows(_SPENT, {"k_key": key_id, "k_day": day})
    return int(rows[0]["spent"]) if rows else 0


def spent_by(tx: Transaction, key_ids: Sequence[str], day: str) -> dict[str, int]:
    """What each of ``key_ids`` spent on a UTC day, in one read (a key that spent nothing has
    no row: 0)."""
    if not key_ids:
        return {}
    k = key_spend.c
    q = select(k.key_id, k.spent).where(k.key_id.in_(list(key_ids)), k.day == day)
    found = {r.key_id: int(r.spent) for r in tx.conn.execute(q)}
    return {key: found.get(key, 0) for key in key_ids}


def made_count(tx: Transaction, account_id: str) -> int:
    """How many keys an account made, revoked ones too (kept on its row as each is made)."""
    q = select(s.accounts.c.keys_made).where(s.accounts.c.id == account_id)
    return int(tx.conn.execute(q).scalar() or 0)


def live_count(tx: Transaction, account_id: str) -> int:
    """How many of an account's keys are not revoked (counted by the database, not listed)."""
    k = api_keys.c
    q = select(func.count()).where(k.account_id == account_id, k.revoked_at.is_(None))
    return int(tx.conn.execute(q).scalar_one())


def spend(tx: Transaction, key_id: str, day: str, amount: int, limit: int | None) -> bool:
    """Count ``amount`` against a key's day, unless that would pass ``limit``: False, and
    nothing written, when it would (one statement, so racing calls cannot both pass)."""
    if limit is not None and amount > limit:
        return False
    params = {"key_id": key_id, "day": day, "spent": amount, "k_limit": limit}
    stmt = _SPEND[tx.dialect] if limit is not None else _ADD[tx.dialect]
    if limit is None:
        params.pop("k_limit")
    return bool(tx.run(stmt, params).rowcount == 1)


def give_back(tx: Transaction, key_id: str, day: str, amount: int) -> None:
    """Return a refunded call's amount to its key's day."""
    tx.run(_GIVE_BACK, {"k_key": key_id, "k_day": day, "k_amount": amount})


def _grant(m: Any) -> KeyGrant:
    def money(value: Any) -> int | None:
        return None if value is None else int(value)

    return KeyGrant(
        m["id"],
        m["account_id"],
        m["label"],
        money(m["max_per_call_minor"]),
        money(m["max_per_day_minor"]),
        m["created_at"],
        m["revoked_at"],
    )


def _upsert(dialect: str, limited: bool) -> Any:
    module: Any = postgresql if dialect == "postgresql" else sqlite
    stmt = module.insert(key_spend).values(
        key_id=bindparam("key_id"), day=bindparam("day"), spent=bindparam("spent")
    )
    total = key_spend.c.spent + stmt.excluded.spent
    return stmt.on_conflict_do_update(
        index_elements=[key_spend.c.key_id, key_spend.c.day],
        set_={"spent": total},
        where=(total <= bindparam("k_limit")) if limited else None,
    )


_BY_HASH = select(api_keys).where(
    and_(api_keys.c.key_hash == bindparam("k_hash"), api_keys.c.revoked_at.is_(None))
)
_BY_ID = select(api_keys).where(api_keys.c.id == bindparam("k_id"))
_SPENT = select(key_spend.c.spent).where(
    and_(key_spend.c.key_id == bindparam("k_key"), key_spend.c.day == bindparam("k_day"))
)
_SPEND = {d: _upsert(d, True) for d in ("sqlite", "postgresql")}
_ADD = {d: _upsert(d, False) for d in ("sqlite", "postgresql")}
_GIVE_BACK = (
    update(key_spend)
    .where(and_(key_spend.c.key_id == bindparam("k_key"), key_spend.c.day == bindparam("k_day")))
    .values(spent=key_spend.c.spent - bindparam("k_amount"))
)
