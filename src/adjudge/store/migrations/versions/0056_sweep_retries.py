"""A task whose upkeep sweep failed waits for a retry out of the sweeps' due order.

The lapse and overdue-reveal sweeps take the oldest due tasks, a bounded batch a pass. A task
whose lapse failed on every pass (logged, tried again) kept its place at the head of the order:
a batch's worth of them would have held every task due after them for good. A failed task now
records its failures and the time it is tried again (growing with each), and the sweeps' due
indexes hold only tasks with no retry pending; the retries are read from an index of their own.

Revision ID: 0056
Revises: 0055
Create Date: 2026-12-07 07:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0056"
down_revision = "0055"
branch_labels = None
depends_on = None

_DUE = ("take_ends_at", "reveal_due_at")


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("tasks", sa.Column("sweep_failures", sa.Integer(), nullable=True))
    op.add_column("tasks", sa.Column("sweep_retry_at", sa.DateTime(), nullable=True))
    for column in _DUE:
        due = sa.text(f"{column} IS NOT NULL AND sweep_retry_at IS NULL")
        op.drop_index(f"ix_tasks_{column}", table_name="tasks")
        op.create_index(
            f"ix_tasks_{column}", "tasks", [column], sqlite_where=due, postgresql_where=due
        )
    waiting = sa.text("sweep_retry_at IS NOT NULL")
    op.create_index(
        "ix_tasks_sweep_retry_at",
        "tasks",
        ["sweep_retry_at"],
        sqlite_where=waiting,
        postgresql_where=waiting,
    )


def downgrade() -> None:
    """Revert this revision (a task waiting for a retry is due again at once)."""
    op.drop_index("ix_tasks_sweep_retry_at", table_name="tasks")
    for column in _DUE:
        has_one = sa.text(f"{column} IS NOT NULL")
        op.drop_index(f"ix_tasks_{column}", table_name="tasks")
        op.create_index(
            f"ix_tasks_{column}", "tasks", [column], sqlite_where=has_one, postgresql_where=has_one
        )
    op.drop_column("tasks", "sweep_retry_at")
    op.drop_column("tasks", "sweep_failures")
