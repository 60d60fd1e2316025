"""Sealed criteria: a task's commitment to its hidden criteria, the reveal that opened it, when
the reveal is due, and why a seal broke.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 04:00:00

Tasks posted before this revision are not sealed (null throughout).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("seal", sa.String(length=71), nullable=True))
        batch.add_column(sa.Column("reveal", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("reveal_due_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("seal_broken", sa.Text(), nullable=True))
    op.create_index(op.f("ix_tasks_reveal_due_at"), "tasks", ["reveal_due_at"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index(op.f("ix_tasks_reveal_due_at"), table_name="tasks")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("seal_broken")
        batch.drop_column("reveal_due_at")
        batch.drop_column("reveal")
        batch.drop_column("seal")
