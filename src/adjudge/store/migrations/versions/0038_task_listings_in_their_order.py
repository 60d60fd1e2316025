"""The task listings by status, poster and agent, each indexed in the listing's order.

A listing of tasks filtered by a status, a poster or an agent is newest first, a page at a
time; with an index on the filter's column alone, each page read every task the filter holds
and sorted them. Indexed as ``(column, posted_at DESC, id)``, a page walks one index range. The
poster's and the agent's replace their indexes of one column, which they also serve.

Revision ID: 0038
Revises: 0037
Create Date: 2026-12-06 13:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

_COLUMNS = ("status", "poster", "agent")


def upgrade() -> None:
    """Apply this revision."""
    for column in ("poster", "agent"):
        op.drop_index(f"ix_tasks_{column}", table_name="tasks")
    for column in _COLUMNS:
        newest: list[str | sa.TextClause] = [column, sa.text("posted_at DESC"), "id"]
        op.create_index(f"ix_tasks_{column}_newest", "tasks", newest)


def downgrade() -> None:
    """Revert this revision."""
    for column in _COLUMNS:
        op.drop_index(f"ix_tasks_{column}_newest", table_name="tasks")
    for column in ("poster", "agent"):
        op.create_index(f"ix_tasks_{column}", "tasks", [column])
