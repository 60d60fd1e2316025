"""The webhook outbox: endpoints, the events written with the state change, their deliveries.

:func:`emit` runs inside the transaction of the state change that causes the event, so an event
exists exactly when its change committed: a rolled-back change leaves no event, and a committed
one always has its deliveries. It writes one message and one pending delivery per enabled
endpoint of the accounts party to the event that subscribes to its type (none when no endpoint
wants it). Delivery happens later, outside any transaction: a worker :func:`claim`\\ s due
deliveries under a lease (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite's write lock
serializes claims, and the claim's own ``UPDATE`` re-checks the lease either way), sends them,
and :func:`finish`\\ es each only if it still holds that lease.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    and_,
    bindparam,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    true,
    union_all,
    update,
)

from adjudge.store import day_counts, ids
from adjudge.store import schema as s
from adjudge.store.pages import Page, newest_first, newest_page, sifted_newest_first
from adjudge.store.transaction import Transaction

__all__ = [
    "Batch",
    "Claimed",
    "StoredDelivery",
    "StoredEndpoint",
    "add_endpoint",
    "claim",
    "counts",
    "deliveries",
    "delivery",
    "delivery_of",
    "disable_endpoint",
    "disabled_endpoints",
    "emit",
    "emit_to",
    "endpoint",
    "endpoints",
    "finish",
    "has_due",
    "message",
    "replay",
]

#: Delivery states: waiting for an attempt (``pending``), answered 2xx (``delivered``), or out
#: of attempts or endpoint (``failed``).
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
#: The most accounts one event goes to (a task's poster, agent and its up to 9 verifiers).
MAX_PARTIES = 11

webhook_endpoints = Table(
    "webhook_endpoints",
    s.metadata,
    Column("id", String(40), primary_key=True),  # whep_<hex>
    Column("account_id", String(64), ForeignKey("accounts.id"), nullable=False),
    Column("url", String(2000), nullable=False),
    # The whsec_ secret sealed with the server key (AES-256-GCM, bound to the endpoint's id):
    # signing needs the secret itself, so it cannot be hashed; sealed, a copy of the database
    # alone does not let anyone forge deliveries.
    Column("secret", Text, nullable=False),
    Column("event_types", JSON, nullable=True),  # a list; null: every type
    Column("description", String(200), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_at", s.UTCDateTime, nullable=False),
    Column("disabled_at", s.UTCDateTime, nullable=True),
)

# An account's enabled endpoints are one range of it, whatever it disabled before: each event's
# subscribers and the count a new endpoint is checked against read only those (revision 0046).
Index(
    "ix_webhook_endpoints_account_enabled",
    webhook_endpoints.c.account_id,
    webhook_endpoints.c.enabled,
    webhook_endpoints.c.created_at,
    webhook_endpoints.c.id,
)
# And its disabled ones, newest disabled first, listed a page at a time (revision 0047).
Index(
    "ix_webhook_endpoints_account_disabled",
    webhook_endpoints.c.account_id,
    webhook_endpoints.c.disabled_at.desc(),
    webhook_endpoints.c.id,
)

webhook_messages = Table(
    "webhook_messages",
    s.metadata,
    Column("id", String(40), primary_key=True),  # msg_<hex>: the webhook-id header
    Column("type", String(64), nullable=False),
    Column("payload", JSON, nullable=False),  # {"type", "timestamp", "data"}
    Column("created_at", s.UTCDateTime, nullable=False),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    s.metadata,
    Column("id", String(40), primary_key=True),  # whd_<hex>
    Column("message_id", String(40), ForeignKey("webhook_messages.id"), nullable=False),
    Column("endpoint_id", String(40), ForeignKey("webhook_endpoints.id"), nullable=False),
    Column("account_id", String(64), nullable=False),  # the endpoint's owner
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),  # since creation or the last replay
    Column("next_attempt_at", s.UTCDateTime, nullable=True),  # set while pending
    Column("locked_until", s.UTCDateTime, nullable=True),  # a worker's lease
    Column("lease", String(32), nullable=True),  # which claim holds it
    Column("last_attempt_at", s.UTCDateTime, nullable=True),
    Column("last_status", Integer, nullable=True),
    Column("last_error", String(500), nullable=True),
    Column("delivered_at", s.UTCDateTime, nullable=True),
    Column("replays", Integer, nullable=False),
    Column("created_at", s.UTCDateTime, nullable=False),
    UniqueConstraint("message_id", "endpoint_id"),
)

# The pending deliveries, oldest first, and by account (revision 0050): a delivered or failed
# one leaves both. A query reads them with the state as a literal, as their condition says it
# (a prepared statement's parameter would not match it), and no index has the state as a
# column: SQLite then never takes an equality on it for a narrow range and sorts what it finds.
_PENDING_ROWS = webhook_deliveries.c.status == literal_column("'pending'")
Index(
    "ix_webhook_deliveries_due",
    webhook_deliveries.c.next_attempt_at,
    webhook_deliveries.c.id,
    sqlite_where=_PENDING_ROWS,
    postgresql_where=_PENDING_ROWS,
)
# A claim walks the accounts with deliveries pending, one seek each, and takes each one's
# oldest due from a range of it.
Index(
    "ix_webhook_deliveries_pending_account",
    webhook_deliveries.c.account_id,
    webhook_deliveries.c.next_attempt_at,
    webhook_deliveries.c.id,
    sqlite_where=_PENDING_ROWS,
    postgresql_where=_PENDING_ROWS,
)
Index(
    "ix_webhook_deliveries_account",
    webhook_deliveries.c.account_id,
    webhook_deliveries.c.created_at,
    webhook_deliveries.c.id,
)
# An account's deliveries of one state, and one endpoint's, newest first (revision 0050): a page
# of its failed deliveries among many delivered ones reads a page, not its whole history.
Index(
    "ix_webhook_deliveries_account_status",
    webhook_deliveries.c.account_id,
    webhook_deliveries.c.status,
    webhook_deliveries.c.created_at.desc(),
    webhook_deliveries.c.id,
)
Index(
    "ix_webhook_deliveries_endpoint",
    webhook_deliveries.c.endpoint_id,
    webhook_deliveries.c.created_at.desc(),
    webhook_deliveries.c.id,
)

#: Each attempt of each delivery, as :func:`finish` records it: when, the receiver's status,
#: and what went wrong (the start of a refusing receiver's answer) — the delivery's history.
webhook_attempts = Table(
    "webhook_attempts",
    s.metadata,
    Column("id", s.ROW_ID, primary_key=True, autoincrement=True),
    Column("delivery_id", String(40), nullable=False, index=True),
    Column("attempt", Integer, nullable=False),  # counted since creation or the last replay
    Column("at", s.UTCDateTime, nullable=False),
    Column("ok", Boolean, nullable=False),
    Column("status", Integer, nullable=True),  # none when no answer came
    Column("error", String(500), nullable=True),
)

#: How many attempts of one delivery a reading shows, newest kept.
MAX_ATTEMPTS_SHOWN = 100


@dataclass(frozen=True)
class StoredEndpoint:
    """An endpoint as stored (its secret sealed)."""

    id: str
    account_id: str
    url: str
    sealed_secret: str
    event_types: tuple[str, ...] | None
    description: str
    enabled: bool
    created_at: datetime
    disabled_at: datetime | None

    def __repr__(self) -> str:
        return f"StoredEndpoint(id={self.id!r}, url={self.url!r}, secret=<sealed>)"

    def wants(self, event_type: str) -> bool:
        """Whether this endpoint subscribes to ``event_type``."""
        return self.event_types is None or event_type in self.event_types


@dataclass(frozen=True)
class StoredDelivery:
    """One message's delivery to one endpoint, with its log."""

    id: str
    message_id: str
    endpoint_id: str
    account_id: str
    type: str
    status: str
    attempts: int
    next_attempt_at: datetime | None
    locked_until: datetime | None
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    replays: int
    created_at: datetime


@dataclass(frozen=True)
class Claimed:
    """A delivery a worker leased: what to send, where, and the lease that lets it record."""

    delivery_id: str
    lease: str
    attempts: int
    message_id: str
    payload: Mapping[str, Any]
    endpoint_id: str
    url: str
    sealed_secret: str
    account_id: str = ""  # whose delivery: the worker counts each account's attempts in flight

    def __repr__(self) -> str:
        return f"Claimed(delivery_id={self.delivery_id!r}, url={self.url!r}, secret=<sealed>)"


def _endpoint(row: Any) -> StoredEndpoint:
    types = row["event_types"]
    return StoredEndpoint(
        id=row["id"],
        account_id=row["account_id"],
        url=row["url"],
        sealed_secret=row["secret"],
        event_types=None if types is None else tuple(types),
        description=row["description"],
        enabled=bool(row["enabled"]),
        created_at=row["created_at"],
        disabled_at=row["disabled_at"],
    )


def _delivery(row: Any) -> StoredDelivery:
    return StoredDelivery(
        id=row["id"],
        message_id=row["message_id"],
        endpoint_id=row["endpoint_id"],
        account_id=row["account_id"],
        type=row["type"],
        status=row["status"],
        attempts=int(row["attempts"]),
        next_attempt_at=row["next_attempt_at"],
        locked_until=row["locked_until"],
        last_attempt_at=row["last_attempt_at"],
        last_status=row["last_status"],
        last_error=row["last_error"],
        delivered_at=row["delivered_at"],
        replays=int(row["replays"]),
        created_at=row["created_at"],
    )


# --- endpoints ------------------------------------------------------------------------------


def add_endpoint(
    tx: Transaction,
    *,
    endpoint_id: str,
    account_id: str,
    url: str,
    sealed_secret: str,
    event_types: Sequence[str] | None,
    description: str,
    at: datetime,
) -> StoredEndpoint:
    """Store a new, enabled endpoint."""
    tx.conn.execute(
        insert(webhook_endpoints).values(
            id=endpoint_id,
            account_id=account_id,
            url=url,
            secret=sealed_secret,
            event_types=None if event_types is None else list(event_types),
            description=description,
            enabled=True,
            created_at=at,
            disabled_at=None,
        )
    )
    made = s.accounts.c.endpoints_made
    tx.conn.execute(
        update(s.accounts).where(s.accounts.c.id == account_id).values(endpoints_made=made + 1)
    )
    found = endpoint(tx, endpoint_id)
    assert found is not None
    return found


def endpoint(tx: Transaction, endpoint_id: str) -> StoredEndpoint | None:
    """The endpoint with this id, or None."""
    row = tx.conn.execute(
        select(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id)
    ).first()
    return _endpoint(row._mapping) if row else None


def endpoints(tx: Transaction, account_id: str) -> list[StoredEndpoint]:
    """An account's enabled endpoints (at most its limit), oldest first: their range of the
    index, whatever it disabled before."""
    e = webhook_endpoints.c
    q = select(webhook_endpoints).where(e.account_id == account_id, e.enabled == true())
    return [_endpoint(r._mapping) for r in tx.conn.execute(q.order_by(e.created_at, e.id))]


def disabled_endpoints(tx: Transaction, account_id: str, *, cursor: str | None, limit: int) -> Page:
    """A page of an account's disabled endpoints, newest disabled first (revision 0047's
    range), and the next page's cursor: an account that makes and deletes an endpoint a day
    reads a page of them, not the years."""
    e = webhook_endpoints.c
    q = select(webhook_endpoints).where(e.account_id == account_id, e.disabled_at.is_not(None))
    rows, more = newest_first(tx, q, e.disabled_at, e.id, cursor, limit)
    return Page([_endpoint(r._mapping) for r in rows], more)


def made_count(tx: Transaction, account_id: str) -> int:
    """How many endpoints an account made, disabled ones too (kept on its row as each is
    made)."""
    q = select(s.accounts.c.endpoints_made).where(s.accounts.c.id == account_id)
    return int(tx.conn.execute(q).scalar() or 0)


def enabled_count(tx: Transaction, account_id: str) -> int:
    """How many of an account's endpoints are enabled (counted on their range of the index)."""
    e = webhook_endpoints.c
    q = select(func.count()).where(e.account_id == account_id, e.enabled == true())
    return int(tx.conn.execute(q).scalar_one())


def disable_endpoint(tx: Transaction, endpoint_id: str, *, at: datetime) -> None:
    """Disable an endpoint for good: its pending deliveries end ``failed``, saying why (found
    among its account's pending ones, not among every delivery the endpoint ever had)."""
    w = webhook_endpoints
    owner = tx.conn.execute(
        update(w)
        .where(and_(w.c.id == endpoint_id, w.c.enabled.is_(True)))
        .values(enabled=False, disabled_at=at)
        .returning(w.c.account_id)
    ).scalar()
    if owner is None:
        return  # disabled already: it has nothing pending
    d = webhook_deliveries
    ended = tx.conn.execute(
        update(d)
        .where(and_(d.c.account_id == owner, d.c.endpoint_id == endpoint_id, _PENDING_ROWS))
        .values(
            status=FAILED,
            next_attempt_at=None,
            locked_until=None,
            lease=None,
            last_error="the endpoint was disabled",
        )
    )
    day_counts.note_deliveries(tx, PENDING, FAILED, ended.rowcount)


# --- emitting (in the state change's transaction) --------------------------------------------

# Built once: run on the driver's cursor (the hot path; see Transaction.run).
_PARTY_ENDPOINTS = select(
    webhook_endpoints.c.id, webhook_endpoints.c.account_id, webhook_endpoints.c.event_types
).where(
    webhook_endpoints.c.account_id.in_([bindparam(f"p{i}") for i in range(MAX_PARTIES)]),
    webhook_endpoints.c.enabled == bindparam("k_enabled"),
)
_NEW_MESSAGE = insert(webhook_messages)
_NEW_DELIVERY = insert(webhook_deliveries)


def _subscribed(tx: Transaction, parties: Sequence[str]) -> list[dict[str, Any]]:
    """The enabled endpoints of ``parties`` (at most :data:`MAX_PARTIES`), once per transaction
    (nothing in a state change's transaction changes endpoints)."""
    key = ("webhook-endpoints", tuple(parties))
    found: list[dict[str, Any]] | None = tx.cache.get(key)
    if found is None:
        padded = [*parties, *[""] * (MAX_PARTIES - len(parties))]
        params: dict[str, Any] = {f"p{i}": p for i, p in enumerate(padded)}
        params["k_enabled"] = True
        found = tx.cache[key] = tx.rows(_PARTY_ENDPOINTS, params)
    return found


def emit(
    tx: Transaction,
    account_ids: Iterable[str | None],
    event_type: str,
    payload: Mapping[str, Any],
    *,
    at: datetime,
) -> str | None:
    """Write an event for the endpoints of ``account_ids`` that want ``event_type``, in the
    caller's transaction; returns its message id (the ``webhook-id``), or None when no
    endpoint wants it (then nothing is written)."""
    parties = sorted({a for a in account_ids if a})
    if not parties:
        return None
    if len(parties) > MAX_PARTIES:
        raise ValueError(f"an event goes to at most {MAX_PARTIES} accounts")
    chosen = [
        e
        for e in _subscribed(tx, parties)
        if e["event_types"] is None or event_type in e["event_types"]
    ]
    return _write(tx, chosen, event_type, payload, at)


def emit_to(
    tx: Transaction,
    found: StoredEndpoint,
    event_type: str,
    payload: Mapping[str, Any],
    at: datetime,
) -> str:
    """Write an event for one endpoint alone (a test event its owner asked for)."""
    row = {"id": found.id, "account_id": found.account_id}
    msg = _write(tx, [row], event_type, payload, at)
    assert msg is not None
    return msg


def _write(
    tx: Transaction,
    chosen: Sequence[Mapping[str, Any]],
    event_type: str,
    payload: Mapping[str, Any],
    at: datetime,
) -> str | None:
    if not chosen:
        return None
    msg_id = "msg_" + ids.ordered_hex()
    tx.run(
        _NEW_MESSAGE,
        {"id": msg_id, "type": event_type, "payload": dict(payload), "created_at": at},
    )
    tx.run_many(
        _NEW_DELIVERY,
        [
            {
                "id": "whd_" + ids.ordered_hex(24),
                "message_id": msg_id,
                "endpoint_id": e["id"],
                "account_id": e["account_id"],
                "status": PENDING,
                "attempts": 0,
                "next_attempt_at": at,
                "replays": 0,
                "created_at": at,
            }
            for e in chosen
        ],
    )
    day_counts.note_deliveries(tx, None, PENDING, len(chosen))
    return msg_id


def message(tx: Transaction, message_id: str) -> Mapping[str, Any] | None:
    """A stored event's payload, or None."""
    m = webhook_messages
    row = tx.conn.execute(select(m.c.payload).where(m.c.id == message_id)).first()
    return dict(row.payload) if row else None


# --- the delivery log -------------------------------------------------------------------------


def _log_query() -> Any:
    d, m = webhook_deliveries, webhook_messages
    return select(d, m.c.type).select_from(d.join(m, m.c.id == d.c.message_id))


def delivery(tx: Transaction, delivery_id: str) -> StoredDelivery | None:
    """One delivery with its log, or None."""
    row = tx.conn.execute(_log_query().where(webhook_deliveries.c.id == delivery_id)).first()
    return _delivery(row._mapping) if row else None


def delivery_of(tx: Transaction, message_id: str, endpoint_id: str) -> StoredDelivery | None:
    """The delivery of one message to one endpoint, or None."""
    d = webhook_deliveries
    row = tx.conn.execute(
        _log_query().where(and_(d.c.message_id == message_id, d.c.endpoint_id == endpoint_id))
    ).first()
    return _delivery(row._mapping) if row else None


def deliveries(
    tx: Transaction,
    account_id: str,
    *,
    endpoint_id: str | None = None,
    status: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> Page:
    """An account's deliveries, newest first, a page at a time (keyset: ``cursor`` is the
    ``next_cursor`` of the previous page; ``CURSOR_INVALID`` otherwise).

    A page walks the account's index range (of a state: ``ix_webhook_deliveries_account_status``)
    or the endpoint's; an endpoint's of one state checks the state on the first
    :data:`~adjudge.store.pages.SIFTED_ROWS` deliveries of the endpoint's walk only, and a page
    that found fewer than ``limit`` there ends where the walk did, with a cursor from there
    (before, a page of an endpoint's failed deliveries among many delivered ones walked them
    all)."""
    d = webhook_deliveries
    q = _log_query().where(d.c.account_id == account_id)
    if endpoint_id is not None:
        q = q.where(d.c.endpoint_id == endpoint_id)
    if status is not None:
        q = q.where(d.c.status == status)
    if endpoint_id is not None and status is not None:
        walk = select(d.c.id, d.c.created_at).where(d.c.endpoint_id == endpoint_id)
        walks = [newest_page(walk, d.c.created_at, d.c.id, cursor, 0)]
        rows, following = sifted_newest_first(tx, q, d.c.created_at, d.c.id, walks, cursor, limit)
        return Page([_delivery(r._mapping) for r in rows], following)
    rows, following = newest_first(tx, q, d.c.created_at, d.c.id, cursor, limit)
    return Page([_delivery(r._mapping) for r in rows], following)


def replay(tx: Transaction, delivery_id: str, *, now: datetime) -> bool:
    """Make a delivery due again now with a fresh count of attempts; False if a worker holds
    it at this moment (it is being attempted)."""
    d = webhook_deliveries
    # Its status, locked until this transaction ends, to count it moved from there.
    q = select(d.c.status).where(d.c.id == delivery_id)
    found = tx.conn.execute(q.with_for_update() if tx.dialect == "postgresql" else q).first()
    if found is None:
        return False
    done = tx.conn.execute(
        update(d)
        .where(
            and_(
                d.c.id == delivery_id,
                d.c.status == found.status,
                or_(d.c.status != PENDING, d.c.locked_until.is_(None), d.c.locked_until <= now),
            )
        )
        .values(
            status=PENDING,
            attempts=0,
            next_attempt_at=now,
            locked_until=None,
            lease=None,
            replays=d.c.replays + 1,
        )
    )
    if done.rowcount:
        day_counts.note_deliveries(tx, str(found.status), PENDING)
    return bool(done.rowcount)


# --- the worker's side --------------------------------------------------------------------------


def has_due(tx: Transaction, *, now: datetime) -> bool:
    """Whether any delivery is due and free now: a read, so an idle worker's poll takes no
    write lock."""
    q = select(webhook_deliveries.c.id).where(_due(now))
    return tx.conn.execute(q.limit(1)).first() is not None


def oldest_pending(tx: Transaction) -> datetime | None:
    """When the longest-waiting pending delivery fell due (None: none pending), by the due
    index: the outbox's lag is the time since."""
    d = webhook_deliveries
    q = select(func.min(d.c.next_attempt_at)).where(_PENDING_ROWS)
    value = tx.conn.execute(q).scalar_one_or_none()
    return value if isinstance(value, datetime) else None  # min() keeps the column's type


#: The share of a batch one account's deliveries take before the next account's due ones.
FAIR_SHARE = 5


@dataclass(frozen=True)
class Batch:
    """A claim's leased deliveries, and the last account its walk gave a turn (the next
    claim's walk starts after it)."""

    claimed: list[Claimed]
    walked_to: str


# A claim's statements are built once for each shape (how many accounts, their share, the
# database) and given their values as parameters: building one anew took more time than the
# database took to run it.


def _next_account(after: Any) -> Any:
    """The first account after ``after`` with a pending delivery: one seek of the pending
    deliveries' account index."""
    d = webhook_deliveries
    q = select(d.c.account_id).where(_PENDING_ROWS, d.c.account_id > after)
    # Ordered as that index is (no other index gives this order: none is cheaper to read).
    return q.order_by(d.c.account_id, d.c.next_attempt_at).limit(1).scalar_subquery()


@cache
def _walk_statement(count: int, bounded: bool) -> Any:
    first = select(_next_account(bindparam("after")).label("account"), literal(1).label("n"))
    walk = first.cte("walk", recursive=True)
    step = select(_next_account(walk.c.account), walk.c.n + 1).where(
        walk.c.account.is_not(None), walk.c.n < count
    )
    walk = walk.union_all(step)
    q = select(walk.c.account).where(walk.c.account.is_not(None))
    if bounded:
        q = q.where(walk.c.account <= bindparam("upto"))
    return q.order_by(walk.c.account)


def _walk(tx: Transaction, after: str, upto: str | None, count: int) -> list[str]:
    """Up to ``count`` accounts with pending deliveries after ``after`` (and at most
    ``upto``), in the database's order of names: a recursive query of one index seek an
    account, however many deliveries each has pending."""
    q = _walk_statement(count, upto is not None)
    return [str(a) for a in tx.conn.scalars(q, {"after": after, "upto": upto})]


def _free(now: Any) -> Any:
    """No unexpired lease."""
    d = webhook_deliveries
    return or_(d.c.locked_until.is_(None), d.c.locked_until <= now)


def _due(now: Any) -> Any:
    """Pending, its next attempt at or before ``now``, and no unexpired lease."""
    return and_(_PENDING_ROWS, webhook_deliveries.c.next_attempt_at <= now, _free(now))


#: The most accounts whose shares one statement reads: SQLite takes at most 500 terms in a
#: compound select, and a read past a batch's need is work for nothing.
ACCOUNTS_A_READ = 50


@cache
def _fair_statement(count: int, share: int) -> Any:
    d = webhook_deliveries
    parts = [
        select(d.c.id, d.c.account_id, d.c.next_attempt_at)
        .where(_due(bindparam("now")), d.c.account_id == bindparam(f"a{n}"))
        .order_by(d.c.next_attempt_at, d.c.id)
        .limit(share)
        .subquery()
        for n in range(count)
    ]
    ordered = union_all(*(select(p.c.id, p.c.account_id, p.c.next_attempt_at) for p in parts))
    return select(ordered.subquery()).order_by("next_attempt_at", "id")


def _fair(tx: Transaction, now: datetime, accounts: list[str], share: int) -> dict[str, list[str]]:
    """Each account's oldest due deliveries, up to ``share``: one statement of an index range
    an account (read, not locked: only those a batch takes are locked)."""
    found: dict[str, list[str]] = {a: [] for a in accounts}
    values: dict[str, Any] = {f"a{n}": a for n, a in enumerate(accounts)}
    for row in tx.conn.execute(_fair_statement(len(accounts), share), {**values, "now": now}):
        found[str(row.account_id)].append(str(row.id))
    return found


@cache
def _locked_statement() -> Any:
    d = webhook_deliveries
    q = select(d.c.id).where(d.c.id.in_(bindparam("ids", expanding=True))).order_by(d.c.id)
    return q.with_for_update(skip_locked=True)


@cache
def _oldest_statement(postgresql: bool) -> Any:
    d = webhook_deliveries
    q = select(d.c.id, d.c.account_id).where(
        _due(bindparam("now")),
        d.c.id.not_in(bindparam("taken", expanding=True)),
        d.c.account_id.not_in(bindparam("full", expanding=True)),
    )
    q = q.order_by(d.c.next_attempt_at, d.c.id).limit(bindparam("room"))
    # On PostgreSQL claims at once skip each other's and take the next in the same order.
    return q.with_for_update(skip_locked=True) if postgresql else q


def claim(
    tx: Transaction,
    *,
    now: datetime,
    lease: timedelta,
    limit: int,
    after: str = "",
    busy: Mapping[str, int] | None = None,
    most: int | None = None,
) -> Batch:
    """Lease up to ``limit`` due deliveries of enabled endpoints until ``now + lease``, shared
    among their accounts in turn: the accounts with deliveries pending after ``after`` (then
    from the first, around) each take their oldest due ones up to a :data:`FAIR_SHARE`-th of
    the batch, until the batch is full or ``limit`` accounts had their turn; then the rest by
    age. The next claim's walk starts after the last account given a turn
    (:attr:`Batch.walked_to`).

    A batch is sent whole before the next, so one account's pile of deliveries at receivers
    that never answer would otherwise fill every batch. The claim's cost is that of the batch
    (an index seek an account walked, one index range each, and the oldest for the rest), not
    of every delivery due: a pile of them used to be ranked whole on every pass, inside the
    write that holds SQLite's one lock.

    Due: pending, its next attempt at or before ``now``, and no unexpired lease. On PostgreSQL
    the rows the batch takes (and no others) are locked ``FOR UPDATE SKIP LOCKED``, so claims
    at once never wait for each other (one may take fewer); the lease is then written by one
    ``UPDATE`` of them all that checks again that each row is free, so no two workers hold one
    delivery at once on either database. The lease is the claim's (a random token): :func:`finish`
    records an attempt only while its row still holds it.

    With ``most``, no account is given more than ``most`` attempts in flight, counting its
    ``busy`` ones (the worker's, already sent): one account's receivers that never answer hold
    at most its places, and the rest stay for everyone else's deliveries.
    """
    d, e, m = webhook_deliveries, webhook_endpoints, webhook_messages
    share = max(1, limit // FAIR_SHARE)
    held = Counter(busy or {})

    def room(account: str) -> int:
        return limit if most is None else max(0, most - held[account])

    accounts = _walk(tx, after, None, limit)
    if len(accounts) < limit and after:
        accounts += _walk(tx, "", after, limit - len(accounts))
    due: list[str] = []
    walked_to = after
    for start in range(0, len(accounts), ACCOUNTS_A_READ):
        if len(due) >= limit:
            break
        some = accounts[start : start + ACCOUNTS_A_READ]
        fair = _fair(tx, now, some, share)
        for account in some:
            if len(due) >= limit:
                break
            walked_to = account
            taking = fair[account][: min(limit - len(due), room(account))]
            held[account] += len(taking)
            due += taking
    if due and tx.dialect == "postgresql":  # those another claim is taking are left to it
        due = [str(i) for i in tx.conn.scalars(_locked_statement(), {"ids": due})]
    if len(due) < limit:
        oldest = _oldest_statement(tx.dialect == "postgresql")
        full = [a for a in held if room(a) == 0]
        values = {"now": now, "taken": due, "room": limit - len(due), "full": full}
        for row in tx.conn.execute(oldest, values):
            if room(str(row.account_id)):
                held[str(row.account_id)] += 1
                due.append(str(row.id))
    if not due:
        return Batch([], walked_to)
    token = secrets.token_hex(16)
    leased = (  # by the ids' index (the state a parameter: no pending index matches it)
        update(d)
        .where(and_(d.c.id.in_(due), d.c.status == PENDING, _free(now)))
        .values(locked_until=now + lease, lease=token)
        .returning(d.c.id, d.c.attempts)
    )
    taken = {str(r.id): (token, int(r.attempts)) for r in tx.conn.execute(leased)}
    if not taken:
        return Batch([], walked_to)
    rows = tx.conn.execute(
        select(
            d.c.id,
            d.c.message_id,
            d.c.endpoint_id,
            d.c.account_id,
            m.c.payload,
            e.c.url,
            e.c.secret,
        )
        .select_from(d.join(m, m.c.id == d.c.message_id).join(e, e.c.id == d.c.endpoint_id))
        .where(d.c.id.in_(list(taken)))
    )
    claimed = [
        Claimed(
            delivery_id=r.id,
            lease=taken[r.id][0],
            attempts=taken[r.id][1],
            message_id=r.message_id,
            payload=r.payload,
            endpoint_id=r.endpoint_id,
            url=r.url,
            sealed_secret=r.secret,
            account_id=r.account_id,
        )
        for r in rows
    ]
    claimed.sort(key=lambda c: c.delivery_id)
    return Batch(claimed, walked_to)


def finish(
    tx: Transaction,
    claimed: Claimed,
    *,
    now: datetime,
    ok: bool,
    status: int | None,
    error: str | None,
    next_at: datetime | None,
) -> bool:
    """Record an attempt under the lease that claimed it: ``delivered`` on success, else
    pending until ``next_at`` or ``failed`` when there is none. False (nothing written) when
    the lease is no longer this worker's."""
    d = webhook_deliveries
    values: dict[str, Any] = {
        "attempts": claimed.attempts + 1,
        "last_attempt_at": now,
        "last_status": status,
        "locked_until": None,
        "lease": None,
    }
    if ok:
        values |= {"status": DELIVERED, "delivered_at": now, "next_attempt_at": None}
        values["last_error"] = None
    else:
        values["last_error"] = (error or "failed")[:500]
        if next_at is None:
            values |= {"status": FAILED, "next_attempt_at": None}
        else:
            values["next_attempt_at"] = next_at
    done = tx.conn.execute(
        update(d)
        .where(and_(d.c.id == claimed.delivery_id, d.c.lease == claimed.lease))
        .values(**values)
    )
    if done.rowcount:
        # A leased delivery is pending: claim leases only those, and a replay or a disabled
        # endpoint takes the lease away.
        day_counts.note_deliveries(tx, PENDING, values.get("status", PENDING))
        tx.conn.execute(
            insert(webhook_attempts).values(
                delivery_id=claimed.delivery_id,
                attempt=claimed.attempts + 1,
                at=now,
                ok=ok,
                status=status,
                error=values["last_error"],
            )
        )
    return bool(done.rowcount)


def attempts(tx: Transaction, delivery_id: str) -> list[dict[str, Any]]:
    """A delivery's attempts, oldest first (the newest :data:`MAX_ATTEMPTS_SHOWN`); attempts
    made before this history was kept are not in it."""
    a = webhook_attempts
    rows = tx.conn.execute(
        select(a)
        .where(a.c.delivery_id == delivery_id)
        .order_by(a.c.id.desc())
        .limit(MAX_ATTEMPTS_SHOWN)
    )
    return [
        {
            "attempt": int(r.attempt),
            "at": r.at.isoformat(),
            "ok": bool(r.ok),
            "status": r.status,
            "error": r.error,
        }
        for r in reversed(list(rows))
    ]


def counts(tx: Transaction) -> dict[str, int]:
    """How many deliveries are in each state (for operators): counts kept as deliveries are
    made and change state (:func:`adjudge.store.day_counts.note_deliveries`), not a count of
    every delivery ever made."""
    kept = day_counts.summed(tx, day_counts.DELIVERIES, [day_counts.EVERYONE], None, None)
    return dict(sorted(kept.items()))
