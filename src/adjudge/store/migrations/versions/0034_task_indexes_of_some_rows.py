"""A task's named verifier and deadlines indexed only where it has one.

Most tasks have no named verifier (an auto task's), no take running (it ended or was never
taken) and no reveal due (it is not sealed), yet each update of a task wrote an entry in the
index of each: PostgreSQL updates a task's row as a new version (its status is indexed), with
an entry in every index the new version is in. Kept for the rows with a value only (``WHERE …
IS NOT NULL``), these indexes still serve every read by a value or a range of one (both
databases take such a read to imply the column is not null), and a finalize's update writes
five index entries, not eight.

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-05 22:55:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

_COLUMNS = ("verifier", "take_ends_at", "reveal_due_at")


def upgrade() -> None:
    """Apply this revision."""
    for column in _COLUMNS:
        name = f"ix_tasks_{column}"
        has_one = sa.text(f"{column} IS NOT NULL")
        op.drop_index(name, table_name="tasks")
        op.create_index(name, "tasks", [column], sqlite_where=has_one, postgresql_where=has_one)


def downgrade() -> None:
    """Revert this revision."""
    for column in _COLUMNS:
        name = f"ix_tasks_{column}"
        op.drop_index(name, table_name="tasks")
        op.create_index(name, "tasks", [column])
