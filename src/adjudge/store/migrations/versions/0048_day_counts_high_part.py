"""Each day count in two parts: ``n`` its low 32 bits, ``high`` the rest.

A count of money (the ledger's money in by memo, the flows charged, refunded, paid out) grows
with every transfer for all time, while only the money in the ledger is bounded (the deposits'
total, 2^63 - 1): a poster that posted and cancelled two tasks of 2^62 left the service's
"money in fund" at 2^63 - 1, and from then on every funding anywhere failed on PostgreSQL
(bigint out of range, rolling the transfer back with it) while SQLite turned the sums into
floats. Kept as ``high * 2^32 + n`` with ``0 <= n < 2^32``, each addition carries into
``high``, which holds 2^63 times 2^32.

Revision ID: 0048
Revises: 0047
Create Date: 2026-12-06 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0048"
down_revision = "0047"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.add_column(
        "day_counts",
        sa.Column("high", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    )
    # Both databases shift a negative integer arithmetically and take its bits in two's
    # complement: the high part is the floor of n / 2^32, the low part what is left.
    op.execute(sa.text("UPDATE day_counts SET high = n >> 32, n = n & 4294967295"))


def downgrade() -> None:
    """Revert this revision (a count past 64 bits cannot be said in one column)."""
    op.execute(sa.text("UPDATE day_counts SET n = n + high * 4294967296"))
    op.drop_column("day_counts", "high")
