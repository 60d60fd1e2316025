"""The money held under each holding prefix at the end of each UTC day, kept as it moves.

Every transfer that touches a holding account (a task's escrow, a call's reservation, a
provider's hold) notes its net for that prefix and day on the transaction (:func:`note`, called
by :func:`adjudge.store.ledger.transfer`); the transaction writes what it noted as it commits,
in two statements per prefix and day (:func:`flush`, called by the store). A day with no
movement has no row: its figure is the last day's before it. So the dashboards read a window's
held money in O(days) (:func:`figures`), however many escrows and holds were ever opened;
:func:`recount` is the same figures summed from the ledger's lines, for the tests and a check.

The figures are kept per lane of the receipt log (:mod:`adjudge.store.receipt_log`): a
transaction writes them on the lane it chains its receipts on, whose head row it holds locked
until it commits. So no two transactions ever write the same row at once and none waits for
another here — one shared row per day would make every paid call and every payout of every
process queue behind each other on PostgreSQL — and a day's figure is the sum of its lanes'.
A transfer dated before days already written on its lane adds its net to them too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, bindparam, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.market.money import LEDGER_CURRENCY
from adjudge.store import receipt_log
from adjudge.store import schema as s
from adjudge.store.transaction import Read, Transaction

#: The ledger's holding prefixes, each kept as one figure.
PREFIXES = ("escrow:", "hold:", "held:")


def day_of(at: datetime) -> str:
    """The UTC day of a moment, as the table keeps it (a naive time is UTC)."""
    moment = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return moment.astimezone(UTC).date().isoformat()


def prefix_of(account: str) -> str | None:
    """The holding prefix of a ledger account, or None for any other account."""
    return next((p for p in PREFIXES if account.startswith(p)), None)


def note(tx: Transaction, legs: Iterable[tuple[str, int]], day: str) -> None:
    """Note what (account, signed amount) legs of ``day`` move under each holding prefix, to
    be written when the transaction commits (:func:`flush`)."""
    moves = tx.held_moves
    for account, amount in legs:
        prefix = prefix_of(account)
        if prefix is not None:
            key = (prefix, day)
            moves[key] = moves.get(key, 0) + amount


def flush(tx: Transaction, currency: str = LEDGER_CURRENCY) -> None:
    """Write the noted moves on this transaction's lane of the receipt log (taken, and locked,
    if it has none yet): each (prefix, day)'s net added to its figure and to every later day's
    already written on the lane. A no-op when nothing held moved."""
    moved = {k: v for k, v in tx.held_moves.items() if v}
    tx.held_moves.clear()
    if not moved:
        return
    lane = receipt_log.lane(tx)
    for (prefix, day), delta in sorted(moved.items()):
        key = {"k_prefix": prefix, "k_currency": currency, "k_lane": lane, "k_day": day}
        # Nothing here is read back: held for the commit's round trip (none of their own).
        tx.later(_ADD[tx.dialect], {**key, "delta": delta})
        tx.later(_LATER, {**key, "delta": delta})


def figures(
    tx: Transaction, prefixes: Sequence[str], days: Sequence[str], currency: str = LEDGER_CURRENCY
) -> dict[str, list[int]]:
    """Each prefix's held money at the end of each of ``days`` (consecutive, oldest first):
    the window's rows in one read, and for each prefix and lane the last row before the window
    (an index read each, read ahead together: on PostgreSQL one round trip for all of them)."""
    h = s.held_days.c
    lanes = [int(n) for n in tx.conn.execute(select(s.chain_lanes.c.id)).scalars()]
    inside: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    # The lanes named: the key is (prefix, currency, lane, day), so without them the window's
    # day range bound nothing, and every day ever written of every lane was read.
    window = select(h.prefix, h.lane, h.day, h.held).where(
        h.prefix.in_(prefixes),
        h.currency == currency,
        h.lane.in_(lanes),
        h.day >= days[0],
        h.day <= days[-1],
    )
    for prefix, lane, day, held in tx.conn.execute(window):
        inside[(str(prefix), int(lane))][str(day)] = int(held)
    before = {
        (p, lane): _before_read(p, lane, currency, days[0]) for p in prefixes for lane in lanes
    }
    out: dict[str, list[int]] = {}
    with tx.ahead(list(before.values())):
        for prefix in prefixes:
            totals = [0] * len(days)
            for lane in lanes:
                last = tx.rows(*before[(prefix, lane)])
                running = int(last[0]["held"]) if last else 0
                mine = inside.get((prefix, lane), {})
                for i, day in enumerate(days):
                    running = mine.get(day, running)
                    totals[i] += running
            out[prefix] = totals
    return out


def _before_read(prefix: str, lane: int, currency: str, first_day: str) -> Read:
    """The last figure of ``prefix`` on ``lane`` before ``first_day``."""
    return _BEFORE, {"k_prefix": prefix, "k_lane": lane, "k_currency": currency, "k_day": first_day}


_BEFORE = (
    select(s.held_days.c.held)
    .where(
        s.held_days.c.prefix == bindparam("k_prefix"),
        s.held_days.c.currency == bindparam("k_currency"),
        s.held_days.c.lane == bindparam("k_lane"),
        s.held_days.c.day < bindparam("k_day"),
    )
    .order_by(s.held_days.c.day.desc())
    .limit(1)
)


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
    (_h.lane == bindparam("k_lane")),
)
_LATER = (
    update(s.held_days)
    .where(*_KEY, _h.day > bindparam("k_day"))
    .values(held=_h.held + bindparam("delta", type_=BigInteger))
)
_PRIOR = select(_h.held).where(*_KEY, _h.day < bindparam("k_day")).order_by(_h.day.desc()).limit(1)


def _add(dialect: str) -> Any:
    """Add ``delta`` to a day's figure on a lane; a day's first row starts from the figure of
    the lane's last day before it (only the transaction holding the lane writes its rows)."""
    module: Any = postgresql if dialect == "postgresql" else sqlite
    delta = bindparam("delta", type_=BigInteger)
    stmt = module.insert(s.held_days).values(
        prefix=bindparam("k_prefix"),
        currency=bindparam("k_currency"),
        lane=bindparam("k_lane"),
        day=bindparam("k_day"),
        held=func.coalesce(_PRIOR.scalar_subquery(), 0) + delta,
    )
    return stmt.on_conflict_do_update(
        index_elements=[_h.prefix, _h.currency, _h.lane, _h.day], set_={"held": _h.held + delta}
    )


_ADD = {dialect: _add(dialect) for dialect in ("sqlite", "postgresql")}
