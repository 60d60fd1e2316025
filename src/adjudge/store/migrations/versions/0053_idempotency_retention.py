"""The stored answers of Idempotency-Keys, read oldest first by the upkeep that forgets them.

An answer was kept for good: every state change sent with a new key added a row, a no-op
(an account's settings written again as they were) included, so the table grew with the
service's history however cheap the requests. The upkeep now forgets answers past their
retention (``adjudge.app.maintenance.IDEMPOTENCY_RETENTION``), oldest first, on this index.

Revision ID: 0053
Revises: 0052
Create Date: 2026-12-07 05:05:00
"""

from __future__ import annotations

from alembic import op

revision = "0053"
down_revision = "0052"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_index("ix_idempotency_at", "idempotency", ["at"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_idempotency_at", table_name="idempotency")
