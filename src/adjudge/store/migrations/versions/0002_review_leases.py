"""Review leases: which submission a verifier worker holds, and how often its model failed.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 19:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "review_leases",
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("locked_until", sa.DateTime(), nullable=False),
        sa.Column("gave_up", sa.Boolean(), nullable=False),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_review_leases_task_id_tasks")
        ),
        sa.PrimaryKeyConstraint("task_id", "attempt", name=op.f("pk_review_leases")),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("review_leases")
