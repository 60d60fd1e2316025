"""Every row id the database counts out made 64-bit on PostgreSQL.

The tables whose rows are numbered by the database (the ledger's lines, submissions, verdicts,
disputes, votes, lapses, webhook attempts, the calls' contracts, policies and penalty
proposals) had PostgreSQL ``integer`` ids, and their ``serial`` sequences end at 2^31 - 1: the
ledger writes several lines a call, so at a billion calls a month it ran out within weeks, and
from then on every payment failed. Each id becomes ``bigint`` and its sequence one of
``bigint``. (On PostgreSQL this rewrites each table once; SQLite's row ids are 64-bit already.)

Revision ID: 0049
Revises: 0048
Create Date: 2026-12-06 20:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0049"
down_revision = "0048"
branch_labels = None
depends_on = None

#: Written out: a revision does not change with later code.
_TABLES = (
    "ledger_entries",
    "submissions",
    "verdicts",
    "disputes",
    "task_votes",
    "task_lapses",
    "webhook_attempts",
    "call_contracts",
    "call_policies",
    "call_penalty_proposals",
)


def _widen(kind: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN id TYPE {kind}"))
        # Changing a sequence's type moves its bounds when they were the old type's.
        op.execute(
            sa.text(
                "DO $$ BEGIN EXECUTE format('ALTER SEQUENCE %s AS " + kind + "', "
                f"pg_get_serial_sequence('{table}', 'id')); END $$"
            )
        )


def upgrade() -> None:
    """Apply this revision."""
    _widen("bigint")


def downgrade() -> None:
    """Revert this revision (refused by PostgreSQL if an id is already past 2^31 - 1)."""
    _widen("integer")
