"""A held charge whose release failed waits for a retry out of the due order.

The upkeep matures the oldest due holds, 500 a transaction. A hold whose release raised failed
its batch, and every pass took the same batch first again: every provider's pay due after it
waited for good. A failed hold now records its failures in a row and the time it is tried again
(growing with each); the due order passes it over until then, and the retries are read from an
index of their own, which holds no other hold.

Revision ID: 0057
Revises: 0056
Create Date: 2026-12-07 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0057"
down_revision = "0056"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("provider_holds", sa.Column("release_failures", sa.Integer(), nullable=True))
    op.add_column("provider_holds", sa.Column("retry_at", sa.DateTime(), nullable=True))
    waiting = sa.text("retry_at IS NOT NULL")
    op.create_index(
        "ix_provider_holds_retry_at",
        "provider_holds",
        ["retry_at"],
        sqlite_where=waiting,
        postgresql_where=waiting,
    )


def downgrade() -> None:
    """Revert this revision (a hold waiting for a retry is due again at once)."""
    op.drop_index("ix_provider_holds_retry_at", table_name="provider_holds")
    op.drop_column("provider_holds", "retry_at")
    op.drop_column("provider_holds", "release_failures")
