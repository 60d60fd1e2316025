"""An account's disabled webhook endpoints indexed newest disabled first.

An account holds at most a few enabled endpoints, but keeps every endpoint it deleted (their
deliveries stay in its log). Listing its endpoints read every one it ever made; the enabled
ones are now listed whole on revision 0046's range, and the disabled ones a page at a time,
newest disabled first, on this index's.

Revision ID: 0047
Revises: 0046
Create Date: 2026-12-06 19:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0047"
down_revision = "0046"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_index(
        "ix_webhook_endpoints_account_disabled",
        "webhook_endpoints",
        ["account_id", sa.text("disabled_at DESC"), "id"],
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_webhook_endpoints_account_disabled", table_name="webhook_endpoints")
