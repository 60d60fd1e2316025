"""Held takes: how many tasks each agent holds taken and not yet submitted.

One counter row per agent, moved by one statement in the transaction of each take's start and
end (:class:`~adjudge.market.TakeHeld`, :class:`~adjudge.market.TakeEnded`), so checking the
limit costs one row whatever an agent's history. The start is a conditional upsert, as the
ledger's debit is a conditional update: two takes racing for an agent's last place cannot both
get it (on PostgreSQL the second waits for the first's row lock and then finds the row full; on
SQLite writers are serialized).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.errors import StateError
from adjudge.market import Status
from adjudge.store import schema as s
from adjudge.store.transaction import Transaction

log = logging.getLogger("adjudge.store")


def hold(tx: Transaction, agent: str, limit: int) -> int:
    """Count one more take for ``agent``; returns its new count.

    ``TAKE_LIMIT_REACHED`` (and nothing counted) when it already holds ``limit``.
    """
    found = tx.conn.execute(_HOLD[tx.dialect], {"agent": agent, "limit": limit}).fetchone()
    if found is None:
        raise StateError(
            f"You hold {limit} tasks taken and not yet submitted, the most this service allows "
            "at once: submit one of them (or let its take end) before taking another.",
            code="TAKE_LIMIT_REACHED",
        )
    return int(found[0])


def end(tx: Transaction, agent: str) -> None:
    """Count one take fewer for ``agent`` (never below zero)."""
    if tx.conn.execute(_END, {"k_agent": agent}).rowcount != 1:
        # Every end follows its start in the lifecycle; a miss means a counter out of step with
        # the tasks (a bug, or a row edited by hand). Never refuse the agent's step for it.
        log.error("agent %s ended a take it was not counted as holding", agent)


def held(tx: Transaction, agent: str) -> int:
    """How many tasks ``agent`` holds taken and not yet submitted, as counted."""
    q = select(s.agent_takes.c.held).where(s.agent_takes.c.agent == agent)
    return int(tx.conn.execute(q).scalar_one_or_none() or 0)


def counted(tx: Transaction) -> dict[str, int]:
    """Every agent's counter that is not zero (for audits)."""
    t = s.agent_takes
    return {r.agent: int(r.held) for r in tx.conn.execute(select(t).where(t.c.held != 0))}


def recount(tx: Transaction) -> dict[str, int]:
    """The same counts from the tasks themselves (a full scan: for audits and tests only)."""
    t = s.tasks
    q = (
        select(t.c.agent, func.count())
        .where(t.c.status == Status.ASSIGNED.value, t.c.take_ends_at.is_not(None))
        .group_by(t.c.agent)
    )
    return {r[0]: int(r[1]) for r in tx.conn.execute(q)}


def _hold(dialect: str) -> Any:
    """Insert the agent's row at 1, or add one to it while it is under the limit; returns the
    new count, or no row when the limit is reached."""
    module: Any = postgresql if dialect == "postgresql" else sqlite
    t = s.agent_takes
    stmt = module.insert(t).values(agent=bindparam("agent"), held=1)
    return stmt.on_conflict_do_update(
        index_elements=[t.c.agent],
        set_={"held": t.c.held + 1},
        where=t.c.held < bindparam("limit"),
    ).returning(t.c.held)


_HOLD = {dialect: _hold(dialect) for dialect in ("sqlite", "postgresql")}
_END = (
    update(s.agent_takes)
    .where(s.agent_takes.c.agent == bindparam("k_agent"))
    .where(s.agent_takes.c.held > 0)
    .values(held=s.agent_takes.c.held - 1)
)
