"""The live money path bound: policy ids scoped to their tool, prices that wait out a notice,
providers' holds until the report deadline.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 22:00:00

Settled calls from before this revision were paid to their providers at once; they have no hold,
and an upheld report on one is refunded from the provider's wallet, as before.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("call_policies") as batch:
        batch.drop_constraint("uq_call_policies_policy_id", type_="unique")
        batch.create_unique_constraint("uq_call_policies_tool", ["tool", "policy_id", "version"])
    with op.batch_alter_table("gateway_tools") as batch:
        batch.add_column(sa.Column("prior_price_minor", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("price_from", sa.DateTime(), nullable=True))
    op.create_table(
        "provider_holds",
        sa.Column("call_id", sa.String(length=64), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("caller", sa.String(length=64), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("receipt_id", sa.String(length=64), nullable=False),
        sa.Column("matures_at", sa.DateTime(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("end_receipt_id", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("call_id", name=op.f("pk_provider_holds")),
    )
    op.create_index("ix_provider_holds_due", "provider_holds", ["state", "matures_at"])
    op.create_index(
        "ix_provider_holds_provider", "provider_holds", ["provider", "state", "matures_at"]
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_provider_holds_provider", table_name="provider_holds")
    op.drop_index("ix_provider_holds_due", table_name="provider_holds")
    op.drop_table("provider_holds")
    with op.batch_alter_table("gateway_tools") as batch:
        batch.drop_column("price_from")
        batch.drop_column("prior_price_minor")
    with op.batch_alter_table("call_policies") as batch:
        batch.drop_constraint("uq_call_policies_tool", type_="unique")
        batch.create_unique_constraint("uq_call_policies_policy_id", ["policy_id", "version"])
