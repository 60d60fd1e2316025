"""Agent reviews that could not be grounded go to the poster: a task's ``routed`` flag, and a
verdict row that decided nothing (``passed`` null, kind ``routed``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("routed", sa.Boolean(), nullable=False, server_default="0"))
    with op.batch_alter_table("verdicts") as batch:
        batch.alter_column("passed", existing_type=sa.Boolean(), nullable=True)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("verdicts") as batch:
        batch.alter_column("passed", existing_type=sa.Boolean(), nullable=False)
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("routed")
