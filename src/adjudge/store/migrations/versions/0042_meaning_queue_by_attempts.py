"""The pending judgments after the answer indexed in the order a pass takes them.

Each upkeep pass judges a batch of the pending judgments, the least tried first, then the
oldest (``meaning_queue.pending``); indexed by state and queued time, a pass read every pending
judgment and sorted them. Indexed as ``(state, attempts, queued_at)``, replacing the other, a
pass walks its batch.

Revision ID: 0042
Revises: 0041
Create Date: 2026-12-06 16:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.drop_index("ix_meaning_queue_state", table_name="meaning_queue")
    op.create_index("ix_meaning_queue_pending", "meaning_queue", ["state", "attempts", "queued_at"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_meaning_queue_pending", table_name="meaning_queue")
    op.create_index("ix_meaning_queue_state", "meaning_queue", ["state", "queued_at"])
