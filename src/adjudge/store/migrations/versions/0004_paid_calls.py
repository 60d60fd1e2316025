"""Paid calls: tool contracts, decision policies, verified calls, quality terms, proposals.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 20:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "call_contracts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("tool", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("digest", sa.String(length=71), nullable=False),
        sa.Column("registered_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider"], ["accounts.id"], name=op.f("fk_call_contracts_provider_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_contracts")),
        sa.UniqueConstraint("tool", "version", name=op.f("uq_call_contracts_tool")),
    )
    op.create_index(op.f("ix_call_contracts_tool"), "call_contracts", ["tool"])
    op.create_table(
        "call_policies",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("policy_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(length=200), nullable=False),
        sa.Column("contract_version", sa.String(length=64), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("digest", sa.String(length=71), nullable=False),
        sa.Column("registered_by", sa.String(length=64), nullable=False),
        sa.Column("registered_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["registered_by"], ["accounts.id"], name=op.f("fk_call_policies_registered_by_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_policies")),
        sa.UniqueConstraint("policy_id", "version", name=op.f("uq_call_policies_policy_id")),
    )
    op.create_index(op.f("ix_call_policies_tool"), "call_policies", ["tool"])
    op.create_table(
        "call_records",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("provider", sa.String(length=200), nullable=False),
        sa.Column("tool", sa.String(length=200), nullable=False),
        sa.Column("contract_version", sa.String(length=64), nullable=False),
        sa.Column("policy_id", sa.String(length=200), nullable=True),
        sa.Column("policy_version", sa.Integer(), nullable=True),
        sa.Column("submitted_by", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=True),
        sa.Column("enforced", sa.Boolean(), nullable=False),
        sa.Column("error_kind", sa.String(length=32), nullable=True),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("receipt_id", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["submitted_by"], ["accounts.id"], name=op.f("fk_call_records_submitted_by_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_records")),
    )
    op.create_index(op.f("ix_call_records_provider"), "call_records", ["provider"])
    op.create_index(op.f("ix_call_records_at"), "call_records", ["at"])
    op.create_table(
        "call_provider_terms",
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("terms", sa.JSON(), nullable=False),
        sa.Column("declared_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider"], ["accounts.id"], name=op.f("fk_call_provider_terms_provider_accounts")
        ),
        sa.PrimaryKeyConstraint("provider", name=op.f("pk_call_provider_terms")),
    )
    op.create_table(
        "call_penalty_proposals",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("proposal", sa.JSON(), nullable=False),
        sa.Column("proposed_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_penalty_proposals")),
    )
    op.create_index(
        op.f("ix_call_penalty_proposals_provider"), "call_penalty_proposals", ["provider"]
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index(op.f("ix_call_penalty_proposals_provider"), table_name="call_penalty_proposals")
    op.drop_table("call_penalty_proposals")
    op.drop_table("call_provider_terms")
    op.drop_index(op.f("ix_call_records_at"), table_name="call_records")
    op.drop_index(op.f("ix_call_records_provider"), table_name="call_records")
    op.drop_table("call_records")
    op.drop_index(op.f("ix_call_policies_tool"), table_name="call_policies")
    op.drop_table("call_policies")
    op.drop_index(op.f("ix_call_contracts_tool"), table_name="call_contracts")
    op.drop_table("call_contracts")
