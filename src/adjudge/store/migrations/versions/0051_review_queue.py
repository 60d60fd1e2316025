"""The submissions waiting for each verifier, kept as they come and go.

A verifier's worker polls for the submissions waiting for it every few seconds, and its claim
read every task awaiting verification — every verifier's, those whose workers gave up
included — and sorted them, inside a write (on SQLite, the one lock every payment waits on):
41-264 ms with 100,000 awaiting for twenty other verifiers, against 3 ms with 1,000. A task
that comes to await verification now queues a row for its named verifier and each panel
seat; a vote, a worker giving up, or the task moving on takes them off; a claim reads its
verifier's rows, oldest first. The queue starts with the submissions waiting now.

Revision ID: 0051
Revises: 0050
Create Date: 2026-12-07 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0051"
down_revision = "0050"
branch_labels = None
depends_on = None

#: Written out: a revision does not change with later code. Each awaiting task's named
#: verifier and panel seats, but for a seat that voted on the submission and a worker that
#: gave up on it.
_BACKFILL = """
INSERT INTO review_queue (task_id, verifier, attempt, submitted_at)
SELECT waiting.id, waiting.verifier, waiting.attempts, waiting.submitted_at FROM (
    SELECT t.id, t.verifier, t.attempts, COALESCE(t.submitted_at, t.posted_at) AS submitted_at
    FROM tasks t
    WHERE t.status = 'awaiting_verification' AND t.verifier IS NOT NULL
    UNION
    SELECT t.id, seat.verifier, t.attempts, COALESCE(t.submitted_at, t.posted_at)
    FROM task_seats seat JOIN tasks t ON t.id = seat.task_id
    WHERE t.status = 'awaiting_verification'
) waiting
WHERE NOT EXISTS (
    SELECT 1 FROM task_votes v
    WHERE v.task_id = waiting.id AND v.attempt = waiting.attempts
        AND v.verifier = waiting.verifier
) AND NOT EXISTS (
    SELECT 1 FROM review_leases l
    WHERE l.task_id = waiting.id AND l.attempt = waiting.attempts
        AND l.verifier = waiting.verifier AND l.gave_up = :yes
)
"""


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "review_queue",
        sa.Column("task_id", sa.String(64), sa.ForeignKey("tasks.id"), primary_key=True),
        sa.Column("verifier", sa.String(64), primary_key=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(), nullable=False),
    )
    op.create_index(
        "ix_review_queue_verifier_oldest", "review_queue", ["verifier", "submitted_at", "task_id"]
    )
    op.get_bind().execute(sa.text(_BACKFILL), {"yes": True})


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_review_queue_verifier_oldest", table_name="review_queue")
    op.drop_table("review_queue")
