"""Counters for bounded actions (dry runs, criteria lints, answers stored under new
Idempotency-Keys), shared by the processes of one database.

A counter is one row per scope and window; the upkeep forgets windows that ended
(:func:`prune`), or every account's every hour of activity would be kept for good."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, bindparam, delete, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.store import schema as s
from adjudge.store.transaction import Transaction

#: The longest window any counter is kept over (the webhooks' test window is at most a week):
#: a window that started before this long ago has ended.
LONGEST_WINDOW = timedelta(days=7)


def window(now: datetime, span: timedelta) -> tuple[datetime, int]:
    """The fixed window of ``span`` that holds ``now`` (its start, the key :func:`use` counts
    under) and the whole seconds until the next one begins: a refusal's ``Retry-After``."""
    seconds = span.total_seconds()
    start = datetime.fromtimestamp(now.timestamp() // seconds * seconds, tz=now.tzinfo)
    return start, max(1, int((start + span - now).total_seconds()) + 1)


def count(tx: Transaction, scope: str, window: datetime) -> int:
    """How many times ``scope`` was used in the window starting at ``window``."""
    found = tx.rows(_COUNT, {"k_scope": scope, "k_window": window})
    return int(found[0]["used"]) if found else 0


def use(tx: Transaction, scope: str, window: datetime) -> int:
    """Count one more use of ``scope`` in its window; returns the new count (one statement)."""
    q = s.quotas
    dialect: Any = postgresql if tx.dialect == "postgresql" else sqlite
    stmt = dialect.insert(q).values(scope=scope, window=window, used=1)
    stmt = stmt.on_conflict_do_update(
        index_elements=[q.c.scope, q.c.window], set_={"used": q.c.used + 1}
    ).returning(q.c.used)
    return int(tx.conn.execute(stmt).scalar_one())


def count_at_commit(tx: Transaction, scope: str, window: datetime) -> int:
    """Count one more use of ``scope`` in its window as the transaction commits (:func:`flush`);
    returns the count before it, with this transaction's uses not yet written.

    For a counter every change of one account adds to: added at once (:func:`use`), its row
    stays locked until the commit, and a change that took it first and then waited for a
    balance at its commit (its credits) waited in a cycle with one that held that balance and
    wanted the counter. Written after the credits, it waits for nothing else. Two changes at
    once both read the count before either adds: the bound may be passed by the changes in
    flight at once, never more."""
    key = (scope, window)
    before = count(tx, scope, window) + tx.uses_due.get(key, 0)
    tx.uses_due[key] = tx.uses_due.get(key, 0) + 1
    return before


def flush(tx: Transaction) -> None:
    """Add the transaction's uses (:func:`count_at_commit`) to their counters, in one order
    (by scope and window), as it commits: held for the commit's round trip."""
    if not tx.uses_due:
        return
    due = sorted(tx.uses_due.items())
    tx.uses_due = {}
    rows = [{"scope": sc, "window": w, "used": n} for (sc, w), n in due]
    tx.later_many(_ADD[tx.dialect], rows)


def _add(dialect: str) -> Any:
    """Add ``used`` to a counter, creating its row at that count if missing."""
    module: Any = postgresql if dialect == "postgresql" else sqlite
    stmt = module.insert(s.quotas)
    return stmt.on_conflict_do_update(
        index_elements=[s.quotas.c.scope, s.quotas.c.window],
        set_={"used": s.quotas.c.used + stmt.excluded.used},
    )


_ADD = {dialect: _add(dialect) for dialect in ("sqlite", "postgresql")}
#: A counter's count, read on the hot path (built once: every keyed change reads it).
_COUNT = select(s.quotas.c.used).where(
    and_(s.quotas.c.scope == bindparam("k_scope"), s.quotas.c.window == bindparam("k_window"))
)


def prune(tx: Transaction, before: datetime, limit: int) -> int:
    """Forget at most ``limit`` counters of windows that started before ``before``, oldest
    first (on the window's index); how many."""
    q = s.quotas
    oldest = select(q.c.scope, q.c.window).where(q.c.window < before).order_by(q.c.window)
    rows = [tuple(r) for r in tx.conn.execute(oldest.limit(limit))]
    if rows:
        tx.conn.execute(delete(q).where(tuple_(q.c.scope, q.c.window).in_(rows)))
    return len(rows)
