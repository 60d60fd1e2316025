"""The due holds read from an index of only those that wait for nothing else.

The upkeep's pass read the held holds past their deadlines in order and passed over each that
waited for a retry of a failed release or for its call's meaning judgment, one by one, inside
its write: with 50,000 calls waiting for their judges, 88 ms a pass on SQLite. A hold now says
when its call's judgment was queued while it is pending (kept by the judgment queue), and the
due order reads a partial index that holds neither kind of waiting hold.

Revision ID: 0060
Revises: 0059
Create Date: 2026-12-07 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0060"
down_revision = "0059"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: the column, filled from the judgments pending now, and the index."""
    op.add_column("provider_holds", sa.Column("judgment_queued_at", sa.DateTime(), nullable=True))
    op.execute(
        "UPDATE provider_holds SET judgment_queued_at = ("
        "SELECT q.queued_at FROM meaning_queue q"
        " WHERE q.call_id = provider_holds.call_id AND q.state = 'pending')"
    )
    ripe = sa.text("retry_at IS NULL AND judgment_queued_at IS NULL")
    op.create_index(
        "ix_provider_holds_ripe",
        "provider_holds",
        ["state", "matures_at"],
        sqlite_where=ripe,
        postgresql_where=ripe,
    )


def downgrade() -> None:
    """Revert this revision (the due order asks the judgment queue again)."""
    op.drop_index("ix_provider_holds_ripe", table_name="provider_holds")
    op.drop_column("provider_holds", "judgment_queued_at")
