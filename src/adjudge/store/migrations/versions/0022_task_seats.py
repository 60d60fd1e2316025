"""A panel's seats by verifier: a panel verifier's own task listing reads an index.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04 14:40:00

The seats of panels posted before this revision are written from each task's ``panel``.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    seats = op.create_table(
        "task_seats",
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("verifier", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_task_seats_task_id_tasks")
        ),
        sa.PrimaryKeyConstraint("task_id", "verifier", name=op.f("pk_task_seats")),
    )
    op.create_index(op.f("ix_task_seats_verifier"), "task_seats", ["verifier"])
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT id, panel FROM tasks WHERE panel IS NOT NULL"))
    backfill = []
    for task_id, panel in rows:
        seated = json.loads(panel) if isinstance(panel, str) else panel
        backfill += [{"task_id": task_id, "verifier": seat[0]} for seat in seated or ()]
    if backfill:
        op.bulk_insert(seats, backfill)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index(op.f("ix_task_seats_verifier"), table_name="task_seats")
    op.drop_table("task_seats")
