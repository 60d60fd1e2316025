"""Who is still asked for a meaning judgment: one row per pending call and named key.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05 01:20:00

A key owner's list of calls to judge read the oldest thousand pending calls of every judge and
kept its own: behind a thousand calls of other keys it showed none, and its cost grew with the
queue. Each pending call now names the keys still asked (``meaning_asks``), read by index.
Calls pending at this revision are asked of the ``key:`` judges of the policy they were queued
under, less those that already signed.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    asks = op.create_table(
        "meaning_asks",
        sa.Column("call_id", sa.String(length=64), nullable=False),
        sa.Column("judge", sa.String(length=80), nullable=False),
        sa.Column("queued_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("call_id", "judge", name=op.f("pk_meaning_asks")),
    )
    assert asks is not None
    op.create_index("ix_meaning_asks_judge", "meaning_asks", ["judge", "queued_at"])
    # Typed columns: a time stays a time and a document a document on every database.
    queue = sa.table(
        "meaning_queue",
        sa.column("call_id", sa.String()),
        sa.column("policy_digest", sa.String()),
        sa.column("state", sa.String()),
        sa.column("queued_at", sa.DateTime()),
    )
    policies = sa.table(
        "call_policies", sa.column("digest", sa.String()), sa.column("document", sa.JSON())
    )
    signed = sa.table(
        "meaning_key_judgments", sa.column("call_id", sa.String()), sa.column("judge", sa.String())
    )
    bind = op.get_bind()
    documents: dict[str, Any] = {
        row.digest: row.document for row in bind.execute(sa.select(policies))
    }
    done = {(row.call_id, row.judge) for row in bind.execute(sa.select(signed))}
    rows = []
    for row in bind.execute(sa.select(queue).where(queue.c.state == "pending")):
        document = documents.get(row.policy_digest)
        meaning = document.get("meaning") if isinstance(document, dict) else None
        judges = meaning.get("judges") if isinstance(meaning, dict) else None
        for judge in sorted({j for j in judges or [] if isinstance(j, str)}):
            if judge.startswith("key:") and (row.call_id, judge) not in done:
                rows.append({"call_id": row.call_id, "judge": judge, "queued_at": row.queued_at})
    if rows:
        op.bulk_insert(asks, rows)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_meaning_asks_judge", table_name="meaning_asks")
    op.drop_table("meaning_asks")
