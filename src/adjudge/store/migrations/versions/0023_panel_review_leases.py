"""Review leases per verifier: each verifier of a panel leases a submission for its own worker.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 15:45:00

A lease was one per submission; it is now one per submission and verifier. Leases taken before
this revision were all taken by their task's one named verifier, and are kept as that
verifier's.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_FIELDS = ("task_id", "attempt", "tries", "locked_until", "gave_up", "last_error")


def _columns(*, verifier: bool) -> list[sa.Column[object]]:
    columns: list[sa.Column[object]] = [
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
    ]
    if verifier:
        columns.append(sa.Column("verifier", sa.String(length=64), nullable=False))
    return [
        *columns,
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("locked_until", sa.DateTime(), nullable=False),
        sa.Column("gave_up", sa.Boolean(), nullable=False),
        sa.Column("last_error", sa.String(length=500), nullable=True),
    ]


def _rebuild(*, verifier: bool) -> None:
    """Recreate the table with or without ``verifier`` in its key, keeping its rows (read and
    written through typed columns, so a time stays a time on every database)."""
    before = _columns(verifier=not verifier)
    old = sa.table("review_leases", *(sa.column(c.name, c.type) for c in before))
    tasks = sa.table("tasks", sa.column("id", sa.String()), sa.column("verifier", sa.String()))
    query = sa.select(old, tasks.c.verifier.label("named")).join(tasks, tasks.c.id == old.c.task_id)
    rows = [dict(row._mapping) for row in op.get_bind().execute(query)]
    op.drop_table("review_leases")
    key = ["task_id", "attempt", "verifier"] if verifier else ["task_id", "attempt"]
    new = op.create_table(
        "review_leases",
        *_columns(verifier=verifier),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_review_leases_task_id_tasks")
        ),
        sa.PrimaryKeyConstraint(*key, name=op.f("pk_review_leases")),
    )
    kept = []
    for row in rows:
        if verifier:
            kept.append({**{f: row[f] for f in _FIELDS}, "verifier": row["named"] or ""})
        elif row.get("verifier") == row["named"]:  # a panel verifier's lease has no place
            kept.append({f: row[f] for f in _FIELDS})
    if kept:
        op.bulk_insert(new, kept)


def upgrade() -> None:
    """Apply this revision."""
    _rebuild(verifier=True)


def downgrade() -> None:
    """Revert this revision."""
    _rebuild(verifier=False)
