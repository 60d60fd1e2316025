"""Paid calls whose meaning judges are asked after the answer: the queue of their judgments.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-04 13:00:00

No call before this revision was judged after its answer: the queue starts empty.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "meaning_queue",
        sa.Column("call_id", sa.String(length=64), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("policy_digest", sa.String(length=71), nullable=False),
        sa.Column("response_digest", sa.String(length=71), nullable=False),
        sa.Column("receipt_id", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("queued_at", sa.DateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("judged_at", sa.DateTime(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.Column("final_receipt_id", sa.String(length=64), nullable=True),
        sa.Column("verification", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("call_id", name=op.f("pk_meaning_queue")),
    )
    op.create_index("ix_meaning_queue_state", "meaning_queue", ["state", "queued_at"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_meaning_queue_state", table_name="meaning_queue")
    op.drop_table("meaning_queue")
