"""No index another one leads: each row written pays for every index it is in.

An index on the first columns of another index of its table reads nothing the other does not,
so it goes (as 0027's went): a task's status beside ``(status, verifier)``, and the task or
tool that leads a unique key (a verdict's ``(task_id, attempt, kind)``, a panel vote's
``(task_id, attempt, verifier)``, a contract's ``(tool, version)``, a policy's ``(tool,
policy_id, version)``). A finalize writes a task and a verdict: two index entries fewer each.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-05 22:45:00
"""

from __future__ import annotations

from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

#: Indexes whose columns lead another index of their table.
_LEADING = {
    "ix_tasks_status": ("tasks", "status"),
    "ix_verdicts_task_id": ("verdicts", "task_id"),
    "ix_task_votes_task_id": ("task_votes", "task_id"),
    "ix_call_contracts_tool": ("call_contracts", "tool"),
    "ix_call_policies_tool": ("call_policies", "tool"),
}


def upgrade() -> None:
    """Apply this revision."""
    for name, (table, _column) in _LEADING.items():
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    """Revert this revision."""
    for name, (table, column) in _LEADING.items():
        op.create_index(name, table, [column])
