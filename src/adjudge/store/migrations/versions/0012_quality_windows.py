"""Each provider's quality window kept as running counts, and the index that expires calls
from it by time.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 02:00:00

No rows are written here: a provider's counts are built by one recount of its window on its
next observed call (or read by a recount until then).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "quality_windows",
        sa.Column("provider", sa.String(length=200), nullable=False),
        sa.Column("span_seconds", sa.BigInteger(), nullable=False),
        sa.Column("edge", sa.DateTime(), nullable=False),
        sa.Column("passes", sa.Integer(), nullable=False),
        sa.Column("fails", sa.Integer(), nullable=False),
        sa.Column("not_counted", sa.Integer(), nullable=False),
        sa.Column("request_errors", sa.Integer(), nullable=False),
        sa.Column("system_errors", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("provider", name=op.f("pk_quality_windows")),
    )
    op.create_index("ix_call_records_provider_at", "call_records", ["provider", "at"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_call_records_provider_at", table_name="call_records")
    op.drop_table("quality_windows")
