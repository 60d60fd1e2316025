"""A provider's own calls of its tools leave its quality window.

A provider calling its own tool through the gateway added passes to the window it is judged on,
diluting its failure rate below what a penalty proposal needs. Those calls no longer count
(``adjudge.calls.quality.enters_window``): the observed calls' daily counts (``day_counts``,
family ``quality``) are counted again without them, on lane 0 as revision 0026 counted them,
and every provider's running counts are dropped, to be rebuilt by one recount at its next call.

Revision ID: 0055
Revises: 0054
Create Date: 2026-12-07 06:00:00
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0055"
down_revision = "0054"
branch_labels = None
depends_on = None

_BATCH = 5_000


def upgrade() -> None:
    """Apply this revision."""
    _count_again(own_calls=False)


def downgrade() -> None:
    """Revert this revision (the provider's own calls counted again)."""
    _count_again(own_calls=True)


def _count_again(*, own_calls: bool) -> None:
    """The ``quality`` daily counts from the observed calls, the provider's own with
    ``own_calls``; the running windows dropped (rebuilt from these at each next call)."""
    conn = op.get_bind()
    sql = (
        "SELECT provider, at, coalesce(final_verdict, verdict), enforced, error_kind "
        "FROM call_records WHERE source = 'gateway'"
    )
    if not own_calls:
        sql += " AND submitted_by <> provider"
    counts: Counter[tuple[str, str, str]] = Counter()
    for provider, at, verdict, enforced, error_kind in conn.execute(
        sa.text(sql).execution_options(yield_per=_BATCH)
    ):
        counts[str(provider), _day(at), _counted_as(verdict, enforced, error_kind)] += 1
    conn.execute(sa.text("DELETE FROM day_counts WHERE family = 'quality'"))
    conn.execute(sa.text("DELETE FROM quality_windows"))
    rows = [
        {"subject": subject, "day": day, "name": name, "n": n}
        for (subject, day, name), n in sorted(counts.items())
    ]
    insert = sa.text(
        "INSERT INTO day_counts (family, subject, day, name, lane, n, high) "
        "VALUES ('quality', :subject, :day, :name, 0, :n, 0)"
    )
    for i in range(0, len(rows), _BATCH):
        conn.execute(insert, rows[i : i + _BATCH])


def _day(at: Any) -> str:
    moment = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).date().isoformat()


def _counted_as(verdict: str | None, enforced: Any, error_kind: str | None) -> str:
    """As ``adjudge.calls.quality.counted_as``, written out: a revision does not change with
    later code."""
    if error_kind is not None:
        return "request_errors" if error_kind == "request_error" else "system_errors"
    if enforced and verdict == "PASS":
        return "passes"
    if enforced and verdict == "FAIL":
        return "fails"
    return "not_counted"
