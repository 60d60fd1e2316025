"""Fewer indexes on the tables every paid call writes: each row pays for every index it is in.

An index that is the first column of another one reads nothing the other does not
(``ledger_entries.account`` beside ``(account, at, id)``, ``gateway_calls.caller`` beside the
unique ``(caller, key_hash)``, ``call_records.provider`` beside ``(provider, at)``), so it goes;
the task indexes of ledger lines and receipts keep only the rows with a task (a paid call's
have none, and they are most of a busy ledger), which is all a read by task asks of them.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-05 07:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

#: Indexes whose first column leads another index of their table.
_LEADING = {
    "ix_ledger_entries_account": ("ledger_entries", "account"),
    "ix_gateway_calls_caller": ("gateway_calls", "caller"),
    "ix_call_records_provider": ("call_records", "provider"),
}
#: Task indexes kept for the rows with a task only.
_BY_TASK = {
    "ix_ledger_entries_task_id": "ledger_entries",
    "ix_receipts_task_id": "receipts",
}


def upgrade() -> None:
    """Apply this revision."""
    for name, (table, _column) in _LEADING.items():
        op.drop_index(name, table_name=table)
    has_task = sa.text("task_id IS NOT NULL")
    for name, table in _BY_TASK.items():
        op.drop_index(name, table_name=table)
        op.create_index(name, table, ["task_id"], sqlite_where=has_task, postgresql_where=has_task)


def downgrade() -> None:
    """Revert this revision."""
    for name, table in _BY_TASK.items():
        op.drop_index(name, table_name=table)
        op.create_index(name, table, ["task_id"])
    for name, (table, column) in _LEADING.items():
        op.create_index(name, table, [column])
