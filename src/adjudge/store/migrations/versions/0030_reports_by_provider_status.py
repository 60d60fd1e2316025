"""A provider's call reports indexed by status and ruling time: the upheld reports of its quality
window (counted on each reading of its quality) are one range of the index, not every report it
ever had; the index on the provider alone, which this one leads with, goes.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-05 16:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_index(
        "ix_call_reports_provider_status", "call_reports", ["provider", "status", "ruled_at"]
    )
    op.drop_index("ix_call_reports_provider", table_name="call_reports")


def downgrade() -> None:
    """Revert this revision."""
    op.create_index("ix_call_reports_provider", "call_reports", ["provider"])
    op.drop_index("ix_call_reports_provider_status", table_name="call_reports")
