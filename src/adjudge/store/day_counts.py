"""What the console's dashboards count, kept by the transactions that make it.

The dashboards show, for each UTC day of a window of up to 90, the calls by verdict (the
service's and a provider's), the task verdicts passed and failed (the service's and a poster's),
the money charged, refunded, paid out and taken as fees, the checks a provider's calls failed and
the rules a poster's tasks failed; and a poster's tasks by state. The ledger page's totals are
the ledger's lines, money in and money out of each day and of all time, by memo, for everyone
and by account; the operator counts the webhook deliveries by status; and, for the metrics, the
providers' holds still open.
Read from the rows they count, each grows with the activity in its window: at the gateway's
rate, a billion calls a month.

So each transaction notes what it changes as it changes it — a call ended (counted under its
verdict, on the day it started; moved if a later judgment supersedes it), a verdict, a money
movement, a verified call's failed checks (and, for an observed call, what its provider's
quality window counts it as), a task's state — and writes the sums as it commits, in one
statement (:func:`flush`, called by the store). A dashboard reads its window's counts
(:func:`window`): O(days × names), however many rows they count. The tests recount them from
the rows themselves after every scenario they audit.

Like the held money's figures (:mod:`adjudge.store.held_days`), the counts are kept per lane of
the receipt log, written by the transaction holding the lane, so no two writers ever wait for
the same counter row; a count is the sum of its lanes'.

A row keeps its count in two parts, ``high * 2^32 + n`` with ``0 <= n < 2^32`` (revision
0048), each addition carrying into ``high``: the money counts grow with every transfer for all
time, and only the money in the ledger is bounded (2^63 - 1 in all). In one 64-bit column, two
tasks of 2^62 posted and cancelled filled "money in fund", and every funding after failed on
PostgreSQL (rolled back with its transfer) while SQLite turned the sums into floats. A reader
sums each part over its rows and joins them (:func:`joined`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, func, select, text
from sqlalchemy.dialects import sqlite

from adjudge.store import held_days, receipt_log
from adjudge.store import schema as s
from adjudge.store.transaction import Read, Transaction

#: The kinds of count, each a family of rows.
CALLS = "calls"  # ended forwarded calls by the day they started, by verdict (or "none")
VERDICTS = "verdicts"  # task verdicts and rulings by day: "passed" or "failed"
FLOWS = "flows"  # money moved in by day, in minor units, by flow (FLOW_MEMOS)
CHECKS = "checks"  # a provider's verified calls' failed checks by day, by check name
RULES = "rules"  # a poster's failed verdicts' rules by day, by rule (failed_rules)
STATES = "states"  # a poster's tasks by state, for all time (day ALL_TIME)
QUALITY = "quality"  # a provider's observed calls by day, by what its quality window counts
LEDGER = "ledger"  # ledger lines by day and for all time: "lines|in|out <memo>"
DELIVERIES = "deliveries"  # webhook deliveries by status, for all time (day ALL_TIME)
HOLDS = "holds"  # settled calls' charges still held: by the hour they mature, and for all time

#: The subject of the counts of everyone (the operator's); otherwise a provider or a poster.
EVERYONE = ""
#: The day of a count that is not by day.
ALL_TIME = ""
#: The longest name counted (a check's or a rule's): a longer one is counted cut to this.
NAME_LENGTH = 200
#: An ended call that has no verdict (a request or system error).
NO_VERDICT = "none"
#: The names of the holds' counts: how many are open, and (for all time) the money in them.
OPEN_HOLDS = "open"
HELD_MONEY = "money"

#: The money flows, each the ledger lines of these memos coming in (their credit legs).
FLOW_MEMOS = {
    "charged": ("charge",),
    "refunded": ("refund", "void", "report refund"),
    "paid_out": ("payout", "release"),
    "fees": ("fee",),
}
_FLOW_OF = {memo: flow for flow, memos in FLOW_MEMOS.items() for memo in memos}

Key = tuple[str, str, str, str]  # family, subject, day, name


def note(tx: Transaction, family: str, subject: str, day: str, name: str, delta: int) -> None:
    """Add ``delta`` to a count, to be written when the transaction commits (:func:`flush`)."""
    key = (family, subject, day, counted_name(name))
    counts = tx.day_counts
    counts[key] = counts.get(key, 0) + delta


def note_call(
    tx: Transaction, provider: str, started_at: datetime, verdict: str | None, delta: int
) -> None:
    """Count a call under ``verdict`` (``delta`` 1) or take it out (-1): for everyone and for
    its provider, on the day it started."""
    day, name = held_days.day_of(started_at), verdict or NO_VERDICT
    note(tx, CALLS, EVERYONE, day, name, delta)
    note(tx, CALLS, provider, day, name, delta)


def note_flows(tx: Transaction, moves: Iterable[tuple[str, int]], day: str) -> None:
    """Count the money of each (memo, amount) transfer of ``day`` whose memo is a flow's."""
    for memo, amount in moves:
        flow = _FLOW_OF.get(memo)
        if flow is not None and amount > 0:
            note(tx, FLOWS, EVERYONE, day, flow, amount)


def note_lines(tx: Transaction, legs: Iterable[tuple[str | None, str, int]], day: str) -> None:
    """Count ledger lines, each an (account, memo, signed amount) leg, for the ledger's totals
    (:func:`adjudge.store.ledger.movement_totals`), on their day and for all time. For
    everyone: each memo's lines and money in; its money out is the negative of that, as every
    transfer's two legs net to zero. For an account (None for one whose lines are few and are
    summed from themselves): its lines and its money in or out by memo."""
    days = (day, ALL_TIME)
    counts = tx.day_counts
    for account, memo, amount in legs:
        for when in days:
            lines = (LEDGER, EVERYONE, when, f"lines {memo}")
            counts[lines] = counts.get(lines, 0) + 1
            if amount > 0:
                money = (LEDGER, EVERYONE, when, f"in {memo}")
                counts[money] = counts.get(money, 0) + amount
            if account is not None:
                lines = (LEDGER, account, when, f"lines {memo}")
                counts[lines] = counts.get(lines, 0) + 1
                money = (LEDGER, account, when, f"{'in' if amount > 0 else 'out'} {memo}")
                counts[money] = counts.get(money, 0) + amount


def note_deliveries(tx: Transaction, before: str | None, after: str, n: int = 1) -> None:
    """Move ``n`` webhook deliveries from status ``before`` (None: new ones) to ``after``."""
    if n <= 0 or before == after:
        return
    if before is not None:
        note(tx, DELIVERIES, EVERYONE, ALL_TIME, before, -n)
    note(tx, DELIVERIES, EVERYONE, ALL_TIME, after, n)


def note_verdict(
    tx: Transaction, poster: str, at: datetime, passed: bool | None, detail: Mapping[str, Any]
) -> None:
    """Count a task verdict that decided (``passed`` not None), and a failed one's rules."""
    if passed is None:
        return
    day = held_days.day_of(at)
    outcome = "passed" if passed else "failed"
    note(tx, VERDICTS, EVERYONE, day, outcome, 1)
    note(tx, VERDICTS, poster, day, outcome, 1)
    if not passed:
        for rule in failed_rules(detail):
            note(tx, RULES, poster, day, rule, 1)


def note_record(tx: Transaction, provider: str, at: datetime, record: Mapping[str, Any]) -> None:
    """Count the checks a verified call's record failed."""
    day = held_days.day_of(at)
    for name in failed_checks(record):
        note(tx, CHECKS, provider, day, name, 1)


def note_observed(tx: Transaction, provider: str, at: datetime, kind: str, delta: int) -> None:
    """Count an observed call of ``provider`` as ``kind`` of its quality window
    (:func:`adjudge.calls.quality.counted_as`), or take it out (-1)."""
    note(tx, QUALITY, provider, held_days.day_of(at), kind, delta)


def note_hold(tx: Transaction, matures_at: datetime, amount: int, delta: int) -> None:
    """Count a provider hold opened (``delta`` 1) or ended (-1): how many are open and the
    money in them for all time, and how many are open by the UTC hour they mature in
    (:func:`hour_of`), which the metrics' "maturing within 24 hours" reads."""
    note(tx, HOLDS, EVERYONE, hour_of(matures_at), OPEN_HOLDS, delta)
    note(tx, HOLDS, EVERYONE, ALL_TIME, OPEN_HOLDS, delta)
    note(tx, HOLDS, EVERYONE, ALL_TIME, HELD_MONEY, delta * amount)


def hour_of(at: datetime) -> str:
    """The UTC hour ``at`` falls in, as a holds count's "day": ``YYYYMMDDHH``, which sorts as
    the hours do and fits the column a day's ``YYYY-MM-DD`` does."""
    return at.astimezone(UTC).strftime("%Y%m%d%H")


def note_state(tx: Transaction, poster: str, before: str | None, after: str) -> None:
    """Move one of ``poster``'s tasks from state ``before`` (None: a new task) to ``after``."""
    if before == after:
        return
    if before is not None:
        note(tx, STATES, poster, ALL_TIME, before, -1)
    note(tx, STATES, poster, ALL_TIME, after, 1)


def counted_name(name: str) -> str:
    """A name as it is counted: cut to :data:`NAME_LENGTH`, a NUL (which PostgreSQL's text
    cannot hold) replaced."""
    return name[:NAME_LENGTH].replace("\x00", "\ufffd")


def failed_rules(detail: Mapping[str, Any]) -> list[str]:
    """The rules a failed auto-check verdict failed: its breakdown's items that scored below
    full marks, or, when a gate failed before any item was scored, each reason's head ("Output
    too short"). A person's or a verifier's verdict has no breakdown: its reasons are its own
    words, so they are not counted as rules. What is not in that shape counts nothing: this
    runs as the verdict is written, where nothing may fail for the dashboards' sake."""
    breakdown = detail.get("breakdown")
    if not isinstance(breakdown, list):
        return []
    items = [str(i.get("name")) for i in breakdown if isinstance(i, Mapping) and _below_full(i)]
    if items:
        return items
    reasons = detail.get("reasons")
    if not isinstance(reasons, list):
        return []
    return [str(r).split(":")[0].strip() for r in reasons if str(r).strip()]


def _below_full(item: Mapping[str, Any]) -> bool:
    score = item.get("score", 1)
    return isinstance(score, int | float) and not isinstance(score, bool) and score < 1


def failed_checks(record: Mapping[str, Any]) -> list[str]:
    """The names of the checks a verified call's record failed (rows not in shape: none)."""
    rows = record.get("checks")
    if not isinstance(rows, list):
        return []
    return [
        str(row.get("name"))
        for row in rows
        if isinstance(row, Mapping) and row.get("outcome") == "fail"
    ]


def flush(tx: Transaction) -> None:
    """Write the noted counts on this transaction's lane of the receipt log (taken, and locked,
    if it has none yet), in one statement. A no-op when nothing was counted."""
    due = sorted((k, v) for k, v in tx.day_counts.items() if v)
    tx.day_counts = {}
    if not due:
        return
    lane = receipt_log.lane(tx)
    if tx.sqlite:
        rows = [(f, sub, d, n, lane, *_parts(v)) for (f, sub, d, n), v in due]
        tx.run_tuples(_ADD, _COLUMNS, rows)
        return
    # PostgreSQL: every row in one statement (each column an array), where psycopg's
    # executemany costs about as much client CPU per row as a statement of its own; held for
    # the commit's round trip (nothing reads its result).
    tx.later(
        _ADD_ALL,
        {
            "families": [k[0] for k, _ in due],
            "subjects": [k[1] for k, _ in due],
            "days": [k[2] for k, _ in due],
            "names": [k[3] for k, _ in due],
            "lanes": [lane] * len(due),
            "ns": [_parts(v)[0] for _, v in due],
            "highs": [_parts(v)[1] for _, v in due],
        },
    )


#: A count's low part holds this many bits (:func:`_parts`).
_SHIFT = 32
_LOW = (1 << _SHIFT) - 1


def _parts(value: int) -> tuple[int, int]:
    """``value`` as its low part (``0 <= n < 2^32``) and its high part (the floor of the
    rest), as a row keeps it."""
    return value & _LOW, value >> _SHIFT


def joined(low: Any, high: Any) -> int:
    """A count from the sums of its rows' two parts (None: no rows)."""
    return (int(high or 0) << _SHIFT) + int(low or 0)


def window(
    tx: Transaction, family: str, subject: str, days: Sequence[str]
) -> dict[str, Counter[str]]:
    """A family's counts of ``subject`` on each of ``days`` (consecutive, oldest first), by
    name: its lanes summed."""
    c = s.day_counts.c
    q = (
        select(c.day, c.name, func.sum(c.n), func.sum(c.high))
        .where(c.family == family, c.subject == subject, c.day >= days[0], c.day <= days[-1])
        .group_by(c.day, c.name)
    )
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for day, name, low, high in tx.conn.execute(q):
        if n := joined(low, high):
            out[str(day)][str(name)] += n
    return out


def since(tx: Transaction, family: str, subject: str, first_day: str) -> Counter[str]:
    """A family's counts of ``subject`` summed over every day from ``first_day`` on, by name,
    this transaction's own not yet written among them."""
    rows = tx.rows(*since_read(family, subject, first_day))
    total: Counter[str] = Counter({str(r["name"]): joined(r["n"], r["high"]) for r in rows})
    for (f, sub, day, name), n in tx.day_counts.items():
        if f == family and sub == subject and day >= first_day:
            total[name] += n
    return total


def since_read(family: str, subject: str, first_day: str) -> Read:
    """What :func:`since` reads (to read it ahead with others: ``Transaction.ahead``)."""
    return _SINCE, {"k_family": family, "k_subject": subject, "k_day": first_day}


_SINCE = (
    select(
        s.day_counts.c.name,
        func.sum(s.day_counts.c.n).label("n"),
        func.sum(s.day_counts.c.high).label("high"),
    )
    .where(
        s.day_counts.c.family == bindparam("k_family"),
        s.day_counts.c.subject == bindparam("k_subject"),
        s.day_counts.c.day >= bindparam("k_day"),
    )
    .group_by(s.day_counts.c.name)
)


def summed(
    tx: Transaction,
    family: str,
    subjects: Sequence[str],
    first_day: str | None,
    end_day: str | None,
) -> Counter[str]:
    """A family's counts of ``subjects`` summed by name over the days from ``first_day`` up to
    ``end_day`` (not included; None: no bound), or with both None its counts for all time
    (:data:`ALL_TIME`): index reads, days × names × lanes a subject."""
    c = s.day_counts.c
    q = select(c.name, func.sum(c.n), func.sum(c.high)).where(
        c.family == family, c.subject.in_(subjects)
    )
    if first_day is None and end_day is None:
        q = q.where(c.day == ALL_TIME)
    else:
        q = q.where(c.day > ALL_TIME)  # days, not the counts for all time
    if first_day is not None:
        q = q.where(c.day >= first_day)
    if end_day is not None:
        q = q.where(c.day < end_day)
    found = tx.conn.execute(q.group_by(c.name))
    return Counter({str(name): n for name, low, high in found if (n := joined(low, high))})


def stored(tx: Transaction) -> dict[Key, int]:
    """Every count as stored, its lanes summed (zeros left out): to compare with a recount."""
    c = s.day_counts.c
    q = select(c.family, c.subject, c.day, c.name, func.sum(c.n), func.sum(c.high)).group_by(
        c.family, c.subject, c.day, c.name
    )
    found = tx.conn.execute(q)
    return {(f, sub, d, n): v for f, sub, d, n, low, high in found if (v := joined(low, high))}


_KEY = ["family", "subject", "day", "name", "lane"]
_COLUMNS = (*_KEY, "n", "high")
_NEW = sqlite.insert(s.day_counts).values(
    family=bindparam("family"),
    subject=bindparam("subject"),
    day=bindparam("day"),
    name=bindparam("name"),
    lane=bindparam("lane"),
    n=bindparam("n"),
    high=bindparam("high"),
)
#: The two parts of a row plus an addition's: the low parts' sum (under 2^33, both being
#: under 2^32) kept below 2^32, what it passes carried into the high part; integer division
#: and remainder of non-negative integers mean the same on both databases.
_CARRY = {
    "n": text("(day_counts.n + excluded.n) % 4294967296"),
    "high": text("day_counts.high + excluded.high + (day_counts.n + excluded.n) / 4294967296"),
}
#: Add to a row's count, or make the row (its key is the table's primary key).
_ADD = _NEW.on_conflict_do_update(index_elements=_KEY, set_=_CARRY)
#: The same for many rows in one statement on PostgreSQL: each column's values as an array.
_ADD_ALL = text(
    "INSERT INTO day_counts (family, subject, day, name, lane, n, high) SELECT * FROM unnest("
    "CAST(:families AS varchar[]), CAST(:subjects AS varchar[]), CAST(:days AS varchar[]), "
    "CAST(:names AS varchar[]), CAST(:lanes AS integer[]), CAST(:ns AS bigint[]), "
    "CAST(:highs AS bigint[])) "
    "ON CONFLICT (family, subject, day, name, lane) DO UPDATE SET "
    "n = (day_counts.n + excluded.n) % 4294967296, "
    "high = day_counts.high + excluded.high + (day_counts.n + excluded.n) / 4294967296"
)
