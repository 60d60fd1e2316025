"""The ledger's totals kept by day: each transfer counts its lines, money in and money out by
UTC day and memo, for everyone and for each account whose history grows (not a task's escrow or
a call's reservation, whose lines are few), so the ledger page's totals read days, not lines.

The lines before this revision are counted here, once (on lane 0 of the receipt log: a count is
the sum of its lanes'), so the totals read the same history as before.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-05 15:30:00
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

#: As in adjudge.store.day_counts and adjudge.store.ledger, written out: a revision does not
#: change with later code.
_FAMILY = "ledger"
_EVERYONE = ""
_ITEM_PREFIXES = ("escrow:", "hold:")
_BATCH = 5_000


def upgrade() -> None:
    """Apply this revision."""
    conn = op.get_bind()
    counts: Counter[tuple[str, str, str]] = Counter()
    rows = sa.text("SELECT account, memo, amount, at FROM ledger_entries")
    for account, memo, signed, at in conn.execute(rows.execution_options(yield_per=_BATCH)):
        day, amount = _day(at), int(signed)
        counts[_EVERYONE, day, f"lines {memo}"] += 1
        if amount > 0:
            counts[_EVERYONE, day, f"in {memo}"] += amount
        if not str(account).startswith(_ITEM_PREFIXES):
            counts[str(account), day, f"lines {memo}"] += 1
            counts[str(account), day, f"{'in' if amount > 0 else 'out'} {memo}"] += amount
    table = sa.table(
        "day_counts",
        sa.column("family", sa.String),
        sa.column("subject", sa.String),
        sa.column("day", sa.String),
        sa.column("name", sa.String),
        sa.column("lane", sa.Integer),
        sa.column("n", sa.BigInteger),
    )
    found = [
        {"family": _FAMILY, "subject": s, "day": d, "name": name, "lane": 0, "n": n}
        for (s, d, name), n in sorted(counts.items())
        if n
    ]
    for i in range(0, len(found), _BATCH):
        op.bulk_insert(table, found[i : i + _BATCH])


def downgrade() -> None:
    """Revert this revision."""
    op.execute(sa.text(f"DELETE FROM day_counts WHERE family = '{_FAMILY}'"))


def _day(at: Any) -> str:
    moment = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).date().isoformat()
