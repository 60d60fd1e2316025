"""The ledger's counts kept for all time as well as by day, so the ledger page's totals over a
range with no start (the page unfiltered, its default) read the counts for all time and not
every day of the ledger's history.

The counts for all time before this revision are the sums of the days counted (revision 0028
counted every line before it by day), lane by lane.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-05 16:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

#: As in adjudge.store.day_counts, written out: a revision does not change with later code.
_FAMILY = "ledger"
_ALL_TIME = ""


def upgrade() -> None:
    """Apply this revision."""
    op.execute(
        sa.text(
            "INSERT INTO day_counts (family, subject, day, name, lane, n) "
            f"SELECT family, subject, '{_ALL_TIME}', name, lane, sum(n) FROM day_counts "
            f"WHERE family = '{_FAMILY}' AND day <> '{_ALL_TIME}' "
            "GROUP BY family, subject, name, lane"
        )
    )


def downgrade() -> None:
    """Revert this revision."""
    op.execute(
        sa.text(f"DELETE FROM day_counts WHERE family = '{_FAMILY}' AND day = '{_ALL_TIME}'")
    )
