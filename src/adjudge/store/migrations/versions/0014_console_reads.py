"""What the console reads: the ledger page's indexes (its lines newest first within an
account, within a kind — the memo — and across the whole ledger, so a page walks one index
range however long the history grows), the dashboards' window of verdicts, and each
webhook delivery's attempts.

Deliveries attempted before this revision have no attempt history (their last attempt is on
the delivery itself).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_INDEXES = {
    "ix_ledger_entries_account_at": ["account", "at", "id"],
    "ix_ledger_entries_memo_at": ["memo", "at", "id"],
    "ix_ledger_entries_at": ["at", "id"],
}


def upgrade() -> None:
    """Apply this revision."""
    for name, columns in _INDEXES.items():
        op.create_index(name, "ledger_entries", columns)
    op.create_index("ix_verdicts_at", "verdicts", ["at"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.String(length=40), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(length=500), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_attempts_delivery_id", "webhook_attempts", ["delivery_id"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_webhook_attempts_delivery_id", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    op.drop_index("ix_verdicts_at", table_name="verdicts")
    for name in _INDEXES:
        op.drop_index(name, table_name="ledger_entries")
