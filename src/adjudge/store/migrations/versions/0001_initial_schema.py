"""The initial schema: accounts, ledger, tasks, submissions, verdicts, receipts, idempotency.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 19:17:28.935141
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("roles", sa.JSON(), nullable=False),
        sa.Column("key_hash", sa.String(length=71), nullable=False),
        sa.Column("verifier_opt_in", sa.Boolean(), nullable=False),
        sa.Column("reputation", sa.Integer(), nullable=False),
        sa.Column("disputes", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_accounts_key_hash")),
    )
    op.create_table(
        "balances",
        sa.Column("account", sa.String(length=160), nullable=False),
        sa.Column("balance", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("account", name=op.f("pk_balances")),
    )
    chain_head = op.create_table(
        "chain_head",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=160), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chain_head")),
    )
    assert chain_head is not None
    # The one row every receipt append locks: position 0, no digest yet.
    op.bulk_insert(chain_head, [{"id": 1, "seq": 0, "digest": None}])
    op.create_table(
        "idempotency",
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=71), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("account_id", "key", name=op.f("pk_idempotency")),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("txn", sa.String(length=64), nullable=False),
        sa.Column("account", sa.String(length=160), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("memo", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_entries")),
    )
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ledger_entries_account"), ["account"], unique=False)
        batch_op.create_index(batch_op.f("ix_ledger_entries_task_id"), ["task_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_ledger_entries_txn"), ["txn"], unique=False)

    op.create_table(
        "receipts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("digest", sa.String(length=160), nullable=False),
        sa.Column("previous", sa.String(length=160), nullable=True),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_receipts")),
        sa.UniqueConstraint("digest", name=op.f("uq_receipts_digest")),
        sa.UniqueConstraint("seq", name=op.f("uq_receipts_seq")),
    )
    with op.batch_alter_table("receipts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_receipts_task_id"), ["task_id"], unique=False)

    op.create_table(
        "tasks",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("poster", sa.String(length=64), nullable=False),
        sa.Column("agent", sa.String(length=64), nullable=True),
        sa.Column("verifier", sa.String(length=64), nullable=True),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("reward", sa.BigInteger(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("brief", sa.Text(), nullable=False),
        sa.Column("criteria", sa.JSON(), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("posted_at", sa.DateTime(), nullable=False),
        sa.Column("deadline", sa.DateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("result_digest", sa.String(length=71), nullable=True),
        sa.Column("submitted_at", sa.DateTime(), nullable=True),
        sa.Column("failed_at", sa.DateTime(), nullable=True),
        sa.Column("escalated_at", sa.DateTime(), nullable=True),
        sa.Column("disputed_by", sa.String(length=64), nullable=True),
        sa.Column("ending", sa.String(length=32), nullable=True),
        sa.Column("closed_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["agent"], ["accounts.id"], name=op.f("fk_tasks_agent_accounts")),
        sa.ForeignKeyConstraint(["poster"], ["accounts.id"], name=op.f("fk_tasks_poster_accounts")),
        sa.ForeignKeyConstraint(
            ["verifier"], ["accounts.id"], name=op.f("fk_tasks_verifier_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tasks")),
    )
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tasks_agent"), ["agent"], unique=False)
        batch_op.create_index(batch_op.f("ix_tasks_poster"), ["poster"], unique=False)
        batch_op.create_index(batch_op.f("ix_tasks_status"), ["status"], unique=False)
        batch_op.create_index("ix_tasks_status_verifier", ["status", "verifier"], unique=False)
        batch_op.create_index(batch_op.f("ix_tasks_verifier"), ["verifier"], unique=False)

    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(length=71), nullable=False),
        sa.Column("submitted_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_submissions_task_id_tasks")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submissions")),
        sa.UniqueConstraint("task_id", "attempt", name=op.f("uq_submissions_task_id")),
    )
    op.create_table(
        "verdicts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("score", sa.Integer(), nullable=True),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("authority", sa.String(length=32), nullable=False),
        sa.Column("judge", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("receipt_id", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_verdicts_task_id_tasks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_verdicts")),
        sa.UniqueConstraint("task_id", "attempt", "kind", name=op.f("uq_verdicts_task_id")),
    )
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_verdicts_task_id"), ["task_id"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_verdicts_task_id"))

    op.drop_table("verdicts")
    op.drop_table("submissions")
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tasks_verifier"))
        batch_op.drop_index("ix_tasks_status_verifier")
        batch_op.drop_index(batch_op.f("ix_tasks_status"))
        batch_op.drop_index(batch_op.f("ix_tasks_poster"))
        batch_op.drop_index(batch_op.f("ix_tasks_agent"))

    op.drop_table("tasks")
    with op.batch_alter_table("receipts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_receipts_task_id"))

    op.drop_table("receipts")
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_entries_txn"))
        batch_op.drop_index(batch_op.f("ix_ledger_entries_task_id"))
        batch_op.drop_index(batch_op.f("ix_ledger_entries_account"))

    op.drop_table("ledger_entries")
    op.drop_table("idempotency")
    op.drop_table("chain_head")
    op.drop_table("balances")
    op.drop_table("accounts")
