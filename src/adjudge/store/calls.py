"""Paid-call verification in the store: tool contracts, decision policies, verified calls, a
provider's declared quality terms and its penalty proposals.

The tables live in the same metadata as the marketplace's (``schema.metadata``), so one Alembic
history creates them. Every function works inside a :class:`~adjudge.store.Transaction`; a call
record and its signed receipt are written in one transaction, the receipt appended to the
service's one hash chain under the same locked head row as the marketplace's verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
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
    UniqueConstraint,
    and_,
    bindparam,
    func,
    insert,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from adjudge.calls.quality import Observation, counted_as, enters_window
from adjudge.calls.verdicts import CallVerdict
from adjudge.errors import Conflict, NotAllowed
from adjudge.store import day_counts
from adjudge.store import schema as s
from adjudge.store.transaction import ConcurrentUpdate, Read, Transaction, one_row

__all__ = [
    "StoredCall",
    "StoredContract",
    "StoredPolicy",
    "add_call",
    "add_contract",
    "add_policy",
    "add_proposal",
    "call",
    "call_by_receipt",
    "contract",
    "contract_count",
    "latest_contract",
    "latest_policy",
    "latest_proposal",
    "observations",
    "policies_in_force",
    "policy",
    "policy_count",
    "set_terms",
    "terms",
    "tool_count",
    "tool_owner",
]

call_contracts = Table(
    "call_contracts",
    s.metadata,
    Column("id", s.ROW_ID, primary_key=True, autoincrement=True),
    Column("tool", String(200), nullable=False),  # read by the unique key it leads
    Column("version", String(64), nullable=False),
    Column("provider", String(64), ForeignKey("accounts.id"), nullable=False),
    Column("document", JSON, nullable=False),
    Column("digest", String(71), nullable=False),  # sha256 of the document's canonical JSON
    Column("registered_at", s.UTCDateTime, nullable=False),
    UniqueConstraint("tool", "version"),
    # A tool's latest contract and its first provider (latest_contract, tool_owner): one step.
    Index("ix_call_contracts_tool_id", "tool", "id"),
)

call_policies = Table(
    "call_policies",
    s.metadata,
    Column("id", s.ROW_ID, primary_key=True, autoincrement=True),
    Column("policy_id", String(200), nullable=False),
    Column("version", Integer, nullable=False),
    Column("tool", String(200), nullable=False),  # read by the unique key it leads
    Column("contract_version", String(64), nullable=False),  # the contract it was checked on
    Column("document", JSON, nullable=False),
    Column("digest", String(71), nullable=False),
    Column("registered_by", String(64), ForeignKey("accounts.id"), nullable=False),
    Column("registered_at", s.UTCDateTime, nullable=False),
    # A policy id is its tool's: nobody can take the id another tool pins.
    UniqueConstraint("tool", "policy_id", "version"),
    # A tool's latest policy (latest_policy): one step, not every version sorted.
    Index("ix_call_policies_tool_id", "tool", "id"),
)

call_records = Table(
    "call_records",
    s.metadata,
    Column("id", String(200), primary_key=True),  # the caller's call id: verified once
    Column("provider", String(200), nullable=False),  # read by ix_call_records_provider_at
    Column("tool", String(200), nullable=False),
    Column("contract_version", String(64), nullable=False),
    Column("policy_id", String(200), nullable=True),
    Column("policy_version", Integer, nullable=True),
    Column("submitted_by", String(64), ForeignKey("accounts.id"), nullable=False),
    # Who supplied the response: "gateway" (adjudge forwarded the call and read the answer
    # itself) or "reported" (a caller pasted it). Only observed calls feed provider quality.
    Column("source", String(16), nullable=False, server_default="reported"),
    Column("at", s.UTCDateTime, nullable=False, index=True),
    Column("verdict", String(32), nullable=True),  # None for a request or system error
    # The verdict of a judgment that superseded the record's (a meaning check judged after the
    # answer): what the call's quality observation counts from then on. None: the record's.
    Column("final_verdict", String(32), nullable=True),
    Column("enforced", Boolean, nullable=False),
    Column("error_kind", String(32), nullable=True),
    Column("record", JSON, nullable=False),  # CallResult.to_dict(): every check row
    Column("request", JSON, nullable=False),
    Column("response", JSON, nullable=False),
    # None: an error has no determination.
    Column("receipt_id", String(64), nullable=True, index=True),
    # What else the verification read (the meaning judgment, the corroboration, a forwarded
    # call's response bytes), kept so the call replays offline; None before revision 0013.
    Column("evidence", JSON, nullable=True),
    # A provider's calls by time: its quality window expires calls by it (quality_windows).
    Index("ix_call_records_provider_at", "provider", "at"),
)

call_provider_terms = Table(
    "call_provider_terms",
    s.metadata,
    Column("provider", String(64), ForeignKey("accounts.id"), primary_key=True),
    Column("terms", JSON, nullable=False),
    Column("declared_at", s.UTCDateTime, nullable=False),
)

call_penalty_proposals = Table(
    "call_penalty_proposals",
    s.metadata,
    Column("id", s.ROW_ID, primary_key=True, autoincrement=True),
    Column("provider", String(64), nullable=False, index=True),
    Column("proposal", JSON, nullable=False),  # PenaltyProposal.to_dict()
    Column("proposed_at", s.UTCDateTime, nullable=False),
)


@dataclass(frozen=True)
class StoredContract:
    """A registered contract document and who provides the tool."""

    tool: str
    version: str
    provider: str
    document: Mapping[str, Any]
    digest: str
    registered_at: datetime


@dataclass(frozen=True)
class StoredPolicy:
    """A registered policy document and the contract version it was checked against."""

    policy_id: str
    version: int
    tool: str
    contract_version: str
    document: Mapping[str, Any]
    digest: str
    registered_by: str
    registered_at: datetime


@dataclass(frozen=True)
class StoredCall:
    """A verified call: its record (every check row), inputs and receipt."""

    id: str
    provider: str
    tool: str
    submitted_by: str
    at: datetime
    record: Mapping[str, Any]
    request: Mapping[str, Any]
    response: Mapping[str, Any]
    receipt_id: str | None
    source: str = "reported"
    #: What else the verification read: ``judgment`` and ``corroboration`` as reported, and a
    #: forwarded call's ``response_bytes`` (base64) with whether its caller was ``shown`` them.
    evidence: Mapping[str, Any] | None = None
    #: The version of the tool's contract it was verified under.
    contract_version: str = ""


def _contract(m: Any) -> StoredContract:
    return StoredContract(m.tool, m.version, m.provider, m.document, m.digest, m.registered_at)


def _policy(m: Any) -> StoredPolicy:
    return StoredPolicy(
        m["policy_id"],
        int(m["version"]),
        m["tool"],
        m["contract_version"],
        m["document"],
        m["digest"],
        m["registered_by"],
        m["registered_at"],
    )


# --- contracts and policies ---------------------------------------------------------------


def tool_owner(tx: Transaction, tool: str) -> str | None:
    """The provider that registered ``tool`` first, or None."""
    q = select(tool_owners.c.provider).where(tool_owners.c.tool == tool)
    value = tx.conn.execute(q).scalar_one_or_none()
    return None if value is None else str(value)


def tool_count(tx: Transaction, provider: str) -> int:
    """How many tool names ``provider`` owns (its range of the owners' index: at most its
    bound, whatever other providers registered)."""
    q = select(func.count()).where(tool_owners.c.provider == provider)
    return int(tx.conn.execute(q).scalar_one())


def _claim(tx: Transaction, tool: str, provider: str) -> str:
    """Claim ``tool`` for ``provider`` unless it has an owner; its owner. The claim is a row
    keyed by the name: on PostgreSQL a second first registration of the name waits for the
    first's transaction at the key, and then reads its owner (each read before, both saw none
    and both stored their contracts: one name, two providers)."""
    tx.conn.execute(_CLAIM[tx.dialect], {"tool": tool, "provider": provider})
    owner = tool_owner(tx, tool)
    assert owner is not None  # claimed, by this transaction or by one committed before it
    return owner


# Each tool name's provider: a row a name, claimed with the name's first contract.
tool_owners = Table(
    "tool_owners",
    s.metadata,
    Column("tool", String(200), primary_key=True),
    Column("provider", String(64), ForeignKey("accounts.id"), nullable=False),
    # A provider's names, counted against its bound before it claims another (revision 0054).
    Index("ix_tool_owners_provider", "provider"),
)
_CLAIM = {
    "sqlite": sqlite.insert(tool_owners).on_conflict_do_nothing(),
    "postgresql": postgresql.insert(tool_owners).on_conflict_do_nothing(),
}


def add_contract(
    tx: Transaction,
    *,
    tool: str,
    version: str,
    provider: str,
    document: Mapping[str, Any],
    digest: str,
    at: datetime,
) -> StoredContract:
    """Store a contract; one provider per tool, each version once."""
    owner = _claim(tx, tool, provider)
    if owner != provider:
        raise NotAllowed(f"The tool {tool} belongs to another provider.", code="NOT_TOOL_PROVIDER")
    if contract(tx, tool, version) is not None:
        raise Conflict(f"{tool} version {version} is already registered.", code="CONTRACT_EXISTS")
    try:
        tx.conn.execute(
            insert(call_contracts).values(
                tool=tool,
                version=version,
                provider=provider,
                document=dict(document),
                digest=digest,
                registered_at=at,
            )
        )
    except IntegrityError as exc:
        raise ConcurrentUpdate("The same contract is being registered; try again.") from exc
    return StoredContract(tool, version, provider, document, digest, at)


def contract(tx: Transaction, tool: str, version: str) -> StoredContract | None:
    """One version of a tool's contract, or None."""
    q = select(call_contracts).where(
        and_(call_contracts.c.tool == tool, call_contracts.c.version == version)
    )
    row = tx.conn.execute(q).first()
    return _contract(row) if row else None


def contract_count(tx: Transaction, tool: str) -> int:
    """How many contract versions ``tool`` has (its range of the contracts' index: at most its
    bound, whatever other tools registered)."""
    q = select(func.count()).where(call_contracts.c.tool == tool)
    return int(tx.conn.execute(q).scalar_one())


def latest_contract(tx: Transaction, tool: str) -> StoredContract | None:
    """The tool's most recently registered contract, or None."""
    q = (
        select(call_contracts)
        .where(call_contracts.c.tool == tool)
        .order_by(call_contracts.c.id.desc())
        .limit(1)
    )
    row = tx.conn.execute(q).first()
    return _contract(row) if row else None


def add_policy(
    tx: Transaction,
    *,
    policy_id: str,
    version: int,
    tool: str,
    contract_version: str,
    document: Mapping[str, Any],
    digest: str,
    by: str,
    at: datetime,
) -> StoredPolicy:
    """Store a policy version of ``tool``; each (tool, policy, version) once."""
    if policy(tx, tool, policy_id, version) is not None:
        raise Conflict(
            f"{tool}'s policy {policy_id} version {version} is already registered; give the "
            "changed policy a new version.",
            code="POLICY_EXISTS",
        )
    try:
        tx.conn.execute(
            insert(call_policies).values(
                policy_id=policy_id,
                version=version,
                tool=tool,
                contract_version=contract_version,
                document=dict(document),
                digest=digest,
                registered_by=by,
                registered_at=at,
            )
        )
    except IntegrityError as exc:
        raise ConcurrentUpdate("The same policy is being registered; try again.") from exc
    return StoredPolicy(policy_id, version, tool, contract_version, document, digest, by, at)


def policy(
    tx: Transaction,
    tool: str,
    policy_id: str,
    version: int | None = None,
    *,
    at: datetime | None = None,
) -> StoredPolicy | None:
    """One of ``tool``'s policies: the given version, or (``version`` None) the highest one
    registered by ``at`` (any time when ``at`` is None); None when there is none."""
    rows = tx.rows(*policy_read(tool, policy_id, version, at=at))
    found = _policy(rows[0]) if rows else None
    if version is not None and found is not None and at is not None and found.registered_at > at:
        return None
    return found


def policy_read(
    tool: str, policy_id: str, version: int | None = None, *, at: datetime | None = None
) -> Read:
    """What :func:`policy` reads (to read it ahead: ``Transaction.ahead``)."""
    if version is not None:
        return _POLICY_VERSION, {"k_tool": tool, "k_policy": policy_id, "k_version": version}
    if at is None:
        return _POLICY_NEWEST, {"k_tool": tool, "k_policy": policy_id}
    # every paid call's: on the hot path's runner, its time bound as the column's
    return _POLICY_AT, {"k_tool": tool, "k_policy": policy_id, "k_at": at}


def policies_in_force(
    tx: Transaction, refs: Sequence[tuple[str, str, int | None]], at: datetime
) -> dict[tuple[str, str, int | None], StoredPolicy]:
    """The policy each ``(tool, policy id, version or None)`` names at ``at`` (:func:`policy`),
    read together (a page of tools is listed with the policy that will judge each): each one
    step of the policies' key, where reading every version of the page's tools' policies and
    matching each reference against them all grew with every version ever registered."""
    unique = list(dict.fromkeys(refs))
    found: dict[tuple[str, str, int | None], StoredPolicy] = {}
    with tx.ahead([policy_read(tool, pid, version, at=at) for tool, pid, version in unique]):
        for ref in unique:
            stored = policy(tx, *ref, at=at)
            if stored is not None:
                found[ref] = stored
    return found


def policy_count(tx: Transaction, tool: str) -> int:
    """How many policy versions ``tool`` has, every policy id of it (its range of the policies'
    index: at most its bound, whatever other tools registered)."""
    q = select(func.count()).where(call_policies.c.tool == tool)
    return int(tx.conn.execute(q).scalar_one())


def latest_policy(tx: Transaction, tool: str) -> StoredPolicy | None:
    """The policy most recently registered for ``tool``, or None."""
    q = (
        select(call_policies)
        .where(call_policies.c.tool == tool)
        .order_by(call_policies.c.id.desc())
        .limit(1)
    )
    row = tx.conn.execute(q).first()
    return _policy(row._mapping) if row else None


# --- calls --------------------------------------------------------------------------------


def add_call(
    tx: Transaction,
    *,
    record: Mapping[str, Any],
    contract_version: str,
    submitted_by: str,
    at: datetime,
    request: Mapping[str, Any],
    response: Mapping[str, Any],
    receipt_id: str | None,
    source: str,
    evidence: Mapping[str, Any] | None = None,
) -> StoredCall:
    """Store a verified call; a call id is verified once (``CALL_EXISTS``, raised where the
    insert is sent: on PostgreSQL with the transaction's next round trip, ``Transaction.later``).

    ``source`` says who supplied the response: ``gateway`` (adjudge itself forwarded the call
    and read the answer) or ``reported`` (a caller sent it); only the first feeds quality, and
    not when its provider called its own tool (:func:`~adjudge.calls.quality.enters_window`).
    ``evidence`` is what else the verification read (see :class:`StoredCall`).
    """
    call_id = str(record["call_id"])
    governing = record.get("policy") or {}
    error = record.get("error")
    error_kind = None if error is None else error["kind"]
    # The insert is the check: nothing is written when the id is taken (its only unique key),
    # seen where it is sent (on PostgreSQL with the transaction's next round trip).
    taken = one_row(
        lambda: Conflict(f"The call {call_id} was already verified.", code="CALL_EXISTS")
    )
    try:
        tx.later(
            _INSERT_CALL[tx.dialect],
            {
                "id": call_id,
                "provider": record["provider"],
                "tool": record["tool"],
                "contract_version": contract_version,
                "policy_id": governing.get("policy"),
                "policy_version": governing.get("version"),
                "submitted_by": submitted_by,
                "source": source,
                "at": at,
                "verdict": record.get("verdict"),
                "enforced": bool(record["effect"]["enforced"]),
                "error_kind": error_kind,
                "record": dict(record),
                "request": dict(request),
                "response": dict(response),
                "receipt_id": receipt_id,
                "evidence": None if evidence is None else dict(evidence),
            },
            check=taken,
        )
    except IntegrityError as exc:  # another constraint, where the insert runs at once
        raise ConcurrentUpdate("The same call is being verified; try again.") from exc
    day_counts.note_record(tx, str(record["provider"]), at, record)
    if enters_window(source, submitted_by, str(record["provider"])):  # its windows count it
        kind = counted_as(record.get("verdict"), bool(record["effect"]["enforced"]), error_kind)
        day_counts.note_observed(tx, str(record["provider"]), at, kind, 1)
    return StoredCall(
        call_id,
        str(record["provider"]),
        str(record["tool"]),
        submitted_by,
        at,
        record,
        request,
        response,
        receipt_id,
        source,
        evidence,
        contract_version,
    )


def call(tx: Transaction, call_id: str) -> StoredCall | None:
    """A stored call, or None."""
    rows = tx.rows(_CALL, {"k_id": call_id})
    return _call(rows[0]) if rows else None


def call_by_receipt(tx: Transaction, receipt_id: str) -> StoredCall | None:
    """The call a receipt was issued for, or None."""
    q = select(call_records).where(call_records.c.receipt_id == receipt_id)
    row = tx.conn.execute(q).first()
    return None if row is None else _call(row._mapping)


def _call(m: Any) -> StoredCall:
    return StoredCall(
        m["id"],
        m["provider"],
        m["tool"],
        m["submitted_by"],
        m["at"],
        m["record"],
        m["request"],
        m["response"],
        m["receipt_id"],
        m["source"],
        m["evidence"],
        m["contract_version"],
    )


def observations(
    tx: Transaction, provider: str, after: datetime, until: datetime
) -> list[Observation]:
    """What ``provider``'s observed calls in ``(after, until]`` contribute to its quality window.

    Only calls adjudge itself forwarded count: a reported call is a caller's word about what the
    provider answered, and nobody's word alone may strike a provider. Nor do the provider's own
    calls of its tool, whose passes would dilute its rate
    (:func:`~adjudge.calls.quality.enters_window`).
    """
    c = call_records.c
    verdict = func.coalesce(c.final_verdict, c.verdict).label("verdict")
    q = select(c.id, c.at, verdict, c.enforced, c.error_kind).where(
        and_(
            c.provider == provider,
            c.at > after,
            c.at <= until,
            c.source == "gateway",
            c.submitted_by != c.provider,
        )
    )
    return [
        Observation(
            provider=provider,
            call_id=r.id,
            at=r.at,
            verdict=None if r.verdict is None else CallVerdict(r.verdict),
            enforced=bool(r.enforced),
            error_kind=r.error_kind,
        )
        for r in tx.conn.execute(q)
    ]


# --- quality terms and penalty proposals --------------------------------------------------


def set_terms(tx: Transaction, provider: str, declared: Mapping[str, Any], at: datetime) -> None:
    """Store a provider's declared quality terms (the latest declaration holds): one upsert, so
    two declarations at once (two processes, a double click) both land, the later last."""
    dialect = postgresql if tx.dialect == "postgresql" else sqlite
    new = dialect.insert(call_provider_terms).values(
        provider=provider, terms=dict(declared), declared_at=at
    )
    tx.conn.execute(
        new.on_conflict_do_update(
            index_elements=[call_provider_terms.c.provider],
            set_={"terms": new.excluded.terms, "declared_at": new.excluded.declared_at},
        )
    )


def terms(tx: Transaction, provider: str) -> Mapping[str, Any] | None:
    """A provider's declared quality terms as declared, or None."""
    rows = tx.rows(_TERMS, {"k_provider": provider})
    return dict(rows[0]["terms"]) if rows else None


def every_terms(tx: Transaction) -> dict[str, Mapping[str, Any]]:
    """Every provider's declared quality terms, by provider (in its order): one read."""
    p = call_provider_terms.c
    q = select(p.provider, p.terms).order_by(p.provider)
    return {str(provider): dict(terms) for provider, terms in tx.conn.execute(q)}


def terms_read(provider: str) -> Read:
    """What :func:`terms` reads (to read it ahead with others: ``Transaction.ahead``)."""
    return _TERMS, {"k_provider": provider}


def add_proposal(tx: Transaction, provider: str, proposal: Mapping[str, Any], at: datetime) -> None:
    """Record a penalty proposal."""
    tx.conn.execute(
        insert(call_penalty_proposals).values(
            provider=provider, proposal=dict(proposal), proposed_at=at
        )
    )


def latest_proposal(tx: Transaction, provider: str) -> Mapping[str, Any] | None:
    """The provider's most recent penalty proposal, or None."""
    rows = tx.rows(_LATEST_PROPOSAL, {"k_provider": provider})
    return dict(rows[0]["proposal"]) if rows else None


# Built once: the statements of a paid call's transactions run on the driver's cursor (see
# Transaction.run).
_POLICY_VERSION = select(call_policies).where(
    and_(
        call_policies.c.tool == bindparam("k_tool"),
        call_policies.c.policy_id == bindparam("k_policy"),
        call_policies.c.version == bindparam("k_version"),
    )
)
_POLICY_NEWEST = (
    select(call_policies)
    .where(
        and_(
            call_policies.c.tool == bindparam("k_tool"),
            call_policies.c.policy_id == bindparam("k_policy"),
        )
    )
    .order_by(call_policies.c.version.desc())
    .limit(1)
)
_POLICY_AT = _POLICY_NEWEST.where(call_policies.c.registered_at <= bindparam("k_at"))
_CALL = select(call_records).where(call_records.c.id == bindparam("k_id"))
_INSERT_CALL = {
    "sqlite": sqlite.insert(call_records).on_conflict_do_nothing(),
    "postgresql": postgresql.insert(call_records).on_conflict_do_nothing(),
}
_TERMS = select(call_provider_terms.c.terms).where(
    call_provider_terms.c.provider == bindparam("k_provider")
)
_LATEST_PROPOSAL = (
    select(call_penalty_proposals.c.proposal)
    .where(call_penalty_proposals.c.provider == bindparam("k_provider"))
    .order_by(call_penalty_proposals.c.id.desc())
    .limit(1)
)
