"""The gateway in the store: callable tools, the gateway's signing keys, providers' credentials,
and the forwarded calls with their reservations.

A forwarded call is written twice: when it starts (``pending``: the reservation is taken in the
same transaction) and when it ends (``done``: its verified record, receipt and settlement, in
one transaction). Secrets (signing keys, credentials) are stored sealed; this module never sees
them in the clear.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    ColumnElement,
    ForeignKey,
    Index,
    Integer,
    Select,
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
    select,
    true,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from adjudge.calls.pricing import ListedPrice
from adjudge.digests import sha256_digest
from adjudge.errors import NotAllowed
from adjudge.store import day_counts
from adjudge.store import schema as s
from adjudge.store.pages import (
    SIFTED_ROWS,
    Page,
    decode_cursor,
    encode_cursor,
    newest_first,
    newest_of_each,
    newest_page,
    sifted_newest_first,
)
from adjudge.store.retry_marks import RetryMarks
from adjudge.store.transaction import ConcurrentUpdate, Read, Transaction

tools = Table(
    "gateway_tools",
    s.metadata,
    Column("name", String(128), primary_key=True),
    Column("version", Integer, primary_key=True),  # each registration of a name is a version
    Column("provider", String(64), ForeignKey("accounts.id"), nullable=False, index=True),
    Column("document", JSON, nullable=False),  # the normalized tool document
    Column("digest", String(71), nullable=False),
    Column("price_minor", BigInteger, nullable=False),  # the price this version announced
    Column("currency", String(64), nullable=False),
    Column("registered_at", s.UTCDateTime, nullable=False),
    # An increase waits out its notice: before ``price_from`` calls are charged the prior price
    # (both null: in force from registration). See adjudge.calls.pricing.
    Column("prior_price_minor", BigInteger, nullable=True),
    Column("price_from", s.UTCDateTime, nullable=True),
)

signing_keys = Table(
    "gateway_keys",
    s.metadata,
    Column("kid", String(128), primary_key=True),
    Column("sealed", Text, nullable=False),  # the private key, sealed under the server secret
    Column("created_at", s.UTCDateTime, nullable=False),
    Column("retired_at", s.UTCDateTime, nullable=True),
)

credentials = Table(
    "gateway_credentials",
    s.metadata,
    Column("provider", String(64), ForeignKey("accounts.id"), primary_key=True),
    Column("header", String(128), nullable=False),
    Column("sealed", Text, nullable=False),  # the secret, sealed; never returned by any API
    Column("set_at", s.UTCDateTime, nullable=False),
)

calls = Table(
    "gateway_calls",
    s.metadata,
    Column("id", String(64), primary_key=True),  # a UUID: the client's intent id
    Column("caller", String(64), ForeignKey("accounts.id"), nullable=False),
    Column("tool", String(128), nullable=False),
    Column("tool_version", Integer, nullable=False),
    Column("provider", String(64), nullable=False),
    Column("price_minor", BigInteger, nullable=False),
    Column("currency", String(64), nullable=False),
    Column("key_hash", String(71), nullable=True),  # sha256 of the caller's idempotency key
    Column("fingerprint", String(71), nullable=False),  # of the tool and arguments called
    Column("state", String(16), nullable=False),  # pending | done
    Column("started_at", s.UTCDateTime, nullable=False),
    Column("finished_at", s.UTCDateTime, nullable=True),
    Column("status", String(16), nullable=True),  # settled | refunded | voided
    Column("verdict", String(32), nullable=True),
    Column("receipt_id", String(64), nullable=True),
    Column("answer", JSON, nullable=True),  # what the call answered, replayed on a retry
    # The caller's extra API key it was made with (its day's spending), None for its own key.
    Column("api_key_id", String(40), nullable=True),
    # The upkeep's recovery of this call, left pending, that failed: how many times in a row,
    # and when it is tried again. Until then the call is out of the pending index, so a call
    # failing on every pass never holds the calls left pending after it (revision 0058). Null:
    # none failed (every call the gateway writes).
    Column("recover_failures", Integer, nullable=True),
    Column("recover_retry_at", s.UTCDateTime, nullable=True),
    UniqueConstraint("caller", "key_hash"),
)
#: A call's columns as :class:`GatewayCall` holds them: every read of a call reads these alone
#: (the recovery's retry columns are the upkeep's, read by :func:`recover_failures`).
_CALL_COLUMNS = [c for c in calls.c if c.name not in ("recover_failures", "recover_retry_at")]
# The listing of calls (list_calls), newest first: all, a caller's, a provider's, a tool's; each
# page walks one index range in the listing's order, however many calls there are.
for _column in (calls.c.caller, calls.c.provider, calls.c.tool):
    Index(f"ix_gateway_calls_{_column.name}_newest", _column, calls.c.started_at.desc(), calls.c.id)
Index("ix_gateway_calls_newest", calls.c.started_at.desc(), calls.c.id)
# The calls still pending (pending_before): a call is in it from its start to its end, so the
# upkeep's search reads the few in flight, not every call before its cutoff. A call whose
# recovery failed leaves it until its retry, read from an index of its own (recover_retries_due).
_pending = and_(calls.c.state == "pending", calls.c.recover_retry_at.is_(None))
Index(
    "ix_gateway_calls_pending",
    calls.c.started_at,
    sqlite_where=_pending,
    postgresql_where=_pending,
)
Index(
    "ix_gateway_calls_recover_retry_at",
    calls.c.recover_retry_at,
    sqlite_where=calls.c.recover_retry_at.is_not(None),
    postgresql_where=calls.c.recover_retry_at.is_not(None),
)


@dataclass(frozen=True)
class StoredTool:
    """A callable tool as registered (the latest version of its name)."""

    name: str
    version: int
    provider: str
    document: Mapping[str, Any]
    digest: str
    price_minor: int
    currency: str
    registered_at: datetime
    prior_price_minor: int | None = None
    price_from: datetime | None = None

    @property
    def listed(self) -> ListedPrice:
        """The version's price over time (what a call starting at a given time is charged)."""
        if self.price_from is None or self.prior_price_minor is None:
            return ListedPrice(self.price_minor, self.price_minor, self.registered_at)
        return ListedPrice(self.price_minor, self.prior_price_minor, self.price_from)


@dataclass(frozen=True)
class GatewayCall:
    """A forwarded call: who, what, its reservation, and — once done — how it ended."""

    id: str
    caller: str
    tool: str
    tool_version: int
    provider: str
    price_minor: int
    currency: str
    key_hash: str | None
    fingerprint: str
    state: str
    started_at: datetime
    finished_at: datetime | None
    status: str | None
    verdict: str | None
    receipt_id: str | None
    answer: Mapping[str, Any] | None
    api_key_id: str | None = None


def hashed(key: str) -> str:
    """How an idempotency key is kept: its sha256."""
    return sha256_digest(key)


# --- tools ----------------------------------------------------------------------------------


def add_tool(
    tx: Transaction,
    *,
    name: str,
    provider: str,
    document: Mapping[str, Any],
    digest: str,
    price: ListedPrice,
    currency: str,
    at: datetime,
) -> StoredTool:
    """Register a tool, or a new version of one; a name belongs to the provider that took it.
    ``price`` is the version's price over time (:func:`adjudge.calls.pricing.announce`)."""
    current = tool(tx, name)
    if current is not None and current.provider != provider:
        raise NotAllowed(f"The tool {name} belongs to another provider.", code="NOT_TOOL_PROVIDER")
    version = 1 if current is None else current.version + 1
    immediate = price.prior == price.amount and price.effective_at <= at
    prior = None if immediate else price.prior
    since = None if immediate else price.effective_at
    try:
        tx.conn.execute(
            insert(tools).values(
                name=name,
                version=version,
                provider=provider,
                document=dict(document),
                digest=digest,
                price_minor=price.amount,
                currency=currency,
                registered_at=at,
                prior_price_minor=prior,
                price_from=since,
            )
        )
    except IntegrityError as exc:
        raise ConcurrentUpdate("The same tool is being registered; try again.") from exc
    return StoredTool(
        name, version, provider, document, digest, price.amount, currency, at, prior, since
    )


def tool(tx: Transaction, name: str, version: int | None = None) -> StoredTool | None:
    """A tool's latest version (or the given one), or None."""
    if version is None:
        found = tx.rows(*tool_read(name))
    else:
        found = tx.rows(_TOOL_VERSION, {"k_name": name, "k_version": version})
    return _tool(found[0]) if found else None


def tool_read(name: str) -> Read:
    """What :func:`tool` reads for a tool's latest version (to read it ahead)."""
    return _LATEST_TOOL, {"k_name": name}


def list_tools(
    tx: Transaction, *, query: str | None = None, limit: int = 50, cursor: str | None = None
) -> Page:
    """The latest version of every tool, by name; ``query`` filters names and descriptions.

    A page reads the next ``limit`` names' latest versions in the primary key's order and no
    version before them (a name re-registered for years is one row here, as one that never
    was); a query reads such pages until it has found a page's worth, run out of names, or
    read :data:`~adjudge.store.pages.SIFTED_ROWS` names: then the page ends where its walk did,
    short or empty, with a cursor to read on (a search matching nothing read every tool)."""
    after = None if cursor is None else decode_cursor(cursor)[1]
    needle = query.casefold() if query else None
    if needle is not None:
        return _search_tools(tx, needle, limit, after)
    params = {"k_count": limit + 1} if after is None else {"k_count": limit + 1, "k_after": after}
    found = [_tool(r._mapping) for r in tx.conn.execute(_LATEST_TOOLS[after is not None], params)]
    page = found[:limit]
    following = None
    if len(found) > limit and page:
        following = encode_cursor(page[-1].registered_at, page[-1].name)
    return Page(page, following)


def _search_tools(tx: Transaction, needle: str, limit: int, after: str | None) -> Page:
    """:func:`list_tools` with a query: its walk reads each name's latest version's name, time
    and description only (the description taken out of the document by the database), and then
    the documents of the page's tools. Walking the whole rows read every walked tool's document:
    a search matching nothing read 2,000 of them, 29-40 s when some held 3.5 MB."""
    found: list[str] = []
    walked = 0
    while True:
        params: dict[str, Any] = {"k_count": _SEARCH_BATCH}
        if after is not None:
            params["k_after"] = after
        rows = tx.conn.execute(_LATEST_NAMES[after is not None], params).all()
        found += [r.name for r in rows if _mentions(r.name, r.description, needle)]
        if len(found) > limit or len(rows) < _SEARCH_BATCH:
            break
        after = rows[-1].name
        walked += len(rows)
        if walked >= SIFTED_ROWS:  # a search's walk ends here: fewer than a page found
            return Page(_tools_named(tx, found), encode_cursor(rows[-1].registered_at, after))
    page = _tools_named(tx, found[:limit])
    following = None
    if len(found) > limit and page:
        following = encode_cursor(page[-1].registered_at, page[-1].name)
    return Page(page, following)


def _tools_named(tx: Transaction, names: list[str]) -> list[StoredTool]:
    """The latest version of each of ``names`` (found in this transaction), in their order."""
    found = [tool(tx, name) for name in names]
    return [t for t in found if t is not None]


def _mentions(name: str, description: str | None, needle: str) -> bool:
    """Whether a tool's name or description holds ``needle`` (casefolded)."""
    return needle in name.casefold() or needle in (description or "").casefold()


def _tool(m: Any) -> StoredTool:
    return StoredTool(
        m["name"],
        int(m["version"]),
        m["provider"],
        m["document"],
        m["digest"],
        int(m["price_minor"]),
        m["currency"],
        m["registered_at"],
        None if m["prior_price_minor"] is None else int(m["prior_price_minor"]),
        m["price_from"],
    )


# --- signing keys and credentials -------------------------------------------------------------


def keys(tx: Transaction) -> list[tuple[str, str, datetime, datetime | None]]:
    """Every signing key: kid, sealed private key, created, retired."""
    k = signing_keys
    rows = tx.conn.execute(select(k).order_by(k.c.created_at, k.c.kid))
    return [(r.kid, r.sealed, r.created_at, r.retired_at) for r in rows]


def add_key(tx: Transaction, kid: str, sealed: str, created_at: datetime) -> None:
    """Store a new signing key (sealed)."""
    try:
        tx.conn.execute(insert(signing_keys).values(kid=kid, sealed=sealed, created_at=created_at))
    except IntegrityError as exc:
        raise ConcurrentUpdate("A key with this id is being added; try again.") from exc


def retire_key(tx: Transaction, kid: str, at: datetime) -> None:
    """Mark a key retired from ``at`` (it then signs nothing; the JWKS lists it a while more)."""
    k = signing_keys
    tx.conn.execute(
        update(k).where(and_(k.c.kid == kid, k.c.retired_at.is_(None))).values(retired_at=at)
    )


def set_credential(tx: Transaction, provider: str, header: str, sealed: str, at: datetime) -> None:
    """Store (or replace) the credential the gateway sends to a provider, sealed."""
    c = credentials
    if credential(tx, provider) is None:
        tx.conn.execute(
            insert(c).values(provider=provider, header=header, sealed=sealed, set_at=at)
        )
    else:
        tx.conn.execute(
            update(c)
            .where(c.c.provider == provider)
            .values(header=header, sealed=sealed, set_at=at)
        )


def credential(tx: Transaction, provider: str) -> tuple[str, str] | None:
    """A provider's credential header and sealed secret, or None."""
    found = tx.rows(_CREDENTIAL, {"k_provider": provider})
    return (found[0]["header"], found[0]["sealed"]) if found else None


def credential_read(provider: str) -> Read:
    """What :func:`credential` reads (to read it ahead: ``Transaction.ahead``)."""
    return _CREDENTIAL, {"k_provider": provider}


def delete_credential(tx: Transaction, provider: str) -> None:
    """Forget a provider's credential."""
    tx.conn.execute(credentials.delete().where(credentials.c.provider == provider))


# --- forwarded calls ------------------------------------------------------------------------


def start_call(tx: Transaction, call: GatewayCall) -> bool:
    """Record a call as it starts; one idempotency key per caller starts one call.

    False, and nothing written, when the caller's key already started a call: the insert is
    the check (one statement, and under READ COMMITTED it waits for a racing start to end).
    """
    try:
        started = tx.run(
            _START_CALL[tx.dialect],
            {
                "id": call.id,
                "caller": call.caller,
                "tool": call.tool,
                "tool_version": call.tool_version,
                "provider": call.provider,
                "price_minor": call.price_minor,
                "currency": call.currency,
                "key_hash": call.key_hash,
                "fingerprint": call.fingerprint,
                "state": "pending",
                "started_at": call.started_at,
                "api_key_id": call.api_key_id,
            },
        )
    except IntegrityError as exc:  # another constraint (the caller's account)
        raise ConcurrentUpdate("The same call is starting; try again.") from exc
    if started.rowcount == 1:
        return True
    if call.key_hash is None:
        raise ConcurrentUpdate("The same call is starting; try again.")
    return False


def finish_call(
    tx: Transaction,
    call_id: str,
    *,
    provider: str,
    started_at: datetime,
    status: str,
    verdict: str | None,
    receipt_id: str,
    answer: Mapping[str, Any],
    at: datetime,
) -> None:
    """Record how a pending call ended; refused if it already ended (a racing recovery)."""
    done = tx.run(
        _FINISH_CALL,
        {
            "k_id": call_id,
            "k_state": "pending",
            "state": "done",
            "status": status,
            "verdict": verdict,
            "receipt_id": receipt_id,
            "answer": dict(answer),
            "finished_at": at,
        },
    )
    if done.rowcount != 1:
        raise ConcurrentUpdate(f"The call {call_id} already ended.")
    day_counts.note_call(tx, provider, started_at, verdict, 1)  # counted once it has ended


def rejudged(
    tx: Transaction, call: GatewayCall, *, status: str, verdict: str | None, receipt_id: str
) -> None:
    """Record an ended call's final verdict, status and (superseding) receipt after its meaning
    judgment; the answer it was given stays as it was given. ``call`` is the call as it ended
    (its verdict then is the one the dashboards' counts move from)."""
    tx.conn.execute(
        update(calls)
        .where(calls.c.id == call.id)
        .values(status=status, verdict=verdict, receipt_id=receipt_id)
    )
    day_counts.note_call(tx, call.provider, call.started_at, call.verdict, -1)
    day_counts.note_call(tx, call.provider, call.started_at, verdict, 1)


def call(tx: Transaction, call_id: str) -> GatewayCall | None:
    """A forwarded call, or None."""
    found = tx.rows(_CALL, {"k_id": call_id})
    return _call(found[0]) if found else None


def call_held(tx: Transaction, call_id: str) -> GatewayCall | None:
    """A forwarded call, or None, its row locked until the transaction ends (PostgreSQL; on
    SQLite writes are serial anyway): what supersedes the call's receipt in force (an upheld
    ruling, a judgment after the answer) reads it under the lock, so two of them at once
    supersede in turn, never the same receipt twice."""
    q = select(*_CALL_COLUMNS).where(calls.c.id == call_id)
    found = tx.conn.execute(q.with_for_update() if tx.dialect == "postgresql" else q).first()
    return None if found is None else _call(found._mapping)


def call_by_key(tx: Transaction, caller: str, key: str) -> GatewayCall | None:
    """The call a caller started with an idempotency key, or None."""
    found = tx.rows(*call_by_key_read(caller, key))
    return _call(found[0]) if found else None


def call_by_key_read(caller: str, key: str) -> Read:
    """What :func:`call_by_key` reads (to read it ahead: ``Transaction.ahead``)."""
    return _CALL_BY_KEY, {"k_caller": caller, "k_key": hashed(key)}


def pending_before(tx: Transaction, before: datetime, *, limit: int = 100) -> list[GatewayCall]:
    """Calls still pending that started before ``before`` (interrupted: to be refunded), the
    oldest first, at most ``limit`` (a range of the pending index). A call waiting for a retry
    of its failed recovery (:func:`recover_retries_due`) is out of this order until then."""
    # The state as a literal, as the pending calls' partial index says it: a prepared
    # statement's generic plan (PostgreSQL's, after a few runs) cannot take a partial index on
    # the strength of a parameter's value.
    pending = calls.c.state == literal_column("'pending'")
    q = select(*_CALL_COLUMNS).where(
        pending, calls.c.recover_retry_at.is_(None), calls.c.started_at < before
    )
    rows = tx.conn.execute(q.order_by(calls.c.started_at).limit(limit))
    return [_call(r._mapping) for r in rows]


def recover_retries_due(tx: Transaction, now: datetime, *, limit: int = 100) -> list[GatewayCall]:
    """Calls whose failed recovery is to be tried again by ``now``, soonest first (an index
    range on ``recover_retry_at``: the retries due, never every call that once failed). One that
    ended meanwhile (a replay ended it) is among them, for its retry to be cleared."""
    c = calls.c
    q = select(*_CALL_COLUMNS).where(c.recover_retry_at <= now)
    rows = tx.conn.execute(q.order_by(c.recover_retry_at, c.id).limit(limit))
    return [_call(r._mapping) for r in rows]


#: A call's failed recovery: :func:`recover_failures`, :func:`defer_recovery`,
#: :func:`recovery_retried` (a call's end in the gateway never clears these: it writes no column
#: of theirs, so no call pays for them).
_RECOVERY = RetryMarks(
    calls.c.id, calls.c.recover_failures, calls.c.recover_retry_at, live=calls.c.state == "pending"
)
recover_failures = _RECOVERY.failures_of
defer_recovery = _RECOVERY.defer
recovery_retried = _RECOVERY.clear


def list_calls(
    tx: Transaction,
    *,
    party: str | None = None,
    tool: str | None = None,
    provider: str | None = None,
    verdict: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> Page:
    """Forwarded calls, newest first; ``party`` keeps those it called or provides, ``since``
    and ``until`` (exclusive) those started in that range.

    A page walks one index range a role of the party (the provider's, the tool's, or every
    call's), in the listing's order; a filter that range does not lead with is checked on the
    first :data:`~adjudge.store.pages.SIFTED_ROWS` calls of each range only, and a page that
    found fewer than ``limit`` among them ends where the walk did, with a cursor from there."""
    c = calls.c
    ranged: list[ColumnElement[bool]] = []
    if since is not None:
        ranged.append(c.started_at >= since)
    if until is not None:
        ranged.append(c.started_at < until)
    if party is not None:
        leads: list[ColumnElement[bool]] = [c.caller == party, c.provider == party]
        sifted = [c.tool == tool if tool else None, c.provider == provider if provider else None]
    elif provider:
        leads, sifted = [c.provider == provider], [c.tool == tool if tool else None]
    elif tool:
        leads, sifted = [c.tool == tool], []
    else:
        leads, sifted = [true()], []
    sifted.append(c.verdict == verdict if verdict else None)
    sift = [f for f in sifted if f is not None]
    if not sift:
        return _unsifted(tx, leads, ranged, limit, cursor)
    walks = [
        newest_page(select(c.id, c.started_at).where(lead, *ranged), c.started_at, c.id, cursor, 0)
        for lead in leads
    ]
    q = select(*_CALL_COLUMNS).where(*sift)
    rows, following = sifted_newest_first(tx, q, c.started_at, c.id, walks, cursor, limit)
    return Page([_call(r._mapping) for r in rows], following)


def _unsifted(
    tx: Transaction,
    leads: list[ColumnElement[bool]],
    ranged: list[ColumnElement[bool]],
    limit: int,
    cursor: str | None,
) -> Page:
    """A page of calls every filter of which its index range leads with (or a range of
    times)."""
    c = calls
    where = list(ranged)
    if len(leads) > 1:  # the newest page of the calls it made and of those it provided
        pages = [
            newest_page(
                select(c.c.id, c.c.started_at).where(lead, *ranged),
                c.c.started_at,
                c.c.id,
                cursor,
                limit,
            )
            for lead in leads
        ]
        where.append(c.c.id.in_(newest_of_each(pages)))
    else:
        where.append(leads[0])
    rows, following = newest_first(
        tx, select(c).where(*where), c.c.started_at, c.c.id, cursor, limit
    )
    return Page([_call(r._mapping) for r in rows], following)


def _call(m: Any) -> GatewayCall:
    return GatewayCall(
        m["id"],
        m["caller"],
        m["tool"],
        int(m["tool_version"]),
        m["provider"],
        int(m["price_minor"]),
        m["currency"],
        m["key_hash"],
        m["fingerprint"],
        m["state"],
        m["started_at"],
        m["finished_at"],
        m["status"],
        m["verdict"],
        m["receipt_id"],
        m["answer"],
        m["api_key_id"],
    )


# Built once: a paid call's statements run on the driver's cursor (see Transaction.run).
_LATEST_TOOL = (
    select(tools)
    .where(tools.c.name == bindparam("k_name"))
    .order_by(tools.c.version.desc())
    .limit(1)
)


def _latest_tools(after: bool, *columns: Any) -> Select[Any]:
    """The latest version of each of the next ``k_count`` names (after ``k_after``), by name:
    each name the smallest one above the last (a step of the primary key, a recursive query),
    and its latest version another step. A walk of the key with a check of each row for a newer
    version read every version of the page's names (a name re-registered a thousand times, a
    thousand rows)."""
    t, other = tools.c, tools.alias("other").c
    first = select(func.min(t.name).label("name"), literal(1).label("n"))
    if after:
        first = first.where(t.name > bindparam("k_after"))
    names = first.cte("names", recursive=True)
    following = select(func.min(other.name)).where(other.name > names.c.name).scalar_subquery()
    names = names.union_all(
        select(following, names.c.n + 1).where(
            names.c.name.is_not(None), names.c.n < bindparam("k_count")
        )
    )
    newest = select(func.max(other.version)).where(other.name == names.c.name).scalar_subquery()
    return (
        select(*(columns or (tools,)))
        .join(names, t.name == names.c.name)
        .where(t.version == newest)
        .order_by(t.name)
    )


# Built once (building the recursive query costs more than running it).
_LATEST_TOOLS = {False: _latest_tools(after=False), True: _latest_tools(after=True)}
#: A search's walk: each name's time and description, never its document.
_WALKED = (
    tools.c.name,
    tools.c.registered_at,
    tools.c.document["description"].as_string().label("description"),
)
_LATEST_NAMES = {after: _latest_tools(after, *_WALKED) for after in (False, True)}
#: Names a search reads at a time.
_SEARCH_BATCH = 200
_TOOL_VERSION = select(tools).where(
    and_(tools.c.name == bindparam("k_name"), tools.c.version == bindparam("k_version"))
)
_CREDENTIAL = select(credentials.c.header, credentials.c.sealed).where(
    credentials.c.provider == bindparam("k_provider")
)
_CALL = select(*_CALL_COLUMNS).where(calls.c.id == bindparam("k_id"))
_CALL_BY_KEY = select(*_CALL_COLUMNS).where(
    and_(calls.c.caller == bindparam("k_caller"), calls.c.key_hash == bindparam("k_key"))
)
#: The call's row, or nothing when its id or its caller's key is taken (its unique keys).
_START_CALL = {
    "sqlite": sqlite.insert(calls).on_conflict_do_nothing(),
    "postgresql": postgresql.insert(calls).on_conflict_do_nothing(),
}
_FINISH_CALL = update(calls).where(
    and_(calls.c.id == bindparam("k_id"), calls.c.state == bindparam("k_state"))
)
