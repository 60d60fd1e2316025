"""Each provider's tool names, counted on an index of their own.

A provider registers at most a bound of tool names (``adjudge.app.calls.MAX_PROVIDER_TOOLS``):
each keeps its contracts, policies and catalog versions for good, and any number could be
registered. A registration of a new name counts the provider's names first, on this index, a
range of at most the bound, whatever other providers registered.

Revision ID: 0054
Revises: 0053
Create Date: 2026-12-07 06:10:00
"""

from __future__ import annotations

from alembic import op

revision = "0054"
down_revision = "0053"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_index("ix_tool_owners_provider", "tool_owners", ["provider"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_tool_owners_provider", table_name="tool_owners")
