"""An account's API keys indexed by revocation: its live keys one range, its revoked ones the rest.

An account holds at most 50 live extra keys, but keeps every key it revoked. Listing its keys
read every key it ever made, and so did counting its live ones before making another: an
account that rotates a key a day paid for each one it had revoked. Indexed as ``(account_id,
revoked_at DESC, id)``, replacing the account's own index, the live keys (``revoked_at`` null)
are one range of it and the revoked ones, newest revoked first, a page of the rest.

Revision ID: 0044
Revises: 0043
Create Date: 2026-12-06 17:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0044"
down_revision = "0043"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.drop_index("ix_api_keys_account_id", table_name="api_keys")
    op.create_index(
        "ix_api_keys_account_revoked",
        "api_keys",
        ["account_id", sa.text("revoked_at DESC"), "id"],
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_api_keys_account_revoked", table_name="api_keys")
    op.create_index("ix_api_keys_account_id", "api_keys", ["account_id"])
