"""The paid calls indexed in their listing's order, and the calls still pending on their own.

A page of forwarded calls is newest first. A party's own (the calls it made or provided) read
every call of either role and sorted them, a tool's every call of the tool, for each page; the
upkeep's search for calls a stopped process left pending walked every call started before its
cutoff to find the few still pending. Indexed as ``(column, started_at DESC, id)`` for the
caller, the provider and the tool, and ``(started_at DESC, id)`` for all, a page walks one
index range (a party's merges the newest page of each role); the pending calls have an index of
their own, holding only them (a call leaves it as it ends). The provider's, the tool's and the
time's indexes of one column are replaced by these, which serve every read they served.

Revision ID: 0039
Revises: 0038
Create Date: 2026-12-06 15:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

_REPLACED = ("tool", "provider", "started_at")
_PENDING = sa.text("state = 'pending'")


def upgrade() -> None:
    """Apply this revision."""
    for column in _REPLACED:
        op.drop_index(f"ix_gateway_calls_{column}", table_name="gateway_calls")
    for column in ("caller", "provider", "tool"):
        newest: list[str | sa.TextClause] = [column, sa.text("started_at DESC"), "id"]
        op.create_index(f"ix_gateway_calls_{column}_newest", "gateway_calls", newest)
    op.create_index("ix_gateway_calls_newest", "gateway_calls", [sa.text("started_at DESC"), "id"])
    op.create_index(
        "ix_gateway_calls_pending",
        "gateway_calls",
        ["started_at"],
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )


def downgrade() -> None:
    """Revert this revision."""
    for name in ("caller_newest", "provider_newest", "tool_newest", "newest", "pending"):
        op.drop_index(f"ix_gateway_calls_{name}", table_name="gateway_calls")
    for column in _REPLACED:
        op.create_index(f"ix_gateway_calls_{column}", "gateway_calls", [column])
