"""A reveal's due time kept only on the tasks awaiting verification.

The overdue-reveal sweep reads the tasks whose reveal is due (``records.reveals_due``) by its
partial index on the due time. It also asked for the status, and the planner took the status's
index instead: every task awaiting verification, sorted, on every pass. A reveal is due only
while the agent waits (the lifecycle clears the time as a task leaves that state), so the sweep
no longer asks; this clears the time on any row that left the state keeping it, so no such row
can take a place in the sweep's batch.

Revision ID: 0043
Revises: 0042
Create Date: 2026-12-06 16:45:00
"""

from __future__ import annotations

from alembic import op

revision = "0043"
down_revision = "0042"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.execute(
        "UPDATE tasks SET reveal_due_at = NULL "
        "WHERE reveal_due_at IS NOT NULL AND status <> 'awaiting_verification'"
    )


def downgrade() -> None:
    """Revert this revision: nothing to undo (a cleared time was due on no task)."""
