"""Counters for bounded actions (dry runs, criteria lints), shared by the processes of one
database."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.store import schema as s
from adjudge.store.transaction import Transaction


def window(now: datetime, span: timedelta) -> tuple[datetime, int]:
    """The fixed window of ``span`` that holds ``now`` (its start, the key :func:`use` counts
    under) and the whole seconds until the next one begins: a refusal's ``Retry-After``."""
    seconds = span.total_seconds()
    start = datetime.fromtimestamp(now.timestamp() // seconds * seconds, tz=now.tzinfo)
    return start, max(1, int((start + span - now).total_seconds()) + 1)


def count(tx: Transaction, scope: str, window: datetime) -> int:
    """How many times ``scope`` was used in the window starting at ``window``."""
    q = s.quotas
    found = tx.conn.execute(
        select(q.c.used).where(and_(q.c.scope == scope, q.c.window == window))
    ).scalar_one_or_none()
    return int(found or 0)


def use(tx: Transaction, scope: str, window: datetime) -> int:
    """Count one more use of ``scope`` in its window; returns the new count (one statement)."""
    q = s.quotas
    dialect: Any = postgresql if tx.dialect == "postgresql" else sqlite
    stmt = dialect.insert(q).values(scope=scope, window=window, used=1)
    stmt = stmt.on_conflict_do_update(
        index_elements=[q.c.scope, q.c.window], set_={"used": q.c.used + 1}
    ).returning(q.c.used)
    return int(tx.conn.execute(stmt).scalar_one())
