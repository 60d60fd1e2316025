"""The trust perimeter: disputes, verifier keys kept whole, quotas, the receipt behind every
release of money, accepted-at and released agents on tasks, and who supplied a call.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "disputes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("by", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_disputes_task_id_tasks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_disputes")),
    )
    op.create_index(op.f("ix_disputes_task_id"), "disputes", ["task_id"])
    op.create_table(
        "verifier_keys",
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("public_key", sa.String(length=64), nullable=True),
        sa.Column("added_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_verifier_keys_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("fingerprint", name=op.f("pk_verifier_keys")),
    )
    op.create_index(op.f("ix_verifier_keys_account_id"), "verifier_keys", ["account_id"])
    # Keys registered before: only their fingerprints were kept.
    op.execute(
        "INSERT INTO verifier_keys (fingerprint, account_id, public_key, added_at) "
        "SELECT verifier_key, id, NULL, created_at FROM accounts WHERE verifier_key IS NOT NULL"
    )
    op.create_table(
        "quotas",
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("window", sa.DateTime(), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "window", name=op.f("pk_quotas")),
    )
    with op.batch_alter_table("ledger_entries") as batch:
        batch.add_column(sa.Column("receipt_id", sa.String(length=64), nullable=True))
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("accepted_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("released", sa.JSON(), nullable=True))
    op.create_index("ix_tasks_posted", "tasks", ["posted_at", "id"])
    with op.batch_alter_table("call_records") as batch:
        batch.add_column(
            sa.Column("source", sa.String(length=16), nullable=False, server_default="reported")
        )
    op.create_index(op.f("ix_call_records_receipt_id"), "call_records", ["receipt_id"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index(op.f("ix_call_records_receipt_id"), table_name="call_records")
    with op.batch_alter_table("call_records") as batch:
        batch.drop_column("source")
    op.drop_index("ix_tasks_posted", table_name="tasks")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("released")
        batch.drop_column("accepted_at")
    with op.batch_alter_table("ledger_entries") as batch:
        batch.drop_column("receipt_id")
    op.drop_table("quotas")
    op.drop_index(op.f("ix_verifier_keys_account_id"), table_name="verifier_keys")
    op.drop_table("verifier_keys")
    op.drop_index(op.f("ix_disputes_task_id"), table_name="disputes")
    op.drop_table("disputes")
