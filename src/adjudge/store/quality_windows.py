"""Each provider's quality window, kept as running counts so reading it never scans history.

A provider's window is its observed calls (``source = 'gateway'``, its own calls of its tools
left out: :func:`adjudge.calls.quality.enters_window`) with ``at`` in ``(edge, …]``, where
``edge`` is the window's start: ``now - span``. One row per provider holds the window's span,
its edge as last moved, and the five counts (:data:`adjudge.calls.quality.WINDOW_COUNTS`). A
call's transaction moves the row forward:

1. lock the row (``FOR UPDATE``; SQLite's one writer is the lock there);
2. subtract the calls that left the window, ``edge < at <= now - span``: each call is read once
   in its life, when it expires, by the ``(provider, at)`` index;
3. add the new call, and store the new edge.

So a call costs one row read, one row written and the calls that expired since the last one:
flat however long the history. What a call counts as changes once at most, when a judgment
after its answer supersedes its verdict (:func:`superseded` moves it in the same transaction; a
report is a human finding counted apart; a withdrawn or shadow policy's calls were recorded as
not enforced), so the counts stay equal to a full recount; ``tests/store/test_quality_windows.py``
proves it.

When there is no row yet, or the span changed (the provider declared other terms), or the clock
went back past the edge, the row is rebuilt; a read of a window no row fits (a provider with no
terms, other days asked for) is counted the same way: the whole days after the edge's from the
observed calls' daily counts (:mod:`adjudge.store.day_counts`), the edge's own day from its
calls — the window's days and one day's calls, never every call in it. So is a read of a row
whose edge is before the new edge's UTC day: a read does not move the row, and a provider not
called since would otherwise have each read subtract every call that left its window since its
last call (from the edge's day on, what left is that day's calls at most). A provider's first row
is made unless one is there (``ON CONFLICT DO NOTHING``): where two transactions make it at once
(two committing threads, or two processes, on PostgreSQL), the second waits for the first to
commit and moves the row it made.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Integer,
    String,
    Table,
    and_,
    bindparam,
    func,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from adjudge.calls.quality import WINDOW_COUNTS, QualityWindow, counted_as, enters_window
from adjudge.store import day_counts
from adjudge.store import schema as s
from adjudge.store.calls import call_records
from adjudge.store.transaction import Read, Transaction

quality_windows = Table(
    "quality_windows",
    s.metadata,
    Column("provider", String(200), primary_key=True),
    Column("span_seconds", BigInteger, nullable=False),
    Column("edge", s.UTCDateTime, nullable=False),  # the window's start: (edge, …] counts
    *(Column(name, Integer, nullable=False) for name in WINDOW_COUNTS),
)


def observe(
    tx: Transaction, provider: str, span: timedelta, now: datetime, counted: str
) -> QualityWindow:
    """Move ``provider``'s window to ``now`` after this transaction recorded its call at ``now``,
    which adds to ``counted`` (:func:`~adjudge.calls.quality.counted_as`), and return the
    window."""
    edge = now - span
    rows = tx.rows(_LOCK, {"k_provider": provider})  # (1)
    state = rows[0] if rows else None
    if state is None:
        counts = _counted_after(tx, provider, edge)  # the call itself is among them
        values = {"span_seconds": _seconds(span), "edge": edge, **counts}
        made = tx.run(_MAKE[tx.dialect], {"provider": provider, **values})
        if made.rowcount == 1:
            return QualityWindow(provider, edge, now, **counts)
        # Another transaction made the row while this one counted (a provider's first calls
        # on two committing threads, or two processes): the insert waited for it to commit,
        # and its counts hold every call but this one, whose transaction has not committed.
        state = tx.rows(_LOCK, {"k_provider": provider})[0]
    if _rebuild(state, span, edge):
        counts = _counted_after(tx, provider, edge)  # the call itself is among them
        values = {"span_seconds": _seconds(span), "edge": edge, **counts}
        tx.conn.execute(
            update(quality_windows).where(quality_windows.c.provider == provider).values(**values)
        )
        return QualityWindow(provider, edge, now, **counts)
    counts = {name: int(state[name]) for name in WINDOW_COUNTS}
    for name, gone in _recount(tx, provider, state["edge"], edge).items():  # (2)
        counts[name] -= gone
    counts[counted] += 1  # (3) the call itself: at ``now``, after every edge, counted once
    tx.run(_MOVE, {"k_provider": provider, "k_edge": edge, **_params(counts)})
    return QualityWindow(provider, edge, now, **counts)


def window(tx: Transaction, provider: str, span: timedelta, now: datetime) -> QualityWindow:
    """``provider``'s window of ``span`` ending at ``now``, without writing: the running counts
    less what expired since the last call when their edge is in the new edge's UTC day, else
    one recount of the window's days and its edge's day (none fit this span, or they were last
    moved before that day)."""
    rows = tx.rows(_READ, {"k_provider": provider})
    return _window(tx, provider, rows[0] if rows else None, span, now)


def windows(
    tx: Transaction, spans: Mapping[str, timedelta], now: datetime
) -> dict[str, QualityWindow]:
    """Each provider's window of its span in ``spans``, as :func:`window` reads it, in a number
    of round trips that does not grow with the providers (the operator's list of every termed
    provider): their rows in one read a chunk, then the reads each window needs, sent together
    a chunk at a time (on PostgreSQL; SQLite's reads are calls, not round trips)."""
    providers = list(spans)
    states: dict[str, Any] = {}
    for chunk in _chunks(providers, _ROWS_AT_ONCE):
        for row in tx.conn.execute(_READ_MANY, {"k_providers": chunk}).mappings():
            states[str(row["provider"])] = row
    found = {}
    for chunk in _chunks(providers, _WINDOWS_AT_ONCE):
        reads = [r for p in chunk for r in _reads(states.get(p), p, spans[p], now)]
        with tx.ahead(reads):
            for p in chunk:
                found[p] = _window(tx, p, states.get(p), spans[p], now)
    return found


def _window(
    tx: Transaction, provider: str, state: Any, span: timedelta, now: datetime
) -> QualityWindow:
    edge = now - span
    if _counted_afresh(state, span, edge):
        return QualityWindow(provider, edge, now, **_counted_after(tx, provider, edge))
    counts = {name: int(state[name]) for name in WINDOW_COUNTS}
    for name, gone in _recount(tx, provider, state["edge"], edge).items():
        counts[name] -= gone
    return QualityWindow(provider, edge, now, **counts)


def _reads(state: Any, provider: str, span: timedelta, now: datetime) -> list[Read]:
    """What :func:`_window` will read for ``provider``, to be read ahead."""
    edge = now - span
    if _counted_afresh(state, span, edge):
        midnight = _after_edge_day(edge)
        later = day_counts.since_read(day_counts.QUALITY, provider, midnight.date().isoformat())
        return [_recount_read(provider, edge, before=midnight), later]
    return [_recount_read(provider, state["edge"], edge)]


def _counted_afresh(state: Any, span: timedelta, edge: datetime) -> bool:
    """Whether a read counts the window from the daily counts and its edge's day
    (:func:`_counted_after`) rather than as the running counts less what left since they were
    moved: when none fit, or they were moved before the edge's UTC day began. Either way a read
    counts one day's calls at most; subtracting from an older edge counted every call that left
    since (a read does not move the row, so an idle provider's every read counted them all)."""
    if state is None or _rebuild(state, span, edge):
        return True
    return bool(state["edge"] < _after_edge_day(edge) - _DAY)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def superseded(tx: Transaction, call_id: str, verdict: str) -> str | None:
    """Count a call as ``verdict`` from now on: the verdict of a judgment that superseded its
    record's (a meaning check judged after the answer). Its provider's running counts move it
    from what it counted as to what it counts as now, when it is still in the window they hold
    (one that expired was subtracted as it was then, and is gone from every window since).
    Returns the provider whose counts moved, None when nothing did."""
    rows = tx.rows(_CALL_KIND, {"k_id": call_id})
    if not rows:
        return None
    call = rows[0]
    tx.run(_SET_FINAL, {"k_id": call_id, "v_final": verdict})
    enforced, error_kind = bool(call["enforced"]), call["error_kind"]
    before = counted_as(call["verdict"], enforced, error_kind)
    after = counted_as(verdict, enforced, error_kind)
    provider = call["provider"]
    if before == after or not enters_window(call["source"], call["submitted_by"], provider):
        return None
    day_counts.note_observed(tx, provider, call["at"], before, -1)
    day_counts.note_observed(tx, provider, call["at"], after, 1)
    state = tx.rows(_LOCK, {"k_provider": provider})
    if not state or call["at"] <= state[0]["edge"]:
        return None
    counts = {name: int(state[0][name]) for name in WINDOW_COUNTS}
    counts[before] -= 1
    counts[after] += 1
    tx.run(_MOVE, {"k_provider": provider, "k_edge": state[0]["edge"], **_params(counts)})
    return str(provider)


def _rebuild(state: Any, span: timedelta, edge: datetime) -> bool:
    return int(state["span_seconds"]) != _seconds(span) or edge < state["edge"]


def _seconds(span: timedelta) -> int:
    return int(span.total_seconds())


def _counted_after(tx: Transaction, provider: str, edge: datetime) -> dict[str, int]:
    """The observed calls with ``edge < at``, by kind: those of the edge's own UTC day from
    their rows, every later day's from the daily counts the calls' transactions keep
    (:mod:`adjudge.store.day_counts`, this transaction's own among them) — so a window no
    running counts fit (a first call, other terms, a window of other days asked for) costs its
    days and one day's calls, not every call in it."""
    midnight = _after_edge_day(edge)
    counts = _recount(tx, provider, edge, before=midnight)
    later = day_counts.since(tx, day_counts.QUALITY, provider, midnight.date().isoformat())
    for name, n in later.items():
        counts[name] += n
    return counts


_DAY = timedelta(days=1)


def _after_edge_day(edge: datetime) -> datetime:
    """The first moment of the UTC day after ``edge``'s."""
    moment = edge if edge.tzinfo is not None else edge.replace(tzinfo=UTC)
    next_day = moment.astimezone(UTC).date() + timedelta(days=1)
    return datetime(next_day.year, next_day.month, next_day.day, tzinfo=UTC)


def _recount(
    tx: Transaction,
    provider: str,
    after: datetime,
    until: datetime | None = None,
    *,
    before: datetime | None = None,
) -> dict[str, int]:
    """The observed calls with ``after < at`` (``<= until``, ``< before`` when given), counted
    by kind in SQL: a handful of grouped rows come back, never the calls themselves. Statements
    built once and run on the hot path's runner: built per call, SQLAlchemy's own work was a
    sixth of a paid call's CPU with terms declared."""
    rows = tx.rows(*_recount_read(provider, after, until, before=before))
    counts = dict.fromkeys(WINDOW_COUNTS, 0)
    for r in rows:
        counts[counted_as(r["verdict"], bool(r["enforced"]), r["error_kind"])] += int(r["n"])
    return counts


def _recount_read(
    provider: str,
    after: datetime,
    until: datetime | None = None,
    *,
    before: datetime | None = None,
) -> Read:
    """What :func:`_recount` reads."""
    if until is not None:
        return _RECOUNT_BETWEEN, {"k_provider": provider, "k_after": after, "k_until": until}
    assert before is not None
    return _RECOUNT_BEFORE, {"k_provider": provider, "k_after": after, "k_before": before}


def _params(counts: dict[str, int]) -> dict[str, int]:
    return {f"v_{name}": counts[name] for name in WINDOW_COUNTS}


#: What a call counts as: the verdict of a judgment that superseded its record's, else its own.
_VERDICT = func.coalesce(call_records.c.final_verdict, call_records.c.verdict)
_KINDS = (_VERDICT.label("verdict"), call_records.c.enforced, call_records.c.error_kind)
_OBSERVED_AFTER = and_(
    call_records.c.provider == bindparam("k_provider"),
    call_records.c.source == "gateway",
    call_records.c.submitted_by != call_records.c.provider,  # enters_window
    call_records.c.at > bindparam("k_after"),
)
_RECOUNT_BEFORE = (
    select(*_KINDS, func.count().label("n"))
    .where(_OBSERVED_AFTER, call_records.c.at < bindparam("k_before"))
    .group_by(*_KINDS)
)
_RECOUNT_BETWEEN = (
    select(*_KINDS, func.count().label("n"))
    .where(_OBSERVED_AFTER, call_records.c.at <= bindparam("k_until"))
    .group_by(*_KINDS)
)
#: A provider's first row, unless another transaction made it first (then nothing is written:
#: its row count, which SQLAlchemy's own ``execute`` does not keep for an insert, says which).
_MAKE = {
    "sqlite": sqlite.insert(quality_windows).on_conflict_do_nothing(),
    "postgresql": postgresql.insert(quality_windows).on_conflict_do_nothing(),
}
_READ = select(quality_windows).where(quality_windows.c.provider == bindparam("k_provider"))
_READ_MANY = select(quality_windows).where(
    quality_windows.c.provider.in_(bindparam("k_providers", expanding=True))
)
#: The most providers :func:`windows` names in one statement (SQLite's older builds bound
#: 999 parameters), and whose reads it sends together in one block.
_ROWS_AT_ONCE = 500
_WINDOWS_AT_ONCE = 100
_LOCK = _READ.with_for_update()
_MOVE = (
    update(quality_windows)
    .where(quality_windows.c.provider == bindparam("k_provider"))
    .values(
        edge=bindparam("k_edge"),
        **{name: bindparam(f"v_{name}") for name in WINDOW_COUNTS},
    )
)
_CALL_KIND = select(
    call_records.c.provider,
    call_records.c.source,
    call_records.c.submitted_by,
    call_records.c.at,
    *_KINDS,
).where(call_records.c.id == bindparam("k_id"))
_SET_FINAL = (
    update(call_records)
    .where(call_records.c.id == bindparam("k_id"))
    .values(final_verdict=bindparam("v_final"))
)
