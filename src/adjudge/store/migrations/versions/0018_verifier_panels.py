"""Agent review by a panel of verifiers (k of n): the panel and its quorum on the task, the
votes on its latest submission, and every vote cast, one per verifier per submission.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04 13:00:00

Tasks posted before this revision name one verifier or none (null throughout).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("panel", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("quorum", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("votes", sa.JSON(), nullable=True))
    op.create_table(
        "task_votes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("verifier", sa.String(length=64), nullable=False),
        sa.Column("verifier_key", sa.String(length=64), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("check", sa.JSON(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_task_votes_task_id_tasks")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_votes")),
        sa.UniqueConstraint("task_id", "attempt", "verifier", name="uq_task_votes_vote"),
    )
    op.create_index(op.f("ix_task_votes_task_id"), "task_votes", ["task_id"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index(op.f("ix_task_votes_task_id"), table_name="task_votes")
    op.drop_table("task_votes")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("votes")
        batch.drop_column("quorum")
        batch.drop_column("panel")
