"""The receipt log on lanes: one head row per lane (``chain_lanes``, lane 0 taking over the one
chain's head), each receipt's lane, and its position in the order the log was written.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 03:30:00

Every receipt already on the log is on lane 0, at the position of its sequence, so the log
reads and verifies exactly as before. More lanes are made by the store as its setting asks
(``Store.migrate``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    lanes = op.create_table(
        "chain_lanes",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=160), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chain_lanes")),
    )
    assert lanes is not None
    op.execute(
        sa.text("INSERT INTO chain_lanes (id, seq, digest) SELECT 0, seq, digest FROM chain_head")
    )
    op.drop_table("chain_head")
    with op.batch_alter_table("receipts") as batch:
        batch.add_column(sa.Column("lane", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("position", sa.BigInteger(), nullable=True))
    op.execute(sa.text("UPDATE receipts SET position = seq"))
    with op.batch_alter_table("receipts") as batch:
        batch.alter_column("position", existing_type=sa.BigInteger(), nullable=False)
        batch.drop_constraint("uq_receipts_seq", type_="unique")
        batch.create_unique_constraint(op.f("uq_receipts_lane"), ["lane", "seq"])
        batch.create_unique_constraint(op.f("uq_receipts_position"), ["position"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.text("CREATE SEQUENCE receipt_positions"))
        op.execute(
            sa.text(
                "SELECT setval('receipt_positions', COALESCE(MAX(position), 0) + 1, false) "
                "FROM receipts"
            )
        )


def downgrade() -> None:
    """Revert this revision (a log of one lane only: two lanes cannot be one chain again)."""
    bind = op.get_bind()
    used = bind.execute(sa.text("SELECT COUNT(*) FROM chain_lanes WHERE seq > 0 AND id > 0"))
    if used.scalar_one():
        raise RuntimeError("receipts are on lanes above 0: this log cannot be one chain again")
    if bind.dialect.name == "postgresql":
        op.execute(sa.text("DROP SEQUENCE receipt_positions"))
    with op.batch_alter_table("receipts") as batch:
        batch.drop_constraint("uq_receipts_position", type_="unique")
        batch.drop_constraint("uq_receipts_lane", type_="unique")
        batch.create_unique_constraint("uq_receipts_seq", ["seq"])
        batch.drop_column("position")
        batch.drop_column("lane")
    head = op.create_table(
        "chain_head",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=160), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chain_head")),
    )
    assert head is not None
    op.execute(
        sa.text(
            "INSERT INTO chain_head (id, seq, digest) "
            "SELECT 1, seq, digest FROM chain_lanes WHERE id = 0"
        )
    )
    op.drop_table("chain_lanes")
