"""The dashboards' daily counts, kept by the transactions that make them: calls by verdict,
task verdicts, money flows, failing checks and rules, a poster's tasks by state, and each
provider's observed calls by what its quality window counts them as.

The rows before this revision are counted here, once, from the calls, verdicts, ledger lines,
call records and tasks (on lane 0 of the receipt log: a count is the sum of its lanes'), so
the dashboards read the same history as before.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-05 05:00:00
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

#: As in adjudge.store.day_counts, written out: a revision does not change with later code.
_FLOW_OF = {
    "charge": "charged",
    "refund": "refunded",
    "void": "refunded",
    "report refund": "refunded",
    "payout": "paid_out",
    "release": "paid_out",
    "fee": "fees",
}
_NAME_LENGTH = 200
_BATCH = 5_000


def upgrade() -> None:
    """Apply this revision."""
    table = op.create_table(
        "day_counts",
        sa.Column("family", sa.String(length=16), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("lane", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "family", "subject", "day", "name", "lane", name=op.f("pk_day_counts")
        ),
    )
    conn = op.get_bind()
    counts: Counter[tuple[str, str, str, str]] = Counter()

    def add(family: str, subject: str, day: str, name: str, n: int = 1) -> None:
        counts[family, subject, day, name[:_NAME_LENGTH].replace("\x00", "\ufffd")] += n

    for provider, started_at, verdict in _rows(
        conn, "SELECT provider, started_at, verdict FROM gateway_calls WHERE state = 'done'"
    ):
        for subject in ("", str(provider)):
            add("calls", subject, _day(started_at), verdict or "none")
    for poster, at, passed, detail in _rows(
        conn,
        "SELECT tasks.poster, verdicts.at, verdicts.passed, verdicts.detail FROM verdicts "
        "JOIN tasks ON tasks.id = verdicts.task_id WHERE verdicts.passed IS NOT NULL",
    ):
        day, outcome = _day(at), "passed" if passed else "failed"
        add("verdicts", "", day, outcome)
        add("verdicts", str(poster), day, outcome)
        if not passed:
            for rule in _failed_rules(_json(detail) or {}):
                add("rules", str(poster), day, rule)
    for memo, amount, at in _rows(
        conn, "SELECT memo, amount, at FROM ledger_entries WHERE amount > 0"
    ):
        flow = _FLOW_OF.get(str(memo))
        if flow is not None:
            add("flows", "", _day(at), flow, int(amount))
    for provider, at, record, source, verdict, enforced, error_kind in _rows(
        conn,
        "SELECT provider, at, record, source, coalesce(final_verdict, verdict), enforced, "
        "error_kind FROM call_records",
    ):
        rows = (_json(record) or {}).get("checks")
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and row.get("outcome") == "fail":
                add("checks", str(provider), _day(at), str(row.get("name")))
        if source == "gateway":
            add("quality", str(provider), _day(at), _counted_as(verdict, enforced, error_kind))
    for poster, status, n in _rows(
        conn, "SELECT poster, status, count(*) FROM tasks GROUP BY poster, status"
    ):
        add("states", str(poster), "", str(status), int(n))
    rows = [
        {"family": f, "subject": s, "day": d, "name": name, "lane": 0, "n": n}
        for (f, s, d, name), n in sorted(counts.items())
        if n
    ]
    for i in range(0, len(rows), _BATCH):
        op.bulk_insert(table, rows[i : i + _BATCH])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("day_counts")


def _rows(conn: Any, sql: str) -> Any:
    return conn.execute(sa.text(sql).execution_options(yield_per=_BATCH))


def _day(at: Any) -> str:
    moment = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).date().isoformat()


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _counted_as(verdict: str | None, enforced: Any, error_kind: str | None) -> str:
    if error_kind is not None:
        return "request_errors" if error_kind == "request_error" else "system_errors"
    if enforced and verdict == "PASS":
        return "passes"
    if enforced and verdict == "FAIL":
        return "fails"
    return "not_counted"


def _failed_rules(detail: Any) -> list[str]:
    breakdown = detail.get("breakdown") if isinstance(detail, dict) else None
    if not isinstance(breakdown, list):
        return []
    items = [str(i.get("name")) for i in breakdown if isinstance(i, dict) and _below_full(i)]
    if items:
        return items
    reasons = detail.get("reasons")
    if not isinstance(reasons, list):
        return []
    return [str(r).split(":")[0].strip() for r in reasons if str(r).strip()]


def _below_full(item: dict[str, Any]) -> bool:
    score = item.get("score", 1)
    return isinstance(score, int | float) and not isinstance(score, bool) and score < 1
