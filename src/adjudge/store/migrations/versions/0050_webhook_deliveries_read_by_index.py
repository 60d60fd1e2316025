"""Webhook deliveries indexed for the reads a worker and an account make of them.

- **The pending deliveries by account, oldest first.** A worker's claim shared its batch among
  the accounts with deliveries due by ranking every due delivery by age within its account, on
  every pass and inside the write that holds SQLite's one lock: with a pile of 100,000 due
  (receivers that never answer, or a worker that fell behind) a pass took a fifth of a second
  before it sent anything, and every writer waited that long. A claim now walks the accounts
  with deliveries pending on this index (one seek an account) and takes each one's oldest due
  from a range of it; disabling an endpoint finds its pending deliveries there too.
- **The due deliveries by age**, kept for the pending ones only as the index above, neither with
  the state as a column: SQLite took an equality on it for a narrow range and sorted every
  pending delivery it found (the lease's update of fifty deliveries by id took 18 ms at
  100,000 pending).
- **An account's deliveries of one state, and one endpoint's, newest first**: a page of an
  account's failed deliveries among 100,000 delivered read them all (114 ms on SQLite).

Revision ID: 0050
Revises: 0049
Create Date: 2026-12-07 01:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0050"
down_revision = "0049"
branch_labels = None
depends_on = None

_TABLE = "webhook_deliveries"


def upgrade() -> None:
    """Apply this revision."""
    pending = sa.text("status = 'pending'")
    op.drop_index("ix_webhook_deliveries_due", table_name=_TABLE)
    for name, columns in (
        ("ix_webhook_deliveries_due", ["next_attempt_at", "id"]),
        ("ix_webhook_deliveries_pending_account", ["account_id", "next_attempt_at", "id"]),
    ):
        op.create_index(name, _TABLE, columns, sqlite_where=pending, postgresql_where=pending)
    newest = sa.text("created_at DESC")
    op.create_index(
        "ix_webhook_deliveries_account_status", _TABLE, ["account_id", "status", newest, "id"]
    )
    op.create_index("ix_webhook_deliveries_endpoint", _TABLE, ["endpoint_id", newest, "id"])


def downgrade() -> None:
    """Revert this revision."""
    for name in (
        "ix_webhook_deliveries_endpoint",
        "ix_webhook_deliveries_account_status",
        "ix_webhook_deliveries_pending_account",
        "ix_webhook_deliveries_due",
    ):
        op.drop_index(name, table_name=_TABLE)
    op.create_index("ix_webhook_deliveries_due", _TABLE, ["status", "next_attempt_at"])
