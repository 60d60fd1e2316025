"""An emptied escrow or call reservation leaves no balance row.

Every task's escrow and every paid call's reservation made a balance row that, once the task
ended or the call settled, held 0 for ever: the balances grew by one row a call, and the admin's
ledger listed each. From this revision the debit that empties one deletes its row (its lines
stay; an account with no row reads 0). Here, the rows already empty go.

Revision ID: 0037
Revises: 0036
Create Date: 2026-12-06 07:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None

#: As adjudge.store.ledger.ITEM_PREFIXES, written out: a revision does not change with later code.
_ITEMS = "(account LIKE 'escrow:%' OR account LIKE 'hold:%')"


def upgrade() -> None:
    """Apply this revision."""
    op.execute(sa.text(f"DELETE FROM balances WHERE balance = 0 AND {_ITEMS}"))


def downgrade() -> None:
    """Revert this revision: nothing to put back, the code before reads a missing row as 0."""
