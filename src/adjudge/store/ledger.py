"""The double-entry ledger: balances, entries, and the one rule every release of money obeys.

A transfer is two legs that sum to zero. Money may leave a holding account (a task's escrow, a
paid call's reservation, a provider's hold) only against a receipt appended in the same
transaction (its id is in :attr:`Transaction.appended`), and each leg records that receipt: no
escrow is released without a signed record of the determination that released it, and a reader
can reconcile every such entry with its receipt.

One release has no new determination: a provider hold maturing once its call's report deadline
passed (``matured``). Each names the receipt that settled its call, which must be on the log;
:func:`adjudge.app.settlement.mature` checks that the hold is that call's and is due.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import partial
from itertools import repeat
from typing import Any

from sqlalchemy import (
    Select,
    bindparam,
    case,
    delete,
    func,
    insert,
    or_,
    select,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.errors import BadInput, InternalError, StateError
from adjudge.market import WORLD, Transfer, platform_account
from adjudge.market.money import shown
from adjudge.store import day_counts, held_days, hot_rows, ids, receipt_log
from adjudge.store import schema as s
from adjudge.store.pages import decode_cursor, encode_cursor, past
from adjudge.store.transaction import Read, Transaction, one_row

#: Ledger accounts that hold money for a decision still to come: releasing from one needs a
#: receipt (task escrows, paid-call reservations).
HOLDING_PREFIXES = ("escrow:", "hold:", "held:")
#: A provider's hold: settled charges waiting out their report deadlines.
PROVIDER_HOLD_PREFIX = "held:"
#: Accounts of one task or one call (its escrow, its reservation): their lines are few and end
#: with what they hold, so their totals are summed from the lines, not counted; and the debit
#: that empties one deletes its balance row (one row a task or call would keep forever).
ITEM_PREFIXES = ("escrow:", "hold:")


class UnprovenRelease(InternalError):
    """Money was to leave a holding account without a receipt from the same transaction."""

    code = "UNPROVEN_RELEASE"


def transfer(
    tx: Transaction,
    transfers: Sequence[Transfer],
    *,
    task_id: str | None,
    at: datetime,
    receipt_id: str | None = None,
    matured: Sequence[str] = (),
) -> None:
    """Apply transfers as double entries; ``INSUFFICIENT_FUNDS`` if a debit would overdraw.

    The debit is one conditional UPDATE, so two racing spends of one balance cannot both
    succeed; its refusal is raised where it is sent (on PostgreSQL with the transaction's
    next round trip: :meth:`Transaction.later`), and refuses all the transaction wrote after
    it. The credit is one upsert. Consecutive transfers out of one account (a payout
    and its fee) are debited together: the total either fits or the whole step is refused,
    as one at a time would be. Only the world account may go below zero. A transfer out of a
    holding account needs ``receipt_id`` to name a receipt appended in this transaction
    (:class:`UnprovenRelease` otherwise) — or, only out of provider holds, ``matured``: for
    each transfer in order, a receipt already on the log (the one that settled the call whose
    hold matured), which its lines name. Debits out of providers' holds lock the wallets they
    credit first, then the holds, each in the one order of balances.
    """
    if not transfers:
        return
    if any(t.debit.startswith(HOLDING_PREFIXES) for t in transfers) and not _proven(
        tx, transfers, receipt_id, matured
    ):
        raise UnprovenRelease(
            "Money leaves a holding account only against a receipt signed in the same "
            "transaction; nothing was moved."
        )
    due = tx.credits_due
    legs: list[dict[str, Any]] = []
    runs = _runs(transfers)
    held = [run for run in runs if run[0].debit.startswith(PROVIDER_HOLD_PREFIX)]
    if held:  # a provider's hold is taken after what it credits: all of them in one order
        rows = [r for run in held for r in (hot_rows.balance(run[0].debit), *_credited(run))]
        hot_rows.take(tx, [rows])
    receipts: Iterator[str | None] = iter(matured) if matured else repeat(receipt_id)
    for run in runs:
        debit, total = run[0].debit, sum(t.amount for t in run)
        _credit_now(tx, debit)  # a debit sees what this transaction credited the account
        if debit == WORLD:
            tx.later(_UPSERT[tx.dialect], {"account": WORLD, "amount": 0})
            tx.later(_DEBIT_WORLD, {"acct": debit, "amt": total})
        else:  # checked as it is sent: the transaction goes on only if it fits
            refusal = partial(_too_little, debit, total)  # worded only if it is refused
            tx.later(_DEBIT, {"acct": debit, "amt": total}, check=one_row(refusal))
            if debit.startswith(ITEM_PREFIXES):  # emptied, it leaves no row behind
                tx.later(_DROP_EMPTY, {"acct": debit})
        for t in run:
            due[t.credit] = due.get(t.credit, 0) + t.amount  # added as it commits (flush)
            txn = ids.ordered_hex()
            common = {
                "txn": txn,
                "task_id": task_id,
                "memo": t.memo,
                "receipt_id": next(receipts),
                "at": at,
            }
            legs.append({**common, "account": t.debit, "amount": -t.amount})
            legs.append({**common, "account": t.credit, "amount": t.amount})
    tx.later_many(_INSERT_ENTRIES, legs)
    # The held money's daily figures move with it as this transaction commits (the dashboards').
    day = held_days.day_of(at)
    held_days.note(tx, ((leg["account"], leg["amount"]) for leg in legs), day)
    day_counts.note_flows(tx, ((t.memo, t.amount) for t in transfers), day)
    # And the ledger page's totals (movement_totals).
    day_counts.note_lines(
        tx, ((_kept(leg["account"]), leg["memo"], leg["amount"]) for leg in legs), day
    )


def _too_little(debit: str, total: int) -> StateError:
    """The refusal of a debit the account cannot cover."""
    return StateError(
        f"{debit} holds too little to move {shown(total)}.", code="INSUFFICIENT_FUNDS"
    )


def _credited(run: Sequence[Transfer]) -> list[hot_rows.Row]:
    """The balances a run of transfers credits at the commit, as :mod:`hot_rows` names them: a
    provider hold's debit (a maturity, a report's refund) takes the hold as it runs and credits
    a wallet after, out of the one order, so it locks the wallet first."""
    return [hot_rows.credited(t.credit) for t in run if t.credit != platform_account()]


def _kept(account: str) -> str | None:
    """``account`` if its totals are counted as it moves, None for one task's or call's."""
    return None if account.startswith(ITEM_PREFIXES) else account


def _proven(
    tx: Transaction, transfers: Sequence[Transfer], receipt_id: str | None, matured: Sequence[str]
) -> bool:
    """Whether ``receipt_id``, or each transfer's ``matured`` receipt, may release these
    transfers' holding debits."""
    if matured:
        return (
            receipt_id is None
            and len(matured) == len(transfers)
            and all(t.debit.startswith(PROVIDER_HOLD_PREFIX) for t in transfers)
            and receipt_log.on_log(tx, matured) == set(matured)
        )
    return receipt_id is not None and receipt_id in tx.appended


def flush(tx: Transaction) -> None:
    """Add the transaction's credits to their balances, in the one order of balances
    (:func:`adjudge.store.hot_rows.credit_order`), as it commits.

    Crediting is deferred to here because a credit cannot fail (only a debit may overdraw) and
    one balance is credited by nearly every transaction (a platform's fees, an agent paid for
    many tasks): written mid-transaction, its row lock would make every other writer wait for
    this whole transaction; written last, for its commit only. In one order, two
    transactions crediting the same accounts never wait for each other in a cycle. A debit
    (:func:`transfer`) and a read (:func:`balance`, :func:`balances`, :func:`total`) of the
    transaction see its credits first.
    """
    if tx.credits_due:
        due = sorted(tx.credits_due.items(), key=lambda item: hot_rows.credit_order(item[0]))
        tx.credits_due = {}
        rows = [{"account": a, "amount": n} for a, n in due]
        tx.later_many(_UPSERT[tx.dialect], rows)  # sent with the commit's round trip


def _credit_now(tx: Transaction, account: str) -> None:
    """Add the transaction's credit to ``account`` now, if it has one (a debit follows)."""
    amount = tx.credits_due.pop(account, None)
    if amount is not None:
        tx.later(_UPSERT[tx.dialect], {"account": account, "amount": amount})


def balance(tx: Transaction, account: str) -> int:
    """The balance of a ledger account (0 if never touched), with this transaction's credits."""
    q = select(s.balances.c.balance).where(s.balances.c.account == account)
    value = tx.conn.execute(q).scalar_one_or_none()
    return int(value or 0) + tx.credits_due.get(account, 0)


def balances(tx: Transaction) -> dict[str, int]:
    """Every ledger account's balance (with this transaction's credits) but the emptied
    escrows and call reservations (:data:`ITEM_PREFIXES`), whose rows their last debit
    deleted: so as many rows as wallets, providers and open tasks and calls, however many
    tasks and calls ever ran."""
    found = {r.account: int(r.balance) for r in tx.conn.execute(select(s.balances))}
    for account, amount in tx.credits_due.items():
        found[account] = found.get(account, 0) + amount
    return found


def balance_page(tx: Transaction, *, after: str | None, limit: int) -> list[tuple[str, int]]:
    """Up to ``limit`` balances by account name, after ``after`` (one range of the key): a
    page costs its size however many accounts hold money. A read outside a write has no
    credits due; inside one, each account's due credit is added."""
    b = s.balances.c
    q = select(b.account, b.balance).order_by(b.account).limit(limit)
    if after is not None:
        q = q.where(b.account > after)
    return [(a, int(v) + tx.credits_due.get(a, 0)) for a, v in tx.conn.execute(q)]


def sum_of_balances(tx: Transaction) -> int:
    """The sum of every balance (0 in a sound ledger), summed by the database: one aggregate
    over the balance rows (as many as wallets, providers and open tasks and calls)."""
    found = tx.conn.execute(select(func.coalesce(func.sum(s.balances.c.balance), 0))).scalar()
    return int(found or 0) + sum(tx.credits_due.values())


def total(tx: Transaction) -> tuple[int, int]:
    """The sum of all balances and the sum of all ledger entries: both 0 in a sound ledger.
    The second reads every line ever written (a recount: :func:`recount`)."""
    bal = tx.conn.execute(select(func.coalesce(func.sum(s.balances.c.balance), 0))).scalar()
    ent = tx.conn.execute(_SUM_OF_ENTRIES).scalar()
    return int(bal or 0) + sum(tx.credits_due.values()), int(ent or 0)


@dataclass(frozen=True)
class Recount:
    """The ledger summed from its lines: the sum of every line, and the accounts whose
    balance differs from the sum of their lines (the first :data:`UNMATCHED_SHOWN`, by
    name; an account with lines and no row counts as 0)."""

    sum_of_entries: int
    unmatched: list[str]


#: How many unmatched accounts a recount names.
UNMATCHED_SHOWN = 100


def recount(tx: Transaction) -> Recount:
    """Every line summed, in all and by account, against the balances: the audit the kept
    figures cannot be (they move with the same code that writes the lines). Reads the whole
    history, so it is asked for (``GET /ledger?recount=true``), never read on a hot path."""
    unmatched = [str(a) for a in tx.conn.execute(_UNMATCHED).scalars()]
    return Recount(int(tx.conn.execute(_SUM_OF_ENTRIES).scalar() or 0), unmatched)


def deposits(tx: Transaction) -> int:
    """All money that ever entered from outside: minus the world account's balance."""
    return -balance(tx, WORLD)


def entries(tx: Transaction, task_id: str) -> list[dict[str, Any]]:
    """The ledger entries of one task, oldest first."""
    return [
        {
            "txn": r["txn"],
            "account": r["account"],
            "amount": int(r["amount"]),
            "memo": r["memo"],
            "receipt_id": r["receipt_id"],
            "at": r["at"].isoformat(),
        }
        for r in tx.rows(_ENTRIES, {"k_task": task_id})
    ]


def entries_read(task_id: str) -> Read:
    """What :func:`entries` reads (to read it ahead with others: ``Transaction.ahead``)."""
    return _ENTRIES, {"k_task": task_id}


def releases(tx: Transaction) -> list[dict[str, Any]]:
    """Every leg debiting a holding account, with the receipt it names (for audits)."""
    e = s.ledger_entries
    q = select(e).where(e.c.amount < 0).order_by(e.c.id)
    return [
        dict(r._mapping) for r in tx.conn.execute(q) if str(r.account).startswith(HOLDING_PREFIXES)
    ]


def _runs(transfers: Sequence[Transfer]) -> list[list[Transfer]]:
    """Consecutive transfers out of one account, none of them back into it."""
    runs: list[list[Transfer]] = []
    for t in transfers:
        last = runs[-1] if runs else None
        if last and last[0].debit == t.debit and t.credit != t.debit != last[0].credit:
            last.append(t)
        else:
            runs.append([t])
    return runs


def _upsert(dialect: str) -> Any:
    """Add ``amount`` to an account's balance, creating the row at that amount if missing."""
    module: Any = postgresql if dialect == "postgresql" else sqlite
    stmt = module.insert(s.balances).values(
        account=bindparam("account"), balance=bindparam("amount")
    )
    return stmt.on_conflict_do_update(
        index_elements=[s.balances.c.account],
        set_={"balance": s.balances.c.balance + stmt.excluded.balance},
    )


_DEBIT = (
    update(s.balances)
    .where(s.balances.c.account == bindparam("acct"))
    .where(s.balances.c.balance >= bindparam("amt"))
    .values(balance=s.balances.c.balance - bindparam("amt"))
)
#: An escrow or call reservation its debit emptied: its row goes (its lines stay).
_DROP_EMPTY = delete(s.balances).where(
    s.balances.c.account == bindparam("acct"), s.balances.c.balance == 0
)
_SUM_OF_ENTRIES = select(func.coalesce(func.sum(s.ledger_entries.c.amount), 0))
# Each account's lines less its balance, in one grouping: not zero where the two differ (an
# account with lines and no row among them).
_NETS = union_all(
    select(s.ledger_entries.c.account, s.ledger_entries.c.amount.label("net")),
    select(s.balances.c.account, (-s.balances.c.balance).label("net")),
).subquery()
_UNMATCHED = (
    select(_NETS.c.account)
    .group_by(_NETS.c.account)
    .having(func.sum(_NETS.c.net) != 0)
    .order_by(_NETS.c.account)
    .limit(UNMATCHED_SHOWN)
)
_DEBIT_WORLD = (
    update(s.balances)
    .where(s.balances.c.account == bindparam("acct"))
    .values(balance=s.balances.c.balance - bindparam("amt"))
)
_ENTRIES = (
    select(s.ledger_entries)
    .where(s.ledger_entries.c.task_id == bindparam("k_task"))
    .order_by(s.ledger_entries.c.id)
)
_INSERT_ENTRIES = insert(s.ledger_entries)
_UPSERT = {dialect: _upsert(dialect) for dialect in ("sqlite", "postgresql")}


# --- reading the movements (the console's ledger page) -----------------------------------------


@dataclass(frozen=True)
class Movements:
    """Which ledger lines a reading keeps: ``accounts`` (None is every account; else only
    these), ``kind`` (a memo: ``fund``, ``payout``, ``fee``, …) and ``since`` ≤ ``at`` <
    ``until``. Every filter is optional."""

    accounts: tuple[str, ...] | None = None
    kind: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def where(self, q: Select[Any]) -> Select[Any]:
        """``q`` narrowed to these lines."""
        e = s.ledger_entries
        if self.accounts is not None:
            q = q.where(e.c.account.in_(self.accounts))
        if self.kind is not None:
            # Within accounts, the kind is checked on each of their lines (``|| ''``: not an
            # index the planner may take instead): SQLite took the kind's index over the
            # accounts' and walked every line of the kind, every account's, to find theirs.
            memo = e.c.memo if self.accounts is None else e.c.memo + ""
            q = q.where(memo == self.kind)
        if self.since is not None:
            q = q.where(e.c.at >= self.since)
        if self.until is not None:
            q = q.where(e.c.at < self.until)
        return q


def movements(
    tx: Transaction, which: Movements, *, limit: int, cursor: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ledger lines, newest first (by time, then entry id), each with the account
    on the other side of its transfer; and the cursor of the next page (None on the last;
    ``CURSOR_INVALID`` for one this store did not make).

    A page reads at most ``limit + 1`` lines per account asked for (each through the
    (account, at, id) index; with no account, through (memo, at, id) or (at, id)) and their
    counterparts through the txn index: its cost does not grow with the ledger's history. A
    filter the index does not lead with (a kind within accounts) is checked on the first
    :data:`SIFTED_LINES` lines of each account's walk only: a page that found fewer than
    ``limit`` there ends where the walks did, with a cursor from there.
    """
    e = s.ledger_entries
    q = select(e)
    if cursor is not None:
        when, last = decode_cursor(cursor)
        if not (last.isascii() and last.isdigit() and len(last) <= 18):  # a 64-bit line id
            raise BadInput(
                "That cursor is not one a listing gave; start from the first page.",
                code="CURSOR_INVALID",
            )
        q = q.where(past(e.c.at, e.c.id, when, int(last), key_descending=True))
    newest = (e.c.at.desc(), e.c.id.desc())
    # One walk per account, merged: each stays on its own index range (an IN list would make
    # some planners gather every line of those accounts to sort them).
    groups: list[tuple[str, ...] | None] = (
        [which.accounts] if which.accounts is None else [(a,) for a in which.accounts]
    )
    stop = None
    if which.accounts is not None and which.kind is not None:  # a kind the range does not lead
        stop = _walks_end(tx, which, q, groups)
        if stop is not None:  # no later than where every account's walk has reached
            q = q.where(e.c.at >= stop[0], or_(e.c.at > stop[0], e.c.id >= stop[1]))
    rows = [
        row
        for accounts in groups
        for row in tx.conn.execute(
            replace(which, accounts=accounts).where(q).order_by(*newest).limit(limit + 1)
        )
    ]
    rows.sort(key=lambda r: (r.at, r.id), reverse=True)
    more = len(rows) > limit
    rows = rows[:limit]
    other = _counterparts(tx, rows)
    lines = [
        {
            "id": r.id,
            "txn": r.txn,
            "account": r.account,
            "counterpart": other.get((r.txn, r.id)),
            "amount": int(r.amount),
            "kind": r.memo,
            "task_id": r.task_id,
            "receipt_id": r.receipt_id,
            "at": r.at.isoformat(),
        }
        for r in rows
    ]
    following = encode_cursor(rows[-1].at, str(rows[-1].id)) if more and rows else None
    if following is None and stop is not None:
        following = encode_cursor(stop[0], str(stop[1]))
    return lines, following


#: The most lines of an account a page of one kind walks (its index leads with the account,
#: not the kind): the page may then hold fewer than its ``limit`` and still give a cursor, read
#: on from where the walk stopped. Without the bound, a page of a kind rare in an account
#: walked every line it ever had.
SIFTED_LINES = 2_000


def _walks_end(
    tx: Transaction, which: Movements, q: Select[Any], groups: list[tuple[str, ...] | None]
) -> tuple[datetime, int] | None:
    """Where each account's walk of :data:`SIFTED_LINES` lines from the cursor ends, the
    newest of those ends (None: every account's range is shorter)."""
    e = s.ledger_entries
    ends = []
    for accounts in groups:
        walk = replace(which, accounts=accounts, kind=None).where(
            q.with_only_columns(e.c.at, e.c.id)
        )
        walk = walk.order_by(e.c.at.desc(), e.c.id.desc()).offset(SIFTED_LINES - 1).limit(1)
        end = tx.conn.execute(walk).first()
        if end is not None:
            ends.append((end.at, int(end.id)))
    return max(ends) if ends else None


def _counterparts(tx: Transaction, rows: Sequence[Any]) -> dict[tuple[str, int], str]:
    """The other leg's account of each row's transfer (a transfer is two legs under one txn)."""
    if not rows:
        return {}
    e = s.ledger_entries
    legs = tx.conn.execute(
        select(e.c.txn, e.c.id, e.c.account).where(e.c.txn.in_({r.txn for r in rows}))
    )
    by_txn: dict[str, list[tuple[int, str]]] = {}
    for leg in legs:
        by_txn.setdefault(leg.txn, []).append((leg.id, leg.account))
    found = {}
    for r in rows:
        others = [account for leg_id, account in by_txn.get(r.txn, []) if leg_id != r.id]
        if others:
            found[(r.txn, r.id)] = others[0]
    return found


def movement_totals(tx: Transaction, which: Movements) -> dict[str, int]:
    """The lines ``which`` keeps, summed: how many, the money in (credits), the money out
    (debits, negative) and their sum.

    The whole UTC days of the range are read from the counts every transfer keeps by day and
    for all time (:func:`adjudge.store.day_counts.note_lines`): the days asked for, or since
    the range's end when it has no start, × memos, however many lines they count.
    Summed from the lines themselves: a part of a day at either end of the range (a bound
    that is not midnight; at most a day's lines each) and the accounts of one task or one call
    (:data:`ITEM_PREFIXES`), whose lines are few. So the cost does not grow with the ledger's
    history, only with the days asked for.
    """
    accounts = which.accounts
    items = () if accounts is None else tuple(a for a in accounts if _kept(a) is None)
    kept = None if accounts is None else tuple(a for a in accounts if _kept(a) is not None)
    sums = _Sums()
    if items:
        sums.add(*_summed(tx, replace(which, accounts=items)))
    if kept != ():
        days, parts = _whole_days(which.since, which.until)
        for since, until in parts:
            sums.add(*_summed(tx, replace(which, accounts=kept, since=since, until=until)))
        if days is not None:
            subjects = [day_counts.EVERYONE] if kept is None else list(kept)
            counts = _counted(tx, subjects, *days)
            credits = _by_memo(counts, "in", which.kind)
            debits = -credits if kept is None else _by_memo(counts, "out", which.kind)
            sums.add(_by_memo(counts, "lines", which.kind), credits, debits)
    return {
        "lines": sums.lines,
        "credits": sums.credits,
        "debits": sums.debits,
        "net": sums.credits + sums.debits,
    }


def _counted(
    tx: Transaction, subjects: Sequence[str], first_day: str | None, end_day: str | None
) -> dict[str, int]:
    """The ledger's counts of ``subjects`` by name over whole days: read from the days asked
    for, or with no first day from the counts for all time less the days from ``end_day`` on
    (so a range open at either end reads only the days since its bound, never the history
    before it)."""
    if first_day is not None or end_day is None:
        return day_counts.summed(tx, day_counts.LEDGER, subjects, first_day, end_day)
    ever = day_counts.summed(tx, day_counts.LEDGER, subjects, None, None)
    later = day_counts.summed(tx, day_counts.LEDGER, subjects, end_day, None)
    return {name: n - later.get(name, 0) for name, n in ever.items()}


@dataclass
class _Sums:
    """Totals added up from their parts (counted days, parts of a day, single accounts)."""

    lines: int = 0
    credits: int = 0
    debits: int = 0

    def add(self, lines: int, credits: int, debits: int) -> None:
        self.lines += lines
        self.credits += credits
        self.debits += debits


def _by_memo(counts: Mapping[str, int], what: str, kind: str | None) -> int:
    """The counts named ``what`` (lines, in, out), of one memo or of all."""
    if kind is not None:
        return counts.get(f"{what} {kind}", 0)
    head = f"{what} "
    return sum(n for name, n in counts.items() if name.startswith(head))


def _whole_days(
    since: datetime | None, until: datetime | None
) -> tuple[tuple[str | None, str | None] | None, list[tuple[datetime | None, datetime | None]]]:
    """The whole UTC days from ``since`` to ``until``: their first day and the day after their
    last (None where unbounded; no days at all, None), and the parts of a day left at either
    end. A range with no whole day in it (inside a day or two) is one part."""
    first = end = None
    parts: list[tuple[datetime | None, datetime | None]] = []
    if since is not None:
        first = _day_start(since)
        if first < since:
            if first.date() == date.max:  # no whole day after it on the calendar
                return None, [(since, until)]
            first += timedelta(days=1)
            parts.append((since, first))
    if until is not None:
        end = _day_start(until)
        if end < until:
            parts.append((end, until))
    if first is not None and end is not None and first >= end:
        return None, [(since, until)]
    days = (
        None if first is None else held_days.day_of(first),
        None if end is None else held_days.day_of(end),
    )
    return days, parts


def _day_start(at: datetime) -> datetime:
    """The UTC midnight at or before ``at`` (a naive time is UTC)."""
    moment = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return datetime.combine(moment.astimezone(UTC).date(), time(), tzinfo=UTC)


def _summed(tx: Transaction, which: Movements) -> tuple[int, int, int]:
    """The lines ``which`` keeps, summed from the lines: how many, credits and debits."""
    e = s.ledger_entries
    credit = case((e.c.amount > 0, e.c.amount), else_=0)
    debit = case((e.c.amount < 0, e.c.amount), else_=0)
    q = which.where(
        select(
            func.count(),
            func.coalesce(func.sum(credit), 0),
            func.coalesce(func.sum(debit), 0),
        ).select_from(e)
    )
    count, credits, debits = tx.conn.execute(q).one()
    return int(count), int(credits), int(debits)
