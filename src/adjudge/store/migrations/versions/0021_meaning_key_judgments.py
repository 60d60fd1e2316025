"""Verifier keys as meaning judges: each key's signed judgment of a call judged after its answer.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04 13:10:00

No key judged a call before this revision: the table starts empty.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "meaning_key_judgments",
        sa.Column("call_id", sa.String(length=64), nullable=False),
        sa.Column("judge", sa.String(length=80), nullable=False),
        sa.Column("conflict", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(length=2000), nullable=False),
        sa.Column("citations", sa.JSON(), nullable=False),
        sa.Column("signature", sa.String(length=200), nullable=False),
        sa.Column("public_key", sa.String(length=100), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("call_id", "judge", name=op.f("pk_meaning_key_judgments")),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("meaning_key_judgments")
