"""One database transaction, and the runner the hot statements use on the driver's cursor.

What the store holds is read and written by the modules named for it (``records``, ``ledger``,
``receipt_log``, ``leases``, ``idempotency``, ``quotas``, ``calls``), each a set of functions
over a :class:`Transaction`. This module knows no table: it runs statements.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Connection, Insert, Select, bindparam
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement

from adjudge import json_text
from adjudge.errors import InternalError, StorageError
from adjudge.store import schema as s


class ConcurrentUpdate(StorageError):
    """Another transaction changed the same rows first; re-read and try again."""

    code = "CONCURRENT_UPDATE"


#: A select of the hot path and its parameters (:meth:`Transaction.ahead`).
Read = tuple[ClauseElement, Mapping[str, Any]]


def written_in_a_read() -> InternalError:
    """The refusal of a write in a read (:meth:`Store.read`): a use case's own mistake."""
    return InternalError("A read tried to write; nothing was written.", code="INTERNAL_ERROR")


def one_row(refusal: Callable[[], Exception]) -> Callable[[int], None]:
    """The check of a held write (:meth:`Transaction.later`) that must change exactly one row:
    anything else raises ``refusal()`` (a lost race, too little money)."""

    def check(rowcount: int) -> None:
        if rowcount != 1:
            raise refusal()

    return check


def _read_key(stmt: ClauseElement, params: Mapping[str, Any]) -> tuple[Any, ...]:
    """A read ahead's key: the statement (built once at module level) and its parameters."""
    return (id(stmt), tuple(sorted(params.items())))


@dataclass(frozen=True)
class _Held:
    """A write held back until the transaction's next round trip (:meth:`Transaction.later`):
    its SQL and driver arguments (None: SQL of its own, a savepoint's), whether it runs once
    per row, what checks its row count, and the savepoint it sets, if it is one."""

    sql: str
    args: Any
    many: bool = False
    check: Callable[[int], None] | None = None
    mark: str | None = None


class _Result:
    """A statement's outcome in a block sent together (:meth:`Transaction.together` on
    PostgreSQL): its rows and row count, there once the block has been sent, read as a
    driver cursor's are."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount
        self._rows: list[Any] = []

    def fetchall(self) -> list[Any]:
        return self._rows


#: What joins the statements of a block (no statement the store compiles holds it).
_JOIN = b";\n"
#: The most statements a connection keeps prepared before it drops them all and starts again
#: (a service's hot statements are about a hundred).
_MOST_PREPARED = 400
#: Where a connection's pool entry keeps its :class:`_Session`.
_SESSION = "adjudge.prepared"


class _Session:
    """What a PostgreSQL connection has prepared of the hot statements, by name, whether that
    is in doubt (a block that prepared some failed: the next drops them all first), and the
    driver's adapter that writes its blocks' values as SQL literals."""

    __slots__ = ("literal", "names", "unsure")

    def __init__(self, literal: Callable[[Any], bytes]) -> None:
        self.literal = literal
        self.names: set[str] = set()
        self.unsure = False

    def execute(self, form: _Form, args: Mapping[str, Any]) -> bytes:
        """``EXECUTE`` of ``form`` with ``args`` written as literals, as psycopg's client-side
        binding writes them (``ClientCursor.mogrify``: its adapter's ``as_literal`` for each
        value, ``NULL`` for None) without its parsing of a query it already knows."""
        if not form.names:
            return form.execute
        literal = self.literal
        values = b", ".join([b"NULL" if args[n] is None else literal(args[n]) for n in form.names])
        return b"%s(%s)" % (form.execute, values)


@dataclass(frozen=True)
class _Form:
    """A hot statement as the server keeps it: its name, its ``PREPARE``, and the ``EXECUTE``
    its values follow, in parentheses in the order of ``names`` (where it has any)."""

    name: str
    prepare: bytes
    execute: bytes
    names: tuple[str, ...]


#: Hot statements' prepared forms, by SQL (:func:`_prepared_form`).
_FORMS: dict[str, _Form] = {}
_NAMES = itertools.count()
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


def _prepared_form(sql: str) -> _Form:
    """``sql`` (psycopg's named placeholders) as a prepared statement: each name a parameter
    ``$n`` in the order first used, a doubled ``%`` a single one."""
    found = _FORMS.get(sql)
    if found is None:
        names: list[str] = []

        def numbered(m: re.Match[str]) -> str:
            name = m.group(1)
            if name is None:
                return "%"
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        body = _PLACEHOLDER.sub(numbered, sql)
        name = f"adjudge_{next(_NAMES)}"
        prepare = f"PREPARE {name} AS {body}".encode()
        form = _Form(name, prepare, f"EXECUTE {name}".encode(), tuple(names))
        found = _FORMS.setdefault(sql, form)
    return found


#: A prepared statement the server does not have (``invalid_sql_statement_name``), or one it
#: can no longer run as prepared ("cached plan must not change result type").
_GONE = frozenset({"26000", "0A000"})
#: libpq's status of a result that holds rows (``PGRES_TUPLES_OK``), where psycopg's
#: ``description`` would build a column object for each of its columns to say so.
_TUPLES = 2


@dataclass(frozen=True)
class _Mark:
    """What a transaction kept for its commit when a savepoint was set."""

    receipts_due: list[Any]
    appended: set[str]
    hooks: int
    held_moves: dict[tuple[str, str], int]
    day_counts: dict[tuple[str, str, str, str], int]
    credits_due: dict[str, int]
    uses_due: dict[tuple[str, datetime], int]
    lane_head: dict[str, Any] | None
    refused: Exception | None


class Transaction:
    """Reads and writes inside one database transaction (see :meth:`Store.write`).

    ``cache`` lives as long as the transaction: a module may keep rows there that cannot
    change while it runs (a stored submission never changes); a rollback to a savepoint empties
    it, since a row read there may be one the rollback undid. ``appended`` holds the ids of the
    receipts appended in this transaction: the ledger releases escrow only against one of them.
    """

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.cache: dict[Any, Any] = {}
        self.appended: set[str] = set()
        #: Receipts appended but not yet on the chain, and those flushed onto it, by id
        #: (adjudge.store.receipt_log: a transaction's receipts are chained as it commits).
        self.receipts_due: list[Any] = []
        self.flushed: dict[str, Any] = {}
        #: The receipt log's lane this transaction chains on once it took one, and how many
        #: lanes it may choose from (the store's setting).
        self.lane: int | None = None
        self.lanes = 1
        #: The head of that lane as this transaction moved it, written to its row as it
        #: commits (the row stays locked until then, so it need not be read again); None
        #: until a receipt is chained, and again when a savepoint that took the lane is
        #: rolled back (which releases its lock).
        self.lane_head: dict[str, Any] | None = None
        #: The held money this transaction moved, by (holding prefix, day), written as it
        #: commits (adjudge.store.held_days).
        self.held_moves: dict[tuple[str, str], int] = {}
        #: What this transaction changed of the dashboards' counts, by (family, subject, day,
        #: name), written as it commits (adjudge.store.day_counts).
        self.day_counts: dict[tuple[str, str, str, str], int] = {}
        #: Credits not yet added to their balances, by account: added as the transaction
        #: commits (adjudge.store.ledger), so a balance every transaction credits is locked
        #: for the commit's last step only.
        self.credits_due: dict[str, int] = {}
        #: Uses of bounded actions not yet added to their counters, by (scope, window): added
        #: as the transaction commits, after its credits (adjudge.store.quotas), so a counter
        #: one account's every change adds to is locked for the commit alone, waiting for no
        #: other row.
        self.uses_due: dict[tuple[str, datetime], int] = {}
        #: What to do once this transaction has committed (counting what it did, say); a
        #: unit of work rolled back to its savepoint takes its own out again.
        self.committed: list[Callable[[], None]] = []
        self.sqlite = conn.dialect.name == "sqlite"
        #: Whether this transaction may write (:meth:`Store.write`); a read's statements are
        #: selects (:meth:`_may_run`).
        self.writes: bool = conn.get_execution_options().get("adjudge_write", True)
        #: The DBAPI connection under ``conn`` (checked out for the transaction's life).
        self._driver: Any = conn.connection.driver_connection
        #: The driver's cursor the transaction's statements share (SQLite's one at a time,
        #: each read before the next; PostgreSQL's blocks, each read as it is sent), and
        #: whether a block is running (:meth:`together`: on SQLite each statement has a
        #: cursor of its own there, its rows read after the block).
        self._cursor: Any = None
        self._in_block = False
        #: The statements of the block now running on PostgreSQL, in order: SQL, driver
        #: arguments (None: SQL of its own), whether once per row, and where the outcome goes.
        self._block: list[tuple[str, Any, bool, _Result | None]] = []
        #: Writes held back until the next round trip (:meth:`later`), and the checks of
        #: those sent in the block now running, with their cursors.
        self._held: list[_Held] = []
        self._checks: list[tuple[Any, Callable[[int], None]]] = []
        #: What a held write's check raised, if one did: the writes after it were sent
        #: all the same, so nothing may commit until a savepoint before it is rolled back to.
        self.refused: Exception | None = None
        #: What each savepoint found, restored by :meth:`rollback_to`.
        self._marks: dict[str, _Mark] = {}
        #: Rows read ahead (:meth:`ahead`), by statement and parameters, until :meth:`rows`
        #: takes them.
        self._ahead: dict[tuple[Any, ...], list[dict[str, Any]]] = {}

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return str(self.conn.dialect.name)

    # --- savepoints: several units of work in one transaction (group commit) ---------------

    def savepoint(self, name: str, *, done_with: str | None = None) -> None:
        """Mark a point this transaction can roll back to (:meth:`rollback_to`), done with the
        savepoint ``done_with`` (none will roll back to it now); on PostgreSQL held back for
        the next round trip (:meth:`later`). SQLite releases that one (a savepoint nested in
        another costs its journal there: 0.2 ms a finalize); PostgreSQL lets the new one nest
        in it (a statement fewer a group commit's unit, and the commit keeps both alike)."""
        if done_with is not None:
            if self.sqlite:
                self._hold(_Held(f"RELEASE SAVEPOINT {done_with}", None))
            self._marks.pop(done_with, None)
        self._hold(_Held(f"SAVEPOINT {name}", None, mark=name))
        self._marks[name] = _Mark(
            list(self.receipts_due),
            set(self.appended),
            len(self.committed),
            dict(self.held_moves),
            dict(self.day_counts),
            dict(self.credits_due),
            dict(self.uses_due),
            self.lane_head,
            self.refused,
        )

    def rollback_to(self, name: str) -> None:
        """Undo what was written since the savepoint (the transaction goes on): in the
        database, and in what the transaction keeps for its commit (its receipts due and
        appended, credits, held money moved, counts, hooks, and the lane's head: a lane first taken
        since is unlocked again, and read anew). The rows kept in :attr:`cache` are dropped: one
        read since may be a row the rollback undid (a submission a refused unit added and read,
        whose task a later unit of the batch takes and submits to again), and a read anew costs
        only the rare refused unit's batch.

        The two statements are sent at once, each alone (a refused unit is rare). The
        statements the store prepared on the connection outlive them: prepared statements are
        no part of a transaction (psycopg's own preparing, which dropped them all after a
        rollback, is off: ``database``).
        """
        held = next((i for i, h in enumerate(self._held) if h.mark == name), None)
        if held is not None:  # the savepoint was never sent, nor anything after it
            del self._held[held:]
        else:  # the savepoint was sent, so all that is held came after it: dropped unsent
            self._held.clear()
            self._driver_sql(f"ROLLBACK TO SAVEPOINT {name}")
            self._driver_sql(f"RELEASE SAVEPOINT {name}")
        mark = self._marks.pop(name)
        self.receipts_due[:] = mark.receipts_due
        self.appended &= mark.appended
        del self.committed[mark.hooks :]
        self.held_moves = mark.held_moves
        self.day_counts = mark.day_counts
        self.credits_due = mark.credits_due
        self.uses_due = mark.uses_due
        self.lane_head = mark.lane_head
        self.refused = mark.refused
        self.cache.clear()

    def _driver_sql(self, sql: str) -> None:
        """A statement of its own (a savepoint's, the ``COMMIT``), never prepared (a group
        commit names a savepoint a unit, ``unit_0`` … ``unit_31``: prepared, they would crowd
        out the hot statements): in a block it goes with the block, else at once."""
        if self._in_block and not self.sqlite:
            self._block.append((sql, None, False, None))
            return
        error = self.conn.dialect.loaded_dbapi.Error
        try:
            if self.sqlite:
                self._driver.execute(sql)
            else:
                self._driver.execute(sql, prepare=False)
        except error as exc:
            raise DBAPIError.instance(sql, (), exc, error, dialect=self.conn.dialect) from exc

    # --- the hot path on the driver ---------------------------------------------------------

    def run(self, stmt: ClauseElement, params: Mapping[str, Any]) -> Any:
        """Run a statement of the hot path on the driver's cursor; returns the cursor, whose
        rows and row count are this statement's until the transaction's next statement.

        SQLAlchemy's own work per statement (execution context, parameter and result
        processing: about 25 µs) is several times SQLite's, and a finalize runs 15 of them. These
        statements are compiled by SQLAlchemy once per dialect and parameter set, then run on the
        DBAPI connection of this same transaction, with the few column types they carry (times,
        JSON, booleans) converted as the column types would (:meth:`_bind`, :meth:`rows`).
        Driver errors are raised as SQLAlchemy's, so callers and :class:`Store` see no
        difference. Only for statements built once at module level (the cache is by ``id``).
        """
        return self._execute(*self._bound(stmt, params), many=False)

    def later(
        self,
        stmt: ClauseElement,
        params: Mapping[str, Any],
        *,
        check: Callable[[int], None] | None = None,
    ) -> None:
        """:meth:`run` a write whose result nothing reads now: on PostgreSQL it is held back
        and sent with the transaction's next round trip (the next read, block of statements
        sent together, or the commit), where it would be a round trip of its own; then
        ``check`` is called with its row count, and what it raises (a lost race, too little
        money) is raised there. The statements a transaction sends keep the order it ran them
        in, so a read sees every write before it. Whoever holds back a checked write must
        :meth:`send` before its outcome is final (a unit of work of a group commit before
        the next unit begins; the store before it commits). On SQLite, run and checked now."""
        if self.sqlite:
            cursor = self.run(stmt, params)
            if check is not None:
                self._checked(check, cursor.rowcount)
            return
        self._hold(_Held(*self._bound(stmt, params), check=check))

    def later_many(self, stmt: Insert, rows: Sequence[Mapping[str, Any]]) -> None:
        """:meth:`run_many` of an insert, held back as :meth:`later` holds a statement. On
        PostgreSQL, rows that each name their columns go as one statement (``VALUES (…),
        (…)``, in their order), one for the server to run where a statement a row was as many
        (as psycopg's ``executemany``, a finalize's two ledger lines cost 92 µs of CPU, one
        statement of both about 43)."""
        if self.sqlite:
            self.run_many(stmt, rows)
            return
        keys = tuple(rows[0])
        if len(rows) == 1:
            self.later(stmt, rows[0])
        elif all(k in stmt.table.c for k in keys):
            for start in range(0, len(rows), _ROWS_AT_ONCE):
                chunk = rows[start : start + _ROWS_AT_ONCE]
                flat = {f"{k}_{i}": row[k] for i, row in enumerate(chunk) for k in keys}
                self.later(_rows_at_once(stmt, keys, len(chunk)), flat)
        else:  # values of its own (an upsert's): a statement a row
            self._hold(_Held(*self._bound_rows(stmt, rows), many=True))

    def send(self, *, commit: bool = False) -> None:
        """Send the writes held back (:meth:`later`) in one round trip and run their checks;
        raises if a check raised before and the caller went on regardless (a refused write
        is the refusal of all that follows it, until a savepoint before it is rolled back to).

        With ``commit`` (the store, as its transaction ends) on PostgreSQL, when none of the
        held writes carries a check (one must be seen before anything commits), the ``COMMIT``
        goes in that same round trip, where it was one of its own after it: PostgreSQL runs
        the block's statements in order and stops at the first that fails, so a write that
        fails leaves the ``COMMIT`` unrun and the transaction written not at all. The
        connection's own commit then finds nothing to commit."""
        rides = commit and not self.sqlite and self._held and self.refused is None
        if rides and all(h.check is None for h in self._held):
            with self.together():
                self._driver_sql("COMMIT")
            return
        if self._held:
            with self.together():
                pass
        if self.refused is not None:
            raise InternalError(
                "A refused write was passed over and its transaction went on; nothing was written.",
                code="INTERNAL_ERROR",
            ) from self.refused

    def confirm(self) -> None:
        """Make the checks of the writes held back final: :meth:`send` if any of them
        carries a check (those without may wait for the transaction's next round trip, for
        a group commit the next unit's first: a failure of theirs fails the transaction)."""
        if self.refused is not None or any(h.check is not None for h in self._held):
            self.send()

    def _checked(self, check: Callable[[int], None], rowcount: int) -> None:
        """Run a held write's check; what it raises refuses the transaction (``refused``)."""
        try:
            check(rowcount)
        except Exception as exc:
            self.refused = exc
            raise

    def _hold(self, held: _Held) -> None:
        if self.sqlite or self._in_block:  # a call on SQLite; in a block, sent with it
            self._sent(held)
        else:
            self._held.append(held)

    def _sent(self, held: _Held) -> None:
        """Run ``held`` now; its check as the block sending it ends (only PostgreSQL holds a
        checked write: :meth:`later` runs SQLite's at once)."""
        if held.args is None:  # a savepoint's
            self._driver_sql(held.sql)
            return
        cursor = self._execute(held.sql, held.args, many=held.many)
        if held.check is not None:
            self._checks.append((cursor, held.check))

    def run_many(self, stmt: ClauseElement, rows: Sequence[Mapping[str, Any]]) -> None:
        """:meth:`run` once per row of ``rows`` (all with the same keys) in one call."""
        self._execute(*self._bound_rows(stmt, rows), many=True)

    def _may_run(self, stmt: ClauseElement) -> None:
        """Refuse a write in a read (:meth:`Store.read`), before it is sent: on PostgreSQL a
        read is no transaction of its own (its statements commit as they run), so a write
        there would be kept, where a rolled-back transaction once dropped it unsaid. (On
        PostgreSQL SQLAlchemy's statements are refused alike, by the store's hook; on SQLite,
        where a hook on every statement cost the gateway 5% of its CPU, a read is still a
        transaction rolled back, which drops such a write.)"""
        if not self.writes and stmt.is_dml:
            raise written_in_a_read()

    def _bound(self, stmt: ClauseElement, params: Mapping[str, Any]) -> tuple[str, Any]:
        """A hot statement's SQL and its driver arguments (see :meth:`run`)."""
        self._may_run(stmt)
        sql, order, kinds, fixed = _compiled(stmt, self.conn.dialect, tuple(params))
        if fixed:
            params = {**fixed, **params}
        return sql, self._args(params, order, kinds)

    def _bound_rows(
        self, stmt: ClauseElement, rows: Sequence[Mapping[str, Any]]
    ) -> tuple[str, list[Any]]:
        """:meth:`_bound` once per row (all with the same keys), for ``executemany``."""
        self._may_run(stmt)
        sql, order, kinds, fixed = _compiled(stmt, self.conn.dialect, tuple(rows[0]), many=True)
        if fixed:
            rows = [{**fixed, **r} for r in rows]
        return sql, [self._args(r, order, kinds) for r in rows]

    def run_tuples(
        self, stmt: ClauseElement, keys: tuple[str, ...], rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """:meth:`run_many` with each row's values in the order of ``keys``: on a positional
        paramstyle (SQLite's) with no values to convert, the rows go to the driver as they are,
        with no mapping made and read again for each (about a microsecond a row, and a paid
        call's two commits write a dozen counts or more)."""
        self._may_run(stmt)
        sql, order, kinds, fixed = _compiled(stmt, self.conn.dialect, keys, many=True)
        if order == keys and not kinds and not fixed:
            self._execute(sql, rows, many=True)
        else:
            self.run_many(stmt, [dict(zip(keys, row, strict=True)) for row in rows])

    def rows(self, stmt: ClauseElement, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The rows of a select of the hot path, typed as SQLAlchemy would return them."""
        if self._ahead:
            found = self._ahead.pop(_read_key(stmt, params), None)
            if found is not None:
                return found
        return self._typed(stmt, self.run(stmt, params).fetchall())

    @contextmanager
    def together(self) -> Iterator[None]:
        """Statements run in this block are sent to PostgreSQL as one query of them all, their
        values written into it as literals by psycopg (:meth:`_send_block`): one round trip for
        all of them as the block ends, where each would be one. Inside it no result may be
        read (a statement's rows and row count are there once the block has ended); an error
        of any of them is raised as the block ends, and the statements after it are not run.
        On SQLite, whose statements are calls and not round trips, a plain block (each
        statement's cursor its own there too, so its rows are read alike). The writes held
        back (:meth:`later`) go first, and their checks run as the block ends."""
        outer, self._in_block = self._in_block, True
        try:
            if self.sqlite:
                yield
            else:
                try:
                    if self._held:  # what was held back goes first, in its order
                        held, self._held = self._held, []
                        for h in held:
                            self._sent(h)
                    yield
                except BaseException:
                    # What ran in the block is sent all the same (a savepoint in it is
                    # then there to roll back to); the block's own error is the one raised.
                    with suppress(Exception):
                        self._send_block()
                    raise
                self._send_block()
                if not outer:
                    checks, self._checks = self._checks, []
                    for result, check in checks:
                        self._checked(check, result.rowcount)
        finally:
            self._in_block = outer
            if not outer:
                self._checks = []

    def _send_block(self) -> None:
        """Send the block's statements as one query (PostgreSQL's simple protocol runs them in
        order and stops at the first that fails), then hand each its rows and row count.

        Why not psycopg's pipeline: it sends each statement with a turn of its own (a poll of
        the socket with the interpreter's lock let go, then a send), and reads each result
        apart: eight statements cost 300-380 µs of this process's CPU and 190 of the
        server's; as one query of prepared statements 150-175 and 153-167. The values are
        written by psycopg's own adapter for the connection (:meth:`_Session.execute`, its
        quoting and escaping), never by string formatting of ours. A driver's error is
        raised as SQLAlchemy's, the statement named, not quoted (its values are in it)."""
        block, self._block = self._block, []
        if not block:
            return
        session = self._session()
        render = session.execute
        ready = session.names
        first: list[bytes] = []  # the block's PREPAREs, ahead of every statement that may fail
        if session.unsure or len(ready) > _MOST_PREPARED:
            first.append(b"DEALLOCATE ALL")
            ready.clear()
            session.unsure = False
        texts: list[bytes] = []
        try:
            for sql, args, many, _ in block:
                if args is None:
                    texts.append(sql.encode())
                    continue
                form = _prepared_form(sql)
                if form.name not in ready:
                    ready.add(form.name)
                    first.append(form.prepare)
                if many:
                    texts.extend(render(form, a) for a in args)
                else:
                    texts.append(render(form, args))
            cursor = self._sent_together(first + texts)
        except BaseException as exc:
            # Which of them the server has is not known, or it no longer has one (dropped
            # by another, or its plan no longer fits the table): all are made again.
            if first or getattr(exc, "sqlstate", None) in _GONE:
                session.unsure = True
            error = self.conn.dialect.loaded_dbapi.Error
            if isinstance(exc, error):  # a statement refused, a value it cannot write
                raise DBAPIError.instance(
                    "(statements sent together)", (), exc, error, dialect=self.conn.dialect
                ) from exc
            raise
        for _ in first:
            cursor.nextset()
        at_first = True
        for _, args, many, result in block:
            for _ in args if many else (None,):
                if not at_first:
                    cursor.nextset()
                at_first = False
                if result is None:
                    continue
                if cursor.pgresult.status == _TUPLES:
                    result._rows.extend(cursor.fetchall())
                result.rowcount = cursor.rowcount + (result.rowcount if many else 0)

    def _session(self) -> _Session:
        """What this transaction's connection keeps for its blocks (in its pool entry's
        ``info``, which SQLAlchemy clears when it replaces the connection)."""
        info = self.conn.info
        found = info.get(_SESSION)
        if found is None:
            adapter = self.conn.dialect.loaded_dbapi.adapt.Transformer(self._driver)
            found = info[_SESSION] = _Session(adapter.as_literal)
        return found

    def _sent_together(self, texts: list[bytes]) -> Any:
        """One query of the statements ``texts``, sent; the driver's cursor on its first
        result."""
        if self._cursor is None:
            self._cursor = self._driver.cursor()
        return self._cursor.execute(_JOIN.join(texts), prepare=False)

    @contextmanager
    def ahead(self, reads: Sequence[Read]) -> Iterator[None]:
        """Read several selects of the hot path at once (:meth:`together`), for the first
        :meth:`rows` of each statement with the same parameters in the block to take. Only
        around code that writes nothing those reads see (a view being built); what the block
        left untaken is dropped as it ends. On SQLite, and for one read, nothing: each is read
        when asked."""
        if self.sqlite or len(reads) < 2:
            yield
            return
        with self.together():
            sent = [(stmt, params, self.run(stmt, params)) for stmt, params in reads]
        for stmt, params, cursor in sent:
            self._ahead[_read_key(stmt, params)] = self._typed(stmt, cursor.fetchall())
        try:
            yield
        finally:
            self._ahead.clear()

    def _typed(self, stmt: ClauseElement, fetched: Sequence[Any]) -> list[dict[str, Any]]:
        names, kinds = _columns(stmt)
        sqlite_ = self.sqlite
        out = []
        for row in fetched:
            m = dict(zip(names, row, strict=True))
            for name, kind in kinds:
                value = m[name]
                if value is None:
                    continue
                if kind == "time":
                    when = datetime.fromisoformat(value) if sqlite_ else value
                    m[name] = when.replace(tzinfo=UTC)
                elif kind == "json":
                    if sqlite_:
                        m[name] = json_text.loads(value)
                else:
                    m[name] = bool(value)
            out.append(m)
        return out

    def _execute(self, sql: str, args: Any, *, many: bool) -> Any:
        if not self.sqlite:  # in a block, or a block of its own (with what was held back)
            if not self._in_block:
                with self.together():
                    return self._execute(sql, args, many=many)
            result = _Result(0 if many else -1)
            self._block.append((sql, args, many, result))
            return result
        error = self.conn.dialect.loaded_dbapi.Error
        try:
            if many:
                cursor = self._driver.cursor()
                cursor.executemany(sql, args)
                return cursor
            if self._in_block:  # a block's statement: a cursor of its own
                return self._driver.execute(sql, args)
            # One cursor for the transaction's statements, each read before the next: a new
            # one for each (what the driver's ``execute`` makes) costs a statement more CPU.
            if self._cursor is None:
                self._cursor = self._driver.cursor()
            return self._cursor.execute(sql, args)
        except error as exc:
            raise DBAPIError.instance(sql, args, exc, error, dialect=self.conn.dialect) from exc

    def _args(
        self, params: Mapping[str, Any], order: tuple[str, ...] | None, kinds: Mapping[str, str]
    ) -> Any:
        """The parameters as SQLAlchemy's column types would send them (see ``schema``): in
        ``order`` for a positional paramstyle (SQLite's), else by name (psycopg's)."""
        bind = self._bind
        if order is not None:
            if not kinds:
                return tuple([params[k] for k in order])
            return tuple([bind(params[k], kinds[k]) if k in kinds else params[k] for k in order])
        if not kinds:
            return params
        named = dict(params)
        for key, kind in kinds.items():
            named[key] = bind(named[key], kind)
        return named

    def _bind(self, value: Any, kind: str) -> Any:
        if kind == "json":
            return json_text.dumps(value)
        if kind == "time" and value is not None:
            if value.tzinfo is None:
                raise ValueError("naive datetime; the store keeps aware UTC times only")
            naive = (value if value.tzinfo is UTC else value.astimezone(UTC)).replace(tzinfo=None)
            # SQLAlchemy's SQLite DATETIME text, which orders as the times do.
            return naive.isoformat(" ", "microseconds") if self.sqlite else naive
        return value


_Compiled = tuple[str, tuple[str, ...] | None, dict[str, str], dict[str, Any]]
#: Hot statements compiled per dialect and parameter names (see :func:`_compiled`).
_COMPILED: dict[tuple[Any, ...], _Compiled] = {}
#: The column names of hot selects, and those read back as times, JSON or booleans.
_COLUMNS: dict[int, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}


#: The most rows :meth:`Transaction.later_many` writes in one statement.
_ROWS_AT_ONCE = 32
#: Inserts of several rows at once, by the insert, its keys and its rows (see
#: :func:`_rows_at_once`); kept, so that :func:`_compiled` may cache them by ``id``.
_AT_ONCE: dict[tuple[int, tuple[str, ...], int], Insert] = {}


def _rows_at_once(stmt: Insert, keys: tuple[str, ...], count: int) -> Insert:
    """``stmt`` inserting ``count`` rows of ``keys`` at once, row ``i``'s values named
    ``{key}_{i}``, each bound as its column's type."""
    key = (id(stmt), keys, count)
    found = _AT_ONCE.get(key)
    if found is None:
        table = stmt.table
        rows = [
            {k: bindparam(f"{k}_{i}", type_=table.c[k].type) for k in keys} for i in range(count)
        ]
        # Two threads may build it at once: both keep the first one kept, so that no insert
        # that :func:`_compiled` cached by ``id`` is ever freed and its ``id`` reused.
        found = _AT_ONCE.setdefault(key, stmt.values(rows))
    return found


def _compiled(
    stmt: ClauseElement, dialect: Dialect, keys: tuple[str, ...], *, many: bool = False
) -> _Compiled:
    """SQL text, the parameters' order (positional paramstyles), which parameters are times or
    JSON (those that set a column of that type), and the values of the statement's own
    literals (``accounts.id == "world"``, say).

    Cached by the statement's ``id``: only for the statements built once at module level.
    """
    cache_key = (dialect.name, dialect.driver, id(stmt), keys, many)
    found = _COMPILED.get(cache_key)
    if found is None:
        compiled = stmt.compile(dialect=dialect, column_keys=list(keys), for_executemany=many)
        assert isinstance(compiled, SQLCompiler)
        order = tuple(compiled.positiontup or ()) if compiled.positional else None
        table = getattr(stmt, "table", None)
        kinds = {}
        for key in keys:
            column = table.c.get(key) if table is not None else None
            # A column it sets, else the type a comparison gave it (``c.at <= :k_at``).
            typed = column if column is not None else compiled.binds.get(key)
            kind = _kind(typed.type) if typed is not None else None
            if kind in ("time", "json"):
                kinds[key] = kind
        fixed = {
            name: bind.effective_value
            for name, bind in compiled.binds.items()
            if name not in keys and not bind.required
        }
        found = _COMPILED[cache_key] = (compiled.string, order, kinds, fixed)
    return found


def _columns(stmt: ClauseElement) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    found = _COLUMNS.get(id(stmt))
    if found is None:
        assert isinstance(stmt, Select)
        columns = [(c.name, _kind(c.type)) for c in stmt.selected_columns]
        names = tuple(name for name, _ in columns)
        typed = tuple((name, kind) for name, kind in columns if kind is not None)
        found = _COLUMNS[id(stmt)] = (names, typed)
    return found


def _kind(column_type: Any) -> str | None:
    if isinstance(column_type, s.UTCDateTime):
        return "time"
    if isinstance(column_type, JSON):
        return "json"
    if isinstance(column_type, Boolean):
        return "bool"
    return None
