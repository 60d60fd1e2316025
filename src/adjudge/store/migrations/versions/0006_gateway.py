"""The gateway: callable tools, its signing keys, providers' credentials, forwarded calls.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "gateway_tools",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("digest", sa.String(length=71), nullable=False),
        sa.Column("price_minor", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=64), nullable=False),
        sa.Column("registered_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider"], ["accounts.id"], name=op.f("fk_gateway_tools_provider_accounts")
        ),
        sa.PrimaryKeyConstraint("name", "version", name=op.f("pk_gateway_tools")),
    )
    op.create_index(op.f("ix_gateway_tools_provider"), "gateway_tools", ["provider"])
    op.create_table(
        "gateway_keys",
        sa.Column("kid", sa.String(length=128), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("retired_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("kid", name=op.f("pk_gateway_keys")),
    )
    op.create_table(
        "gateway_credentials",
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("header", sa.String(length=128), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("set_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["provider"], ["accounts.id"], name=op.f("fk_gateway_credentials_provider_accounts")
        ),
        sa.PrimaryKeyConstraint("provider", name=op.f("pk_gateway_credentials")),
    )
    op.create_table(
        "gateway_calls",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("caller", sa.String(length=64), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("tool_version", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("price_minor", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=64), nullable=False),
        sa.Column("key_hash", sa.String(length=71), nullable=True),
        sa.Column("fingerprint", sa.String(length=71), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=True),
        sa.Column("verdict", sa.String(length=32), nullable=True),
        sa.Column("receipt_id", sa.String(length=64), nullable=True),
        sa.Column("answer", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["caller"], ["accounts.id"], name=op.f("fk_gateway_calls_caller_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gateway_calls")),
        sa.UniqueConstraint("caller", "key_hash", name=op.f("uq_gateway_calls_caller")),
    )
    for column in ("caller", "tool", "provider", "started_at"):
        op.create_index(op.f(f"ix_gateway_calls_{column}"), "gateway_calls", [column])


def downgrade() -> None:
    """Revert this revision."""
    for column in ("caller", "tool", "provider", "started_at"):
        op.drop_index(op.f(f"ix_gateway_calls_{column}"), table_name="gateway_calls")
    op.drop_table("gateway_calls")
    op.drop_table("gateway_credentials")
    op.drop_table("gateway_keys")
    op.drop_index(op.f("ix_gateway_tools_provider"), table_name="gateway_tools")
    op.drop_table("gateway_tools")
