"""Provider holds: a settled call's charge, kept until its report deadline passes.

Spec 003: "Settle means the call may be charged and proceed to payment collection; it does not
mean the provider already has the money." A settled call's charge moves from the call's
reservation into its provider's hold account (``held:<provider>``, one balance per provider, so
reading what a provider has held costs one row), and this table says which call each part of it
belongs to and when it matures. One row per settled call:

- ``held``: waiting for the call's report deadline (``matures_at``);
- ``reported``: its caller filed a report in time; it waits for the ruling, however long that
  takes (a dismissal puts it back to ``held``);
- ``released``: matured; the money is in the provider's wallet;
- ``refunded``: an upheld report gave it back to the caller.

Every change of state is one conditional UPDATE (``WHERE state = …``), so a report racing the
hold's maturity is decided by whichever commits first, never both. The due holds are read by
an index of the held holds that wait for nothing else (``ix_provider_holds_ripe``: no retry of a
failed release pending, no meaning judgment pending): the sweep's cost is the number of holds
that matured, not the history, nor how many wait for a retry or a judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    String,
    Table,
    and_,
    bindparam,
    case,
    func,
    insert,
    select,
    union_all,
    update,
)

from adjudge.store import day_counts
from adjudge.store import schema as s
from adjudge.store.retry_marks import RetryMarks
from adjudge.store.transaction import Transaction

HELD = "held"
REPORTED = "reported"
RELEASED = "released"
REFUNDED = "refunded"
_ENDED = (RELEASED, REFUNDED)
_HOUR = timedelta(hours=1)

provider_holds = Table(
    "provider_holds",
    s.metadata,
    Column("call_id", String(64), primary_key=True),
    Column("provider", String(64), nullable=False),
    Column("caller", String(64), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("receipt_id", String(64), nullable=False),  # the call's receipt, which settled it
    Column("matures_at", s.UTCDateTime, nullable=False),  # the call's report deadline
    Column("state", String(16), nullable=False),  # held | reported | released | refunded
    Column("ended_at", s.UTCDateTime, nullable=True),
    Column("end_receipt_id", String(64), nullable=True),  # an upheld report's ruling
    # The upkeep's release that failed on this hold: how many times in a row, and when it is
    # tried again. Until then the hold is out of the due order (:func:`due`), so a hold failing
    # on every pass never holds the holds due after it (revision 0057). Null: none failed.
    Column("release_failures", Integer, nullable=True),
    Column("retry_at", s.UTCDateTime, nullable=True),
    # When the call's meaning judgment was queued, while it is pending (revision 0060): the
    # hold waits for it, whatever its deadline. Kept by the judgment queue in the transactions
    # that queue and give it (adjudge.store.meaning_queue), so the due order need not ask it.
    Column("judgment_queued_at", s.UTCDateTime, nullable=True),
    Index("ix_provider_holds_due", "state", "matures_at"),
    Index("ix_provider_holds_provider", "provider", "state", "matures_at"),
)
# The due order (:func:`due`): only the holds that wait for no retry and no judgment. With every
# held hold in it, each pass walked past all that waited (1.6 µs each on SQLite, inside the
# write: 88 ms a pass with 50,000 calls waiting for their judges).
_RIPE = and_(provider_holds.c.retry_at.is_(None), provider_holds.c.judgment_queued_at.is_(None))
Index(
    "ix_provider_holds_ripe",
    provider_holds.c.state,
    provider_holds.c.matures_at,
    sqlite_where=_RIPE,
    postgresql_where=_RIPE,
)
# The holds waiting for a retry of their release (:func:`retries_due`): only those, never every
# hold that ever matured.
Index(
    "ix_provider_holds_retry_at",
    provider_holds.c.retry_at,
    sqlite_where=provider_holds.c.retry_at.is_not(None),
    postgresql_where=provider_holds.c.retry_at.is_not(None),
)


@dataclass(frozen=True)
class Hold:
    """One settled call's part of its provider's hold."""

    call_id: str
    provider: str
    caller: str
    amount: int
    receipt_id: str
    matures_at: datetime
    state: str
    ended_at: datetime | None
    end_receipt_id: str | None

    def to_dict(self) -> dict[str, Any]:
        """The hold's wire shape."""
        return {
            "state": self.state,
            "amount_minor": self.amount,
            "matures_at": self.matures_at.isoformat(),
            "ended_at": None if self.ended_at is None else self.ended_at.isoformat(),
            "receipt_id": self.receipt_id,
            "end_receipt_id": self.end_receipt_id,
        }


def add(
    tx: Transaction,
    *,
    call_id: str,
    provider: str,
    caller: str,
    amount: int,
    receipt_id: str,
    matures_at: datetime,
) -> None:
    """Record a settled call's charge as held until ``matures_at``."""
    tx.run(
        _INSERT,
        {
            "call_id": call_id,
            "provider": provider,
            "caller": caller,
            "amount": amount,
            "receipt_id": receipt_id,
            "matures_at": matures_at,
            "state": HELD,
        },
    )
    day_counts.note_hold(tx, matures_at, amount, 1)


def get(tx: Transaction, call_id: str) -> Hold | None:
    """A call's hold, or None (it settled without one, or was not settled)."""
    rows = tx.rows(_GET, {"k_call": call_id})
    return _hold(rows[0]) if rows else None


def for_calls(tx: Transaction, call_ids: list[str]) -> dict[str, Hold]:
    """The holds of these calls, by call id, in one read (a page of calls)."""
    if not call_ids:
        return {}
    q = select(provider_holds).where(provider_holds.c.call_id.in_(call_ids))
    return {h.call_id: h for h in (_hold(r._mapping) for r in tx.conn.execute(q))}


def move(
    tx: Transaction,
    call_id: str,
    *,
    from_state: str,
    to_state: str,
    at: datetime | None = None,
    end_receipt_id: str | None = None,
) -> bool:
    """Change a hold's state if it is still ``from_state``; False (nothing written) if not.
    A hold that ends (released or refunded) leaves the open holds' counts."""
    # A report, its ruling or a refund decides the hold anew: a failed release's retry is over.
    values: dict[str, Any] = {"state": to_state, "release_failures": None, "retry_at": None}
    h = provider_holds.c
    change = update(provider_holds).where(and_(h.call_id == call_id, h.state == from_state))
    if to_state not in _ENDED:
        return bool(tx.conn.execute(change.values(**values)).rowcount == 1)
    values |= {"ended_at": at, "end_receipt_id": end_receipt_id}
    ended = tx.conn.execute(change.values(**values).returning(h.matures_at, h.amount)).first()
    if ended is None:
        return False
    if from_state not in _ENDED:
        day_counts.note_hold(tx, ended.matures_at, int(ended.amount), -1)
    return True


def release(tx: Transaction, call_ids: Sequence[str], *, at: datetime) -> set[str]:
    """Release the holds of ``call_ids`` still ``held`` (matured), in one statement; the ids
    of those released (a report may have claimed one since it was found due). They leave the
    open holds' counts."""
    if not call_ids:
        return set()
    h = provider_holds.c
    # Locked first in call id order (PostgreSQL; SQLite has one writer): two upkeeps releasing
    # the same holds at once wait on each other in that order, never in a cycle, whatever
    # order each statement's plan would visit the rows in.
    chosen = (
        select(h.call_id)
        .where(h.call_id.in_(call_ids), h.state == HELD)
        .order_by(h.call_id)
        .with_for_update()
    )
    held = h.state == HELD
    if tx.dialect == "sqlite":
        # One writer needs no order of locks. And SQLite took the state's equality for a
        # narrow range of its index over a few ids' seeks: it read every hold still held
        # (60 ms at 100,000, inside the write). The state compared as an expression, it reads
        # the ids by their index.
        ids: Any = list(call_ids)
        held = h.state.concat("") == HELD
    else:
        ids = chosen.scalar_subquery()
    change = (
        update(provider_holds)
        .where(h.call_id.in_(ids), held)
        # A failed release's retry mark ends with the hold (one paid by a pass or a provider's
        # read while another recorded the failure kept it, read on every pass for good).
        .values(state=RELEASED, ended_at=at, release_failures=None, retry_at=None)
        .returning(h.call_id, h.matures_at, h.amount)
    )
    released = set()
    for row in tx.conn.execute(change):
        day_counts.note_hold(tx, row.matures_at, int(row.amount), -1)
        released.add(str(row.call_id))
    return released


def due(
    tx: Transaction,
    now: datetime,
    *,
    provider: str | None = None,
    limit: int = 500,
    call_ids: Sequence[str] | None = None,
) -> list[Hold]:
    """Holds still ``held`` whose deadline passed before ``now``, oldest first (at most
    ``limit``): a deadline is the last instant a report may be filed, so a hold is held through
    it. A hold whose call's meaning judgment is still pending waits for it, whatever the
    deadline.
    One waiting for a retry of a failed release (:func:`retries_due`) is out of this order
    until then; with ``call_ids``, those of these calls, waiting for a retry or not."""
    h = provider_holds.c
    q = select(provider_holds).where(h.state == HELD, h.matures_at < now)
    if call_ids is None:
        q = q.where(_RIPE)  # the terms of the ripe index's own condition, as it states them
    else:
        q = q.where(h.call_id.in_(list(call_ids)), h.judgment_queued_at.is_(None))
    if provider is not None:
        q = q.where(h.provider == provider)
    rows = tx.conn.execute(q.order_by(h.matures_at).limit(limit))
    return [_hold(r._mapping) for r in rows]


def retries_due(
    tx: Transaction, now: datetime, *, provider: str | None = None, limit: int = 500
) -> list[str]:
    """Call ids of the holds still ``held`` whose failed release is to be tried again by
    ``now``, soonest first (an index range on ``retry_at``: the retries due, never every hold
    that once failed)."""
    h = provider_holds.c
    # The state compared as an expression: as an equality, SQLite took it for the due index's
    # range and read every hold still held, where the retries' index holds only the few.
    q = select(h.call_id).where(h.retry_at <= now, h.state.concat("") == HELD)
    if provider is not None:  # as an expression too: as an equality, SQLite took the
        # provider's index and read every hold the provider ever had
        q = q.where(h.provider.concat("") == provider)
    return [r.call_id for r in tx.conn.execute(q.order_by(h.retry_at, h.call_id).limit(limit))]


#: A hold's failed release: :func:`release_failures`, :func:`defer`, :func:`retried`.
_RELEASE = RetryMarks(
    provider_holds.c.call_id,
    provider_holds.c.release_failures,
    provider_holds.c.retry_at,
    live=provider_holds.c.state == HELD,
)
release_failures = _RELEASE.failures_of
defer = _RELEASE.defer
retried = _RELEASE.clear


def open_holds(tx: Transaction) -> list[Hold]:
    """Every hold not yet released or refunded (for audits)."""
    h = provider_holds.c
    q = select(provider_holds).where(h.state.in_((HELD, REPORTED)))
    return [_hold(r._mapping) for r in tx.conn.execute(q)]


def open_summary(tx: Transaction, now: datetime) -> dict[str, int]:
    """How many holds are open, the money in them, and how many mature within 24 hours (those
    overdue among them), from the counts every hold's opening and end keep
    (:func:`adjudge.store.day_counts.note_hold`), never by reading the open holds: at the
    gateway's rate a report window holds millions. The open holds less those maturing after
    ``now + 24h``: the counts of each later hour (the report window's hours at most), and from
    the holds themselves only those later in the hour ``now + 24h`` falls in (the
    ``(state, matures_at)`` index: at most an hour's)."""
    soon = now + timedelta(hours=24)
    hour = soon.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    h, c = provider_holds.c, s.day_counts.c
    later_this_hour = (
        select(func.count())
        .where(h.state.in_((HELD, REPORTED)), h.matures_at > soon, h.matures_at < hour + _HOUR)
        .scalar_subquery()
    )
    # The all-time rows and the later hours' as two ranges of the key: as one condition with
    # an OR, SQLite read every hour's row ever written (they are never deleted).
    ours = (c.family == day_counts.HOLDS, c.subject == day_counts.EVERYONE)
    rows = union_all(
        select(c.day, c.name, c.n, c.high).where(*ours, c.day == day_counts.ALL_TIME),
        select(c.day, c.name, c.n, c.high).where(*ours, c.day >= day_counts.hour_of(hour + _HOUR)),
    ).subquery()
    u = rows.c
    ever, later = u.day == day_counts.ALL_TIME, u.day != day_counts.ALL_TIME

    def summed(when: Any, name: str) -> list[Any]:  # its two parts (day_counts.joined)
        return [
            func.coalesce(func.sum(case((and_(when, u.name == name), part), else_=0)), 0)
            for part in (u.n, u.high)
        ]

    q = select(  # one round trip: the counts of all time and of the later hours, lanes summed
        *summed(ever, day_counts.OPEN_HOLDS),
        *summed(ever, day_counts.HELD_MONEY),
        *summed(later, day_counts.OPEN_HOLDS),
        later_this_hour,
    ).select_from(rows)
    row = tx.conn.execute(q).one()
    count, amount, after = (day_counts.joined(row[i], row[i + 1]) for i in (0, 2, 4))
    maturing = count - after - int(row[6])
    return {"count": count, "amount": amount, "maturing_24h": maturing}


def recount_summary(tx: Transaction, now: datetime) -> dict[str, int]:
    """:func:`open_summary` from the open holds themselves: a full read (audits and tests)."""
    h = provider_holds.c
    soon = now + timedelta(hours=24)
    q = select(
        func.count(),
        func.coalesce(func.sum(h.amount), 0),
        func.coalesce(func.sum(case((h.matures_at <= soon, 1), else_=0)), 0),
    ).where(h.state.in_((HELD, REPORTED)))
    count, amount, maturing = tx.conn.execute(q).one()
    return {"count": int(count), "amount": int(amount), "maturing_24h": int(maturing)}


def next_maturity(tx: Transaction, provider: str) -> datetime | None:
    """When the provider's next held charge matures (None: nothing held)."""
    h = provider_holds.c
    q = (
        select(h.matures_at)
        .where(and_(h.provider == provider, h.state == HELD))
        .order_by(h.matures_at)
        .limit(1)
    )
    value = tx.conn.execute(q).scalar_one_or_none()
    return value if isinstance(value, datetime) else None


def _hold(m: Any) -> Hold:
    return Hold(
        m["call_id"],
        m["provider"],
        m["caller"],
        int(m["amount"]),
        m["receipt_id"],
        m["matures_at"],
        m["state"],
        m["ended_at"],
        m["end_receipt_id"],
    )


_INSERT = insert(provider_holds)
_GET = select(provider_holds).where(provider_holds.c.call_id == bindparam("k_call"))
