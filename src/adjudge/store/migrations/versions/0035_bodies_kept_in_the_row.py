"""A receipt's, a gateway call's and a call record's JSON kept in its row (PostgreSQL).

PostgreSQL moves a value out of a row once the row passes about 2 kB: it first tries to
compress it (pglz), then writes it to the table's TOAST table in chunks of 2 kB, each an entry
in that table and in its index. A receipt's body (about 2.7 kB of signatures, digests and
hex, which pglz cannot shrink) paid both on every write, and every read put it back together:
in a profile of PostgreSQL under the finalize benchmark, pglz alone was 3.4 % of its CPU and
the TOAST write 6.8 %. With ``toast_tuple_target`` at its largest, a row is kept whole up to a
page (8 kB) and only a longer one is moved out; nothing else changes (SQLite keeps each row
whole already).

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-06 02:20:00
"""

from __future__ import annotations

from alembic import op

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None

_TABLES = ("receipts", "gateway_calls", "call_records")
#: A page (8 kB) less its header: the largest target PostgreSQL takes.
_WHOLE_PAGE = 8160


def upgrade() -> None:
    """Apply this revision."""
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"ALTER TABLE {table} SET (toast_tuple_target = {_WHOLE_PAGE})")


def downgrade() -> None:
    """Revert this revision."""
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"ALTER TABLE {table} RESET (toast_tuple_target)")
