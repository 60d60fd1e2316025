"""What a call's verification read besides its request and response, kept so the call can be
replayed offline: the meaning judgment and the corroboration a caller reported with it, and the
bytes a forwarded call's provider answered.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 12:00:00

Calls verified before this revision have none (null): a bundle of one holds no judgment, no
corroboration and, for a forwarded call, no response bytes.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("call_records") as batch:
        batch.add_column(sa.Column("evidence", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("call_records") as batch:
        batch.drop_column("evidence")
