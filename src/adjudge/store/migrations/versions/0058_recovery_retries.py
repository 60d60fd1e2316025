"""A paid call whose recovery failed waits for a retry out of the pending index.

The upkeep ends the paid calls a stopped process left pending, refunding their reservations. It
read every pending call past its cutoff, however many, and a call whose end failed was tried
again first on every pass. A failed call now records its failures in a row and the time it is
tried again (growing with each); the pending index holds only calls with no retry pending, and
the retries are read from an index of their own, which holds no other call.

Revision ID: 0058
Revises: 0057
Create Date: 2026-12-07 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0058"
down_revision = "0057"
branch_labels = None
depends_on = None


def _pending(where: str) -> None:
    op.drop_index("ix_gateway_calls_pending", table_name="gateway_calls")
    pending = sa.text(where)
    op.create_index(
        "ix_gateway_calls_pending",
        "gateway_calls",
        ["started_at"],
        sqlite_where=pending,
        postgresql_where=pending,
    )


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("gateway_calls", sa.Column("recover_failures", sa.Integer(), nullable=True))
    op.add_column("gateway_calls", sa.Column("recover_retry_at", sa.DateTime(), nullable=True))
    _pending("state = 'pending' AND recover_retry_at IS NULL")
    waiting = sa.text("recover_retry_at IS NOT NULL")
    op.create_index(
        "ix_gateway_calls_recover_retry_at",
        "gateway_calls",
        ["recover_retry_at"],
        sqlite_where=waiting,
        postgresql_where=waiting,
    )


def downgrade() -> None:
    """Revert this revision (a call waiting for a retry is pending in the index again)."""
    op.drop_index("ix_gateway_calls_recover_retry_at", table_name="gateway_calls")
    _pending("state = 'pending'")
    op.drop_column("gateway_calls", "recover_retry_at")
    op.drop_column("gateway_calls", "recover_failures")
