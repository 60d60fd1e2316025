"""An account's webhook endpoints indexed with whether they are enabled.

Every event a state change emits reads the enabled endpoints of its parties, and a new endpoint
is checked against the count of its account's enabled ones; with the account alone indexed,
both read every endpoint the account ever made and disabled. Indexed as ``(account_id, enabled,
created_at, id)``, replacing the account's own index, the enabled ones are one range of it.

Revision ID: 0046
Revises: 0045
Create Date: 2026-12-06 17:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0046"
down_revision = "0045"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.drop_index("ix_webhook_endpoints_account_id", table_name="webhook_endpoints")
    op.create_index(
        "ix_webhook_endpoints_account_enabled",
        "webhook_endpoints",
        ["account_id", "enabled", "created_at", "id"],
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_webhook_endpoints_account_enabled", table_name="webhook_endpoints")
    op.create_index("ix_webhook_endpoints_account_id", "webhook_endpoints", ["account_id"])
