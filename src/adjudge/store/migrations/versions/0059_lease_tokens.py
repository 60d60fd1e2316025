"""A review lease names itself with a token its worker's failure report carries.

A failure report ended the lease in force and counted a failure whoever held the lease: a worker
that stalled past its lease, the submission claimed again by another worker of the verifier,
ended that worker's live lease (a third could judge the submission again) and counted a failure
it never had. Each claim now writes a fresh random token to the lease row; a report is counted
only with the token of the lease in force, and ends it. Leases taken before hold none, so no
report names them: they run out, and the next claim writes a token.

Revision ID: 0059
Revises: 0058
Create Date: 2026-12-07 17:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0059"
down_revision = "0058"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("review_leases", sa.Column("token", sa.String(64), nullable=True))


def downgrade() -> None:
    """Revert this revision (the leases keep their tries; reports need no token again)."""
    op.drop_column("review_leases", "token")
