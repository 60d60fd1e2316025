"""A task's criteria salt: the secret its receipts' criteria digest is salted with.

A task whose public criteria hold an ``expected_answer`` hides that answer from its agent, but
every party may read the task's receipts, and each bound the criteria by their plain digest: a
short answer could be found by hashing guesses until one matched the receipt. Such a task now
draws a secret at posting, kept here and shown to its poster and admins only, and its receipts
bind ``{"criteria": …, "salt": …}`` instead. Tasks posted before keep none (their receipts
stay as signed).

Revision ID: 0045
Revises: 0044
Create Date: 2026-12-06 17:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0045"
down_revision = "0044"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("tasks", sa.Column("criteria_salt", sa.String(64), nullable=True))


def downgrade() -> None:
    """Revert this revision (a plain column: dropped in place, as SQLite 3.35 and later can, so
    the tasks table other tables refer to is not copied)."""
    op.drop_column("tasks", "criteria_salt")
