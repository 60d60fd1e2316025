"""Each tool name's provider, a row a name.

A tool's owner was its first contract's provider, read before a registration inserted its own
contract: on PostgreSQL, two first registrations of one name (other versions) on two processes
both read no owner and both stored their contracts, and the name had two providers (a
stranger's policy could then judge the first's calls, and the first was refused on its own
tool). A name's owner is now a row keyed by the name, claimed with its first contract: the
second registration waits at the key and reads the first's claim. The table starts with each
name's first contract's provider.

Revision ID: 0052
Revises: 0051
Create Date: 2026-12-07 03:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0052"
down_revision = "0051"
branch_labels = None
depends_on = None

#: Written out: a revision does not change with later code. Each name's first contract.
_BACKFILL = """
INSERT INTO tool_owners (tool, provider)
SELECT c.tool, c.provider FROM call_contracts c
WHERE c.id = (SELECT MIN(first.id) FROM call_contracts first WHERE first.tool = c.tool)
"""


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "tool_owners",
        sa.Column("tool", sa.String(200), primary_key=True),
        sa.Column("provider", sa.String(64), sa.ForeignKey("accounts.id"), nullable=False),
    )
    op.get_bind().execute(sa.text(_BACKFILL))


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("tool_owners")
