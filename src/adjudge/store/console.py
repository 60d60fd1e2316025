"""What the console's dashboards read: a window's ledger lines, calls, verdicts and call records,
the balances held under each holding prefix, and a poster's tasks by state.

Each read is bounded by its window through an index on its time (``ix_ledger_entries_at``,
``gateway_calls.started_at``, ``ix_verdicts_at``, ``call_records.at``): its cost grows with
the activity inside the window, not with the history before it. The money held at each day's
end is read from the daily figures the ledger keeps as it moves (``held_days``): the window's
rows and the last one before it, however many escrows and holds were ever opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from adjudge.store import calls as calls_db
from adjudge.store import gateway as gateway_db
from adjudge.store import held_days
from adjudge.store import schema as s
from adjudge.store.transaction import Transaction


def ledger_lines_since(tx: Transaction, start: datetime) -> list[Any]:
    """Every ledger line from ``start`` on: (at, account, amount, memo)."""
    e = s.ledger_entries
    q = select(e.c.at, e.c.account, e.c.amount, e.c.memo).where(e.c.at >= start)
    return list(tx.conn.execute(q))


def held_by_day(
    tx: Transaction, prefixes: Sequence[str], days: Sequence[str]
) -> dict[str, list[int]]:
    """The money held under each prefix (``escrow:``, …) at the end of each of ``days``: the
    running daily figures every transfer keeps (:mod:`adjudge.store.held_days`)."""
    return held_days.figures(tx, prefixes, days)


def calls_since(tx: Transaction, start: datetime, *, provider: str | None = None) -> list[Any]:
    """Forwarded calls started from ``start`` on: (started_at, verdict, status, provider)."""
    c = gateway_db.calls
    q = select(c.c.started_at, c.c.verdict, c.c.status, c.c.provider).where(c.c.started_at >= start)
    if provider is not None:
        q = q.where(c.c.provider == provider)
    return list(tx.conn.execute(q))


def verdicts_since(tx: Transaction, start: datetime, *, poster: str | None = None) -> list[Any]:
    """Task verdicts and rulings reached from ``start`` on: (at, kind, passed, detail); only
    the tasks ``poster`` posted, when named."""
    v, t = s.verdicts, s.tasks
    q = select(v.c.at, v.c.kind, v.c.passed, v.c.detail).where(v.c.at >= start)
    if poster is not None:
        q = q.join(t, t.c.id == v.c.task_id).where(t.c.poster == poster)
    return list(tx.conn.execute(q))


def call_records_since(tx: Transaction, start: datetime, provider: str) -> list[Any]:
    """A provider's verified calls from ``start`` on: (at, verdict, record); the verdict a
    judgment after the answer gave, where one superseded the record's."""
    r = calls_db.call_records
    verdict = func.coalesce(r.c.final_verdict, r.c.verdict).label("verdict")
    q = select(r.c.at, verdict, r.c.record).where(r.c.provider == provider, r.c.at >= start)
    return list(tx.conn.execute(q))


def tasks_by_status(tx: Transaction, poster: str) -> dict[str, int]:
    """How many of ``poster``'s tasks are in each state."""
    t = s.tasks
    q = select(t.c.status, func.count()).where(t.c.poster == poster).group_by(t.c.status)
    return {str(status): int(n) for status, n in tx.conn.execute(q)}


def providers_with_terms(tx: Transaction) -> list[str]:
    """Every provider that declared quality terms."""
    p = calls_db.call_provider_terms
    return [str(r[0]) for r in tx.conn.execute(select(p.c.provider).order_by(p.c.provider))]
