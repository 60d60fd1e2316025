"""Each panel vote's verified signature (its payload, signature and public key), kept so a
replay bundle can re-verify and re-ground every vote offline.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04 13:00:00

Votes cast before this revision keep no signature (null): their bundles cannot be replayed.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("task_votes") as batch:
        batch.add_column(sa.Column("signed", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("task_votes") as batch:
        batch.drop_column("signed")
