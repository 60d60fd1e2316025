"""The listings still sorted whole for each page, indexed in their order: the call reports of a
status, and a verifier's own tasks.

``GET /call-reports?status=`` lists reports oldest first; with an index on the status alone,
each page read every report of that status (every upheld one ever, say) and sorted them. Indexed
as ``(status, filed_at, call_id)``, replacing the status's own index, a page walks one range.

A party's own tasks (``GET /tasks?mine=true``) merge the newest page of each of its roles; as a
task's named verifier and as a panel seat, the party's every task was read and sorted for each
page, so a verifier's listing cost all the tasks it ever verified. The named verifier's index
(of the tasks that have one) now holds the posted time, newest first, and a panel seat keeps its
task's posted time (written once with the seat, as the task's never changes), indexed with the
verifier in the same order.

Revision ID: 0040
Revises: 0039
Create Date: 2026-12-06 15:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None

_NAMED = sa.text("verifier IS NOT NULL")


def upgrade() -> None:
    """Apply this revision."""
    op.drop_index("ix_call_reports_status", table_name="call_reports")
    op.create_index(
        "ix_call_reports_status_filed", "call_reports", ["status", "filed_at", "call_id"]
    )
    op.drop_index("ix_tasks_verifier", table_name="tasks")
    op.create_index(
        "ix_tasks_verifier_newest",
        "tasks",
        ["verifier", sa.text("posted_at DESC"), "id"],
        sqlite_where=_NAMED,
        postgresql_where=_NAMED,
    )
    op.drop_index("ix_task_seats_verifier", table_name="task_seats")
    with op.batch_alter_table("task_seats") as batch:
        batch.add_column(sa.Column("posted_at", sa.DateTime(), nullable=True))
    op.execute(
        "UPDATE task_seats SET posted_at = "
        "(SELECT tasks.posted_at FROM tasks WHERE tasks.id = task_seats.task_id)"
    )
    with op.batch_alter_table("task_seats") as batch:
        batch.alter_column("posted_at", existing_type=sa.DateTime(), nullable=False)
    op.create_index(
        "ix_task_seats_verifier_newest",
        "task_seats",
        ["verifier", sa.text("posted_at DESC"), "task_id"],
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_task_seats_verifier_newest", table_name="task_seats")
    with op.batch_alter_table("task_seats") as batch:
        batch.drop_column("posted_at")
    op.create_index("ix_task_seats_verifier", "task_seats", ["verifier"])
    op.drop_index("ix_tasks_verifier_newest", table_name="tasks")
    op.create_index(
        "ix_tasks_verifier",
        "tasks",
        ["verifier"],
        sqlite_where=_NAMED,
        postgresql_where=_NAMED,
    )
    op.drop_index("ix_call_reports_status_filed", table_name="call_reports")
    op.create_index("ix_call_reports_status", "call_reports", ["status"])
