"""Reports of bad call results in the store: one per call, filed by its caller, ruled once.

A report is a review request, not a judgment: filing it changes nothing about the call, its
money or its provider's quality. A ruling is written with its receipt (and, when upheld, the
refund that receipt proves) in one transaction by :mod:`adjudge.app.calls`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    ForeignKey,
    Index,
    String,
    Table,
    func,
    insert,
    select,
)
from sqlalchemy.exc import IntegrityError

from adjudge.errors import Conflict, StateError
from adjudge.store import schema as s
from adjudge.store.calls import call_records
from adjudge.store.pages import past
from adjudge.store.transaction import ConcurrentUpdate, Transaction

__all__ = ["StoredReport", "add", "by_call", "count_upheld", "page", "rule"]

#: Report states: waiting for a ruling, or ruled one way.
OPEN, UPHELD, DISMISSED = "open", "upheld", "dismissed"

call_reports = Table(
    "call_reports",
    s.metadata,
    Column("call_id", String(200), ForeignKey("call_records.id"), primary_key=True),
    Column("provider", String(200), nullable=False),  # ix_call_reports_provider_status
    Column("filed_by", String(64), ForeignKey("accounts.id"), nullable=False),
    Column("filed_at", s.UTCDateTime, nullable=False, index=True),
    Column("reason", String(2000), nullable=False),
    Column("status", String(16), nullable=False),  # ix_call_reports_status_filed
    Column("ruled_by", String(64), ForeignKey("accounts.id"), nullable=True),
    Column("ruled_at", s.UTCDateTime, nullable=True),
    Column("ruling", JSON, nullable=True),  # the ruling's reasons
    Column("refunded_minor", BigInteger, nullable=True),
    Column("receipt_id", String(64), nullable=True),  # the ruling's receipt, when upheld
)
# The reports of a status in their listing's order, oldest first (page): a page walks one range.
Index(
    "ix_call_reports_status_filed",
    call_reports.c.status,
    call_reports.c.filed_at,
    call_reports.c.call_id,
)
# A provider's reports by status and ruling time: its upheld reports of a quality window are
# one range of it (count_upheld), however many reports it ever had.
Index(
    "ix_call_reports_provider_status",
    call_reports.c.provider,
    call_reports.c.status,
    call_reports.c.ruled_at,
)


@dataclass(frozen=True)
class StoredReport:
    """A report and, once ruled, its ruling."""

    call_id: str
    provider: str
    filed_by: str
    filed_at: datetime
    reason: str
    status: str
    ruled_by: str | None
    ruled_at: datetime | None
    ruling: Sequence[str] | None
    refunded_minor: int | None
    receipt_id: str | None


def _report(row: Any) -> StoredReport:
    return StoredReport(
        row.call_id,
        row.provider,
        row.filed_by,
        row.filed_at,
        row.reason,
        row.status,
        row.ruled_by,
        row.ruled_at,
        None if row.ruling is None else tuple(row.ruling),
        row.refunded_minor,
        row.receipt_id,
    )


def add(
    tx: Transaction, *, call_id: str, provider: str, by: str, reason: str, at: datetime
) -> StoredReport:
    """File the one report a call may have (``REPORT_EXISTS`` for a second; two racing
    filings: one wins, the other is retried by the unit of work and finds it)."""
    if by_call(tx, call_id) is not None:
        raise Conflict(
            f"The call {call_id} was already reported; one report per call.",
            code="REPORT_EXISTS",
        )
    try:
        tx.conn.execute(
            insert(call_reports).values(
                call_id=call_id,
                provider=provider,
                filed_by=by,
                filed_at=at,
                reason=reason,
                status=OPEN,
            )
        )
    except IntegrityError as exc:
        raise ConcurrentUpdate("The call is being reported at the same time; try again.") from exc
    found = by_call(tx, call_id)
    assert found is not None
    return found


def by_call(tx: Transaction, call_id: str) -> StoredReport | None:
    """The report of a call, or None."""
    row = tx.conn.execute(select(call_reports).where(call_reports.c.call_id == call_id)).first()
    return None if row is None else _report(row)


def rule(
    tx: Transaction,
    call_id: str,
    *,
    upheld: bool,
    by: str,
    reasons: Sequence[str],
    at: datetime,
    refunded_minor: int | None,
    receipt_id: str | None,
) -> StoredReport:
    """Rule on an open report, once: a lost race or a second ruling is ``REPORT_RULED``."""
    t = call_reports.c
    done = tx.conn.execute(
        call_reports.update()
        .where(t.call_id == call_id, t.status == OPEN)
        .values(
            status=UPHELD if upheld else DISMISSED,
            ruled_by=by,
            ruled_at=at,
            ruling=list(reasons),
            refunded_minor=refunded_minor,
            receipt_id=receipt_id,
        )
    )
    if done.rowcount != 1:
        raise StateError(f"The report of {call_id} was already ruled on.", code="REPORT_RULED")
    found = by_call(tx, call_id)
    assert found is not None
    return found


def page(
    tx: Transaction, *, status: str | None, after: str | None, limit: int
) -> list[StoredReport]:
    """Reports oldest first (by filing time, then call id), after the cursor's call id."""
    t = call_reports.c
    q = select(call_reports)
    if status is not None:
        q = q.where(t.status == status)
    if after is not None:
        mark = select(t.filed_at).where(t.call_id == after).scalar_subquery()
        q = q.where(past(t.filed_at, t.call_id, mark, after, newest_first=False))
    rows = tx.conn.execute(q.order_by(t.filed_at, t.call_id).limit(limit)).all()
    return [_report(r) for r in rows]


def count_upheld(tx: Transaction, provider: str, since: datetime) -> int:
    """How many reports against a provider were upheld since a time (for its quality view),
    of the calls its quality window may count (:func:`~adjudge.calls.quality.enters_window`):
    calls adjudge forwarded itself, not its own calls of its tool. A reported call's answer is
    the word of the account that sent it, which an admin's ruling cannot check against anything
    the service observed; counted here, an invented answer reported and upheld stood on the
    provider's public record. Each upheld report of the range is joined to its call by the
    call's key, so the count still costs the provider's upheld reports of the window."""
    t, c = call_reports.c, call_records.c
    q = (
        select(func.count())
        .select_from(call_reports.join(call_records, c.id == t.call_id))
        .where(
            t.provider == provider,
            t.status == UPHELD,
            t.ruled_at >= since,
            c.source == "gateway",
            c.submitted_by != c.provider,
        )
    )
    return int(tx.conn.execute(q).scalar_one())
