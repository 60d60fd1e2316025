"""How many keys and endpoints an account made, kept on its row.

Making an extra key or a webhook endpoint is bounded at 10,000 an account, revoked and deleted
ones counted; each new one counted all of the account's rows to check it (up to 10,000). The
account's row now keeps both counts, raised in the transaction that makes each one; this fills
them from the rows there are.

Revision ID: 0061
Revises: 0060
Create Date: 2026-12-07 20:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0061"
down_revision = "0060"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: the two counts, filled by one recount each."""
    # Added in place (a table rebuilt would trip the keys that name accounts).
    for name in ("keys_made", "endpoints_made"):
        column = sa.Column(name, sa.Integer(), nullable=False, server_default=sa.text("0"))
        op.add_column("accounts", column)
    op.execute(
        "UPDATE accounts SET keys_made = (SELECT count(*) FROM api_keys k"
        " WHERE k.account_id = accounts.id),"
        " endpoints_made = (SELECT count(*) FROM webhook_endpoints e"
        " WHERE e.account_id = accounts.id)"
    )


def downgrade() -> None:
    """Revert this revision (the counts are counted from the rows again)."""
    op.drop_column("accounts", "endpoints_made")
    op.drop_column("accounts", "keys_made")
