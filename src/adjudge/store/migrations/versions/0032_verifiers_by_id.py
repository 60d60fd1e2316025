"""The accounts that take verification jobs, indexed by id: a page of the verifiers' list is one
range of the index, not a pass over every account.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-05 18:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    opted_in = sa.column("verifier_opt_in", sa.Boolean()).is_(True)
    op.create_index(
        "ix_accounts_verifiers",
        "accounts",
        ["id"],
        sqlite_where=opted_in,
        postgresql_where=opted_in,
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_accounts_verifiers", table_name="accounts")
