"""The ledger page's indexes: its lines newest first within an account, within a kind (the
memo), and across the whole ledger, so a page of the console's ledger walks one index range
however long the history grows.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 04:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_INDEXES = {
    "ix_ledger_entries_account_at": ["account", "at", "id"],
    "ix_ledger_entries_memo_at": ["memo", "at", "id"],
    "ix_ledger_entries_at": ["at", "id"],
}


def upgrade() -> None:
    """Apply this revision."""
    for name, columns in _INDEXES.items():
        op.create_index(name, "ledger_entries", columns)


def downgrade() -> None:
    """Revert this revision."""
    for name in _INDEXES:
        op.drop_index(name, table_name="ledger_entries")
