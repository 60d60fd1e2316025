"""A call's final verdict, when a judgment after its answer superseded its record's.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05 01:40:00

A call whose meaning check was judged after its answer was counted in its provider's quality
window as its first receipt said (``DEGRADED`` at best: not counted), never as its final
``PASS`` or ``FAIL``. ``call_records.final_verdict`` now holds the superseding verdict, which
the window counts. Calls judged before this revision take theirs from their gateway call, and
every provider's running counts are dropped, to be rebuilt by one recount at its next call.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("call_records") as batch:
        batch.add_column(sa.Column("final_verdict", sa.String(length=32), nullable=True))
    op.execute(
        sa.text(
            "UPDATE call_records SET final_verdict = (SELECT gateway_calls.verdict FROM "
            "gateway_calls WHERE gateway_calls.id = call_records.id) WHERE id IN (SELECT "
            "call_id FROM meaning_queue WHERE state = 'judged')"
        )
    )
    op.execute(sa.text("DELETE FROM quality_windows"))


def downgrade() -> None:
    """Revert this revision (the windows are rebuilt without the final verdicts)."""
    with op.batch_alter_table("call_records") as batch:
        batch.drop_column("final_verdict")
    op.execute(sa.text("DELETE FROM quality_windows"))
