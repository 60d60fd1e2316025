"""The money held under each holding prefix at the end of each UTC day, kept as it moves.

Every transfer that touches a holding account (a task's escrow, a call's reservation, a
provider's hold) adds its net to that prefix's figure for the transfer's day, in the same
transaction (:func:`add`, called by :func:`adjudge.store.ledger.transfer`). A day with no
movement has no row: its figure is the last day's before it. So the dashboards read a window's
held money in O(days) (:func:`figures`), however many escrows and holds were ever opened;
:func:`recount` is the same figures summed from the ledger's lines, for the tests and a check.

Under concurrency (PostgreSQL, read committed) a day's first row starts from the previous
day's figure read ``FOR UPDATE``: a late transaction still adding to that previous day holds its
row, so the new day starts only after it committed, and a transfer dated before days already
written adds its net to them too (:data:`_LATER`, a separate statement that sees what committed
while it waited). Rows are written in (prefix, day) order, the same in every transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.market.money import LEDGER_CURRENCY
from adjudge.store import schema as s
from adjudge.store.transaction import Transaction

#: The ledger's holding prefixes, each kept as one figure.
PREFIXES = ("escrow:", "hold:", "held:")


def day_of(at: datetime) -> str:
    """The UTC day of a moment, as the table keeps it (a naive time is UTC)."""
    moment = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return moment.astimezone(UTC).date().isoformat()


def prefix_of(account: str) -> str | None:
    """The holding prefix of a ledger account, or None for any other account."""
    return next((p for p in PREFIXES if account.startswith(p)), None)


def net(legs: Iterable[tuple[str, int, datetime]]) -> dict[tuple[str, str], int]:
    """What (account, signed amount, at) legs add to each (prefix, day): zero sums dropped."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    for account, amount, at in legs:
        prefix = prefix_of(account)
        if prefix is not None:
            out[prefix, day_of(at)] += amount
    return {k: v for k, v in out.items() if v}


def add(
    tx: Transaction, moved: Mapping[tuple[str, str], int], currency: str = LEDGER_CURRENCY
) -> None:
    """Add each (prefix, day)'s net to its figure and to every later day's already written."""
    for (prefix, day), delta in sorted(moved.items()):
        key = {"k_prefix": prefix, "k_currency": currency, "k_day": day, "delta": delta}
        if tx.run(_BUMP, key).rowcount != 1:
            before = tx.run(_PRIOR, {k: key[k] for k in ("k_prefix", "k_currency", "k_day")})
            row = before.fetchone()
            prior = int(row[0]) if row is not None else 0
            tx.run(_UPSERT[tx.dialect], {**key, "held": prior + delta})
        tx.run(_LATER, key)


def figures(
    tx: Transaction, prefixes: Sequence[str], days: Sequence[str], currency: str = LEDGER_CURRENCY
) -> dict[str, list[int]]:
    """Each prefix's held money at the end of each of ``days`` (consecutive, oldest first):
    two index reads per prefix — the window's rows and the last one before it."""
    h = s.held_days.c
    out: dict[str, list[int]] = {}
    for prefix in prefixes:
        mine = (h.prefix == prefix) & (h.currency == currency)
        before = tx.conn.execute(
            select(h.held).where(mine, h.day < days[0]).order_by(h.day.desc()).limit(1)
        ).scalar()
        inside = dict(
            tx.conn.execute(
                select(h.day, h.held).where(mine, h.day >= days[0], h.day <= days[-1])
            ).all()
        )
        running, series = int(before or 0), []
        for day in days:
            running = int(inside.get(day, running))
            series.append(running)
        out[prefix] = series
    return out


def recount(tx: Transaction, prefixes: Sequence[str], days: Sequence[str]) -> dict[str, list[int]]:
    """:func:`figures` summed from every ledger line (a full scan: for tests and checks)."""
    e = s.ledger_entries.c
    moved: dict[str, dict[str, int]] = {p: defaultdict(int) for p in prefixes}
    for account, amount, at in tx.conn.execute(select(e.account, e.amount, e.at)):
        prefix = prefix_of(str(account))
        if prefix in moved:
            moved[prefix][day_of(at)] += int(amount)
    out = {}
    for prefix in prefixes:
        ends = [datetime.fromisoformat(d).date() + timedelta(days=1) for d in days]
        out[prefix] = [
            sum(v for d, v in moved[prefix].items() if datetime.fromisoformat(d).date() < end)
            for end in ends
        ]
    return out


_h = s.held_days.c  # its columns (the table itself is schema's)
_KEY = (
    (_h.prefix == bindparam("k_prefix")),
    (_h.currency == bindparam("k_currency")),
)
_BUMP = (
    update(s.held_days)
    .where(*_KEY, _h.day == bindparam("k_day"))
    .values(held=_h.held + bindparam("delta"))
)
_LATER = (
    update(s.held_days)
    .where(*_KEY, _h.day > bindparam("k_day"))
    .values(held=_h.held + bindparam("delta"))
)
_PRIOR = (
    select(_h.held)
    .where(*_KEY, _h.day < bindparam("k_day"))
    .order_by(_h.day.desc())
    .limit(1)
    .with_for_update()
)


def _upsert(dialect: str) -> Any:
    """A day's first row at ``held``; when another transaction wrote it first, add ``delta``."""
    module: Any = postgresql if dialect == "postgresql" else sqlite
    stmt = module.insert(s.held_days).values(
        prefix=bindparam("k_prefix"),
        currency=bindparam("k_currency"),
        day=bindparam("k_day"),
        held=bindparam("held"),
    )
    return stmt.on_conflict_do_update(
        index_elements=[_h.prefix, _h.currency, _h.day],
        set_={"held": _h.held + bindparam("delta")},
    )


_UPSERT = {dialect: _upsert(dialect) for dialect in ("sqlite", "postgresql")}
