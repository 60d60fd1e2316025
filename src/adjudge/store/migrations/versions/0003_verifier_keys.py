"""Verifier keys: each verifier account's public key fingerprint, fixed on a task at posting.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 20:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("accounts") as batch:
        batch.add_column(sa.Column("verifier_key", sa.String(length=64), nullable=True))
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("verifier_key", sa.String(length=64), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("verifier_key")
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("verifier_key")
