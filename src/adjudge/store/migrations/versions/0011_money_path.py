"""The live money path bound: policy ids scoped to their tool, prices that wait out a notice,
providers' holds until the report deadline, extra API keys with spending limits.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 22:00:00

Settled calls from before this revision were paid to their providers at once; they have no hold,
and an upheld report on one is refunded from the provider's wallet, as before.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
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
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("key_hash", sa.String(length=71), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("max_per_call_minor", sa.BigInteger(), nullable=True),
        sa.Column("max_per_day_minor", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_api_keys_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    op.create_index(op.f("ix_api_keys_account_id"), "api_keys", ["account_id"])
    op.create_table(
        "key_spend",
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("spent", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key_id", "day", name=op.f("pk_key_spend")),
    )
    with op.batch_alter_table("gateway_calls") as batch:
        batch.add_column(sa.Column("api_key_id", sa.String(length=40), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("gateway_calls") as batch:
        batch.drop_column("api_key_id")
    op.drop_table("key_spend")
    op.drop_index(op.f("ix_api_keys_account_id"), table_name="api_keys")
    op.drop_table("api_keys")
    op.drop_index("ix_provider_holds_provider", table_name="provider_holds")
    op.drop_index("ix_provider_holds_due", table_name="provider_holds")
    op.drop_table("provider_holds")
    with op.batch_alter_table("gateway_tools") as batch:
        batch.drop_column("price_from")
        batch.drop_column("prior_price_minor")
    with op.batch_alter_table("call_policies") as batch:
        batch.drop_constraint("uq_call_policies_tool", type_="unique")
        batch.create_unique_constraint("uq_call_policies_policy_id", ["policy_id", "version"])
