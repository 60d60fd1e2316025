"""The money held under each holding prefix at the end of each UTC day (escrows, calls'
reservations, providers' holds), kept by every transfer, so the operator's dashboard reads a
window of days instead of summing every balance ever opened.

The days before this revision are backfilled from the ledger's lines: each day that moved held
money gets its end-of-day figure (on lane 0 of the receipt log: a day's figure is the sum of
its lanes'), so the dashboard reads the same history as before.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 12:30:00
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

#: As in adjudge.store.held_days, written out: a revision does not change with later code.
_PREFIXES = ("escrow:", "hold:", "held:")
_CURRENCY = "USDC"


def upgrade() -> None:
    """Apply this revision."""
    table = op.create_table(
        "held_days",
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("currency", sa.String(length=16), nullable=False),
        sa.Column("lane", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("held", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("prefix", "currency", "lane", "day", name=op.f("pk_held_days")),
    )
    conn = op.get_bind()
    moved: dict[tuple[str, str], int] = defaultdict(int)
    for prefix in _PREFIXES:
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = conn.execute(
            sa.text(
                "SELECT amount, at FROM ledger_entries WHERE account >= :low AND account < :high"
            ),
            {"low": prefix, "high": upper},
        )
        for amount, at in rows:
            moment = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            moved[prefix, moment.astimezone(UTC).date().isoformat()] += int(amount)
    running: dict[str, int] = defaultdict(int)
    out = []
    for (prefix, day), amount in sorted(moved.items()):
        running[prefix] += amount
        out.append(
            {
                "prefix": prefix,
                "currency": _CURRENCY,
                "lane": 0,
                "day": day,
                "held": running[prefix],
            }
        )
    if out:
        op.bulk_insert(table, out)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("held_days")
