"""Reports of bad call results: one per call, filed by its caller, ruled once by an admin.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 16:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "call_reports",
        sa.Column("call_id", sa.String(length=200), nullable=False),
        sa.Column("provider", sa.String(length=200), nullable=False),
        sa.Column("filed_by", sa.String(length=64), nullable=False),
        sa.Column("filed_at", sa.DateTime(), nullable=False),
        sa.Column("reason", sa.String(length=2000), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("ruled_by", sa.String(length=64), nullable=True),
        sa.Column("ruled_at", sa.DateTime(), nullable=True),
        sa.Column("ruling", sa.JSON(), nullable=True),
        sa.Column("refunded_minor", sa.BigInteger(), nullable=True),
        sa.Column("receipt_id", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["call_id"], ["call_records.id"]),
        sa.ForeignKeyConstraint(["filed_by"], ["accounts.id"]),
        sa.ForeignKeyConstraint(["ruled_by"], ["accounts.id"]),
        sa.PrimaryKeyConstraint("call_id"),
    )
    for column in ("provider", "filed_at", "status"):
        op.create_index(op.f(f"ix_call_reports_{column}"), "call_reports", [column])


def downgrade() -> None:
    """Revert this revision."""
    for column in ("provider", "filed_at", "status"):
        op.drop_index(op.f(f"ix_call_reports_{column}"), table_name="call_reports")
    op.drop_table("call_reports")
