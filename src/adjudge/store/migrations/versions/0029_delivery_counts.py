"""The webhook deliveries counted by status as they are made and change state, so the
operator's counts read a row a status, not every delivery ever made.

The deliveries before this revision are counted here, once (on lane 0 of the receipt log: a
count is the sum of its lanes').

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-05 15:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

#: As in adjudge.store.day_counts, written out: a revision does not change with later code.
_FAMILY = "deliveries"


def upgrade() -> None:
    """Apply this revision."""
    op.execute(
        sa.text(
            "INSERT INTO day_counts (family, subject, day, name, lane, n) "
            f"SELECT '{_FAMILY}', '', '', status, 0, count(*) FROM webhook_deliveries "
            "GROUP BY status"
        )
    )


def downgrade() -> None:
    """Revert this revision."""
    op.execute(sa.text(f"DELETE FROM day_counts WHERE family = '{_FAMILY}'"))
