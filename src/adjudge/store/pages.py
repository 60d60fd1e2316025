"""Keyset pages: every listing's order, position and cursor, said once.

A listing is read newest first (or oldest), ties by a key, a page at a time from a cursor that
names the last row shown: so a page deep in a listing costs what the first does, on an index in
the listing's order, and a cursor means the same in every listing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, Select, and_, or_, select, union_all

from adjudge.errors import BadInput
from adjudge.store.transaction import Transaction

__all__ = [
    "SIFTED_ROWS",
    "Page",
    "decode_cursor",
    "encode_cursor",
    "newest_first",
    "newest_of_each",
    "newest_page",
    "past",
    "sifted_newest_first",
]


@dataclass(frozen=True)
class Page:
    """One page of a listing and the cursor of the next (None on the last page)."""

    items: list[Any]
    next_cursor: str | None


def newest_page(
    q: Select[Any],
    at: ColumnElement[datetime],
    key: ColumnElement[str],
    cursor: str | None,
    limit: int,
) -> Select[Any]:
    """``q``'s newest ``limit + 1`` rows after ``cursor`` (newest ``at`` first, ties by
    ``key``): a listing's page and the row that says another follows, or one role's page for
    :func:`newest_of_each`."""
    if cursor is not None:
        q = q.where(_after(at, key, cursor))
    return q.order_by(at.desc(), key).limit(limit + 1)


def newest_of_each(pages: Sequence[Select[Any]]) -> Select[Any]:
    """The ids of a page's candidates among a party's rows: the union of the newest page of
    each of its roles (:func:`newest_page`, each read in the listing's order on its own
    index), so the listing's page is among them. With the roles in one ``OR``, the database
    read every row of the party and sorted them for each page. A row of two roles comes twice
    (``UNION ALL``: the listing takes the ids with ``IN``, which keeps it once)."""
    merged = union_all(*[select(page.subquery().c.id) for page in pages]).subquery()
    return select(merged.c.id)


def _after(
    at: ColumnElement[datetime], key: ColumnElement[str], cursor: str
) -> ColumnElement[bool]:
    """The rows after ``cursor`` in the order newest ``at`` first, ties by ``key``."""
    when, last = decode_cursor(cursor)
    return past(at, key, when, last)


def past(
    at: ColumnElement[Any],
    key: ColumnElement[Any],
    when: Any,
    last: Any,
    *,
    newest_first: bool = True,
    key_descending: bool = False,
) -> ColumnElement[bool]:
    """The rows past the position (``when``, ``last``) of a keyset listing ordered by ``at``
    (newest first, or oldest) and then ``key`` (ascending, or descending). The first term says
    again, alone, the bound the others imply, for the planner: a range of ``at`` starts the
    index's walk at the position, where the ``OR`` alone made it walk (and skip) every row
    before it, so a page deep in a listing cost as many rows as came before it."""
    bound, beyond = (at <= when, at < when) if newest_first else (at >= when, at > when)
    tie = key < last if key_descending else key > last
    return and_(bound, or_(beyond, and_(at == when, tie)))


def newest_first(
    tx: Transaction,
    q: Select[Any],
    at: ColumnElement[datetime],
    key: ColumnElement[str],
    cursor: str | None,
    limit: int,
) -> tuple[list[Row[Any]], str | None]:
    """One keyset page of ``q``: newest ``at`` first (ties by ``key``), after ``cursor``; its
    rows and the next page's cursor (None on the last page). Every listing pages this way, so
    a page is as cheap as the first and a cursor means the same everywhere."""
    rows = list(tx.conn.execute(newest_page(q, at, key, cursor, limit)))
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    tail = rows[-1]._mapping
    return rows, encode_cursor(tail[at], tail[key])


#: The most rows a page walks of each index range it reads when a filter is not the range's own
#: (a verdict among a party's calls, a mode among a poster's tasks, words in a title): the page
#: may then hold fewer than its ``limit`` and still give a cursor, read on from where the walks
#: stopped. Without the bound, a page of a filter rare in its range walked every row the range
#: ever had.
SIFTED_ROWS = 2_000


def sifted_newest_first(
    tx: Transaction,
    q: Select[Any],
    at: ColumnElement[datetime],
    key: ColumnElement[str],
    ranges: Sequence[Select[Any]],
    cursor: str | None,
    limit: int,
) -> tuple[list[Row[Any]], str | None]:
    """One page of ``q`` (its rows sifted by filters no index leads with) among the first
    :data:`SIFTED_ROWS` rows after ``cursor`` of each of ``ranges`` (each a :func:`newest_page`
    of ids and times from ``cursor`` on its own index range, its limit replaced by the walk's).

    The page holds the rows no later than the newest of the walks' ends, which every walk has
    reached, so no row is skipped; when it found fewer than ``limit`` there, its cursor is
    where that walk ended."""
    walks = [walk.limit(SIFTED_ROWS) for walk in ranges]
    ends: list[tuple[datetime, str]] = []
    for walk in walks:
        end = tx.conn.execute(walk.offset(SIFTED_ROWS - 1)).first()  # its last, if that many
        if end is not None:
            ends.append((end[1], str(end[0])))
    q = q.where(key.in_(newest_of_each(walks)))
    stop = None
    if ends:  # the first end in the listing's order: every walk has reached it
        ends.sort(key=lambda e: e[1])
        ends.sort(key=lambda e: e[0], reverse=True)
        when, last = stop = ends[0]
        q = q.where(at >= when, or_(at > when, key <= last))
    rows, following = newest_first(tx, q, at, key, cursor, limit)
    if following is None and stop is not None:
        following = encode_cursor(*stop)
    return rows, following


def encode_cursor(at: datetime, key: str) -> str:
    """An opaque listing position: after (``at``, ``key``) in newest-first order."""
    raw = json.dumps([at.isoformat(), key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


#: The longest cursor any listing gives (a time and a key of at most :data:`MAX_CURSOR_KEY`).
MAX_CURSOR = 400
#: The longest key a cursor names (every listing's key is an id or a name of at most this).
MAX_CURSOR_KEY = 200


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The position a cursor names; ``CURSOR_INVALID`` for anything this store did not make.

    Checked whole here, for every door (the REST query bounds its length, MCP's JSON does
    not): a key the database could not be sent (half a surrogate pair, a NUL) and a time whose
    UTC form is past the calendar's ends were 500s where the query bound them."""
    try:
        if len(cursor) > MAX_CURSOR:
            raise ValueError
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, key = json.loads(raw)
        when = datetime.fromisoformat(at)
        if not isinstance(key, str) or when.tzinfo is None or len(key) > MAX_CURSOR_KEY:
            raise ValueError
        key.encode("utf-8")  # UnicodeEncodeError (a ValueError) on half a surrogate pair
        if "\x00" in key:
            raise ValueError
        when.astimezone(UTC)  # OverflowError past year 1 or 9999
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise BadInput(
            "That cursor is not one a listing gave; start from the first page.",
            code="CURSOR_INVALID",
        ) from exc
    return when, key
