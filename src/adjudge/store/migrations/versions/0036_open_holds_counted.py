"""The providers' open holds counted as they open and end, so the metrics read them from the
counts and not from every open hold (at the gateway's rate, a report window holds millions).

The counts before this revision are made from the holds open now (held or under a report): for
all time, how many and the money in them; by the UTC hour they mature in, how many. On lane 0
of the counts, as the ledger's earlier counts were (a count is the sum of its lanes).

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-06 04:25:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

#: As in adjudge.store.day_counts and adjudge.store.holds, written out: a revision does not
#: change with later code.
_FAMILY = "holds"
_ALL_TIME = ""
_OPEN = "('held', 'reported')"
#: A hold's maturity hour, ``YYYYMMDDHH`` (UTC: the column holds UTC without its zone).
_HOUR = {
    "sqlite": "strftime('%Y%m%d%H', matures_at)",
    "postgresql": "to_char(matures_at, 'YYYYMMDDHH24')",
}


def upgrade() -> None:
    """Apply this revision."""
    hour = _HOUR[op.get_bind().dialect.name]
    into = "INSERT INTO day_counts (family, subject, day, name, lane, n) "
    held = f"FROM provider_holds WHERE state IN {_OPEN}"
    op.execute(
        sa.text(f"{into}SELECT '{_FAMILY}', '', {hour}, 'open', 0, count(*) {held} GROUP BY {hour}")
    )
    for name, value in (("open", "count(*)"), ("money", "sum(amount)")):
        op.execute(
            sa.text(
                f"{into}SELECT '{_FAMILY}', '', '{_ALL_TIME}', '{name}', 0, {value} {held} "
                "HAVING count(*) > 0"
            )
        )


def downgrade() -> None:
    """Revert this revision."""
    op.execute(sa.text(f"DELETE FROM day_counts WHERE family = '{_FAMILY}'"))
