"""A tool's contracts and policies indexed by tool in the order they were registered.

A reported call (``POST /calls``) reads its tool's latest contract, and its latest policy when it
names none: each read every version the tool ever registered (a policy's whole document with
it) and sorted them, since 0033 dropped the tool's own index for the unique keys the tool leads
(ordered by version, not by registration). Indexed as ``(tool, id)``, each is one index step.

Revision ID: 0041
Revises: 0040
Create Date: 2026-12-06 16:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None

_TABLES = ("call_contracts", "call_policies")


def upgrade() -> None:
    """Apply this revision."""
    for table in _TABLES:
        op.create_index(f"ix_{table}_tool_id", table, ["tool", "id"])


def downgrade() -> None:
    """Revert this revision."""
    for table in _TABLES:
        op.drop_index(f"ix_{table}_tool_id", table_name=table)
