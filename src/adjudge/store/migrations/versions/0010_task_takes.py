"""Takes: a task's take window and lapsed agents, each agent's count of held takes, and the
record of every lapse.

The counter starts from the tasks as they stand: every assigned task counts for its agent until
its deadline (tasks posted before had no window).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("take_window_hours", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("take_ends_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("lapsed", sa.JSON(), nullable=True))
    op.create_index(op.f("ix_tasks_take_ends_at"), "tasks", ["take_ends_at"])
    op.create_table(
        "agent_takes",
        sa.Column("agent", sa.String(length=64), nullable=False),
        sa.Column("held", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent"], ["accounts.id"], name=op.f("fk_agent_takes_agent_accounts")
        ),
        sa.PrimaryKeyConstraint("agent", name=op.f("pk_agent_takes")),
    )
    op.create_table(
        "task_lapses",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("agent", sa.String(length=64), nullable=False),
        sa.Column("taken_at", sa.DateTime(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_task_lapses_task_id_tasks")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_lapses")),
    )
    op.create_index(op.f("ix_task_lapses_task_id"), "task_lapses", ["task_id"])
    # The takes already held: each counts until its task's deadline.
    op.execute(
        "UPDATE tasks SET take_ends_at = deadline WHERE status = 'assigned' AND agent IS NOT NULL"
    )
    op.execute(
        "INSERT INTO agent_takes (agent, held) SELECT agent, COUNT(*) FROM tasks "
        "WHERE status = 'assigned' AND agent IS NOT NULL GROUP BY agent"
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index(op.f("ix_task_lapses_task_id"), table_name="task_lapses")
    op.drop_table("task_lapses")
    op.drop_table("agent_takes")
    op.drop_index(op.f("ix_tasks_take_ends_at"), table_name="tasks")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("lapsed")
        batch.drop_column("take_ends_at")
        batch.drop_column("take_window_hours")
