"""The quota counters' windows indexed, so the upkeep forgets those that ended.

A counter row is kept per scope and window (an account's posts, lints, answers stored under
new Idempotency-Keys in an hour): never deleted, they grew with every account's every hour of
activity. The upkeep now forgets windows that ended, oldest first, on this index.

Revision ID: 0062
Revises: 0061
Create Date: 2026-12-07 22:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0062"
down_revision = "0061"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: the index."""
    op.create_index("ix_quotas_window", "quotas", ["window"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_quotas_window", table_name="quotas")
