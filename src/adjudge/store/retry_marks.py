"""The marks the upkeep leaves on a row whose step failed: its failures in a row and when it is
tried again.

A task's sweep, a held charge's release and an interrupted call's end each keep the two columns
on their own rows (revisions 0056-0058), and each step's due index holds only rows without a
retry pending; these are the reads and writes of the marks, the same for the three.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, ColumnElement, bindparam, select, update

from adjudge.store.transaction import Transaction


@dataclass(frozen=True)
class RetryMarks:
    """The marks kept in ``failures`` and ``retry_at`` of the rows keyed by ``key``; with
    ``live``, only a row it holds for (still due) takes one: a row that ended meanwhile, by
    another process, is left without a mark nothing would clear."""

    key: Column[Any]
    failures: Column[Any]
    retry_at: Column[Any]
    live: ColumnElement[bool] | None = None

    def failures_of(self, tx: Transaction, keys: Sequence[str]) -> dict[str, int]:
        """How many times in a row each row's step failed (0: none recorded)."""
        q = select(self.key, self.failures).where(self.key.in_(list(keys)))
        return {str(k): int(n or 0) for k, n in tx.conn.execute(q)}

    def defer(self, tx: Transaction, retries: Mapping[str, tuple[int, datetime]]) -> None:
        """Record each row's failed step: its failures in a row and when it is tried again (out
        of its step's due order until then)."""
        if not retries:
            return
        q = (
            update(self.key.table)
            .where(self.key == bindparam("k_key"))
            .values({self.failures: bindparam("v_failures"), self.retry_at: bindparam("v_at")})
        )
        if self.live is not None:
            q = q.where(self.live)
        rows = [{"k_key": k, "v_failures": n, "v_at": at} for k, (n, at) in retries.items()]
        tx.conn.execute(q, rows)

    def clear(self, tx: Transaction, key: str) -> None:
        """Clear a row's mark, its step tried again: back in the due order (a row without one
        is not written)."""
        q = update(self.key.table).where(self.key == key, self.retry_at.is_not(None))
        tx.conn.execute(q.values({self.failures: None, self.retry_at: None}))
