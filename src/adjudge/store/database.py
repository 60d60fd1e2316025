"""Opening a database: the engine, SQLite's locking, Alembic migrations, transactions."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from select import POLLERR, POLLHUP, POLLIN, poll
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.util.exc import CommandError
from sqlalchemy import Connection, Engine, create_engine, event, insert, make_url, select
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    DisconnectionError,
    IntegrityError,
    NoSuchModuleError,
)

from adjudge import json_text
from adjudge.errors import StorageError
from adjudge.numerals import read_whole
from adjudge.receipts.checkpoints import MAX_LANES
from adjudge.store import day_counts, held_days, ledger, quotas, receipt_log
from adjudge.store import schema as s
from adjudge.store.transaction import ConcurrentUpdate, Transaction, written_in_a_read

#: An embedded file in the working directory: nothing else to install.
DEFAULT_URL = "sqlite:///adjudge.db"

#: The receipt log's lanes on PostgreSQL when the operator does not say (``ADJUDGE_CHAIN_LANES``):
#: enough for a few ``serve`` processes and their upkeep to commit at once.
DEFAULT_PG_LANES = 4

#: PostgreSQL's "try again" conditions: serialization failure and deadlock.
_RETRYABLE_PG = {"40001", "40P01"}
#: How long the WAL checkpointer lets writes gather before it runs, and how long it waits idle
#: before its thread ends (the next write starts it again). A checkpoint's cost is mostly its
#: two syncs of the file, not the pages it copies: every 50 ms, under a steady 250 calls/s,
#: its second step held the write lock for 23% of the time (377 checkpoints in a run, 3.2 s
#: locked); every 0.5 s, 2% (27 checkpoints, 0.3 s), each no longer (the log then 6-12 MB).
CHECKPOINT_DELAY = 0.5
CHECKPOINT_IDLE = 5.0


def _file_sqlite(url: str) -> bool:
    return url.startswith("sqlite") and ":memory:" not in url and url.rstrip("/") != "sqlite:"


def _private_file(url: str) -> None:
    """Create a SQLite file readable by its owner only (0600) before SQLite makes it 0644.

    The file holds API key digests, results and the ledger; its WAL and shared-memory files
    take the same mode from it.
    """
    path = make_url(url).database
    if not path or os.path.exists(path):
        return
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


#: Connections kept open: as many as the service's threads use at once under load (the
#: gateway's database threads, the commit thread, the route threads of a busy moment). A
#: connection over the kept ones is opened for one checkout and closed after it, which cost a
#: paid call about a tenth of its CPU on SQLite when only five were kept. LIFO reuse leaves
#: the kept connections past the busy moment's idle (a check at each checkout replaces one the
#: PostgreSQL server closed meanwhile: :func:`_closed_by_the_server`).
#: On PostgreSQL each connection is a server process: at most 40 a service process, so two
#: processes stay under the server's default of 100 connections.
POOL_SIZE = 24
POOL_OVERFLOW = 40
POSTGRES_OVERFLOW = 16
#: How long an SQLite writer waits for another process's write lock before giving up.
BUSY_TIMEOUT_MS = 30_000


def _engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        if _file_sqlite(url):
            _private_file(url)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
            json_deserializer=json_text.loads,
            pool_size=POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
            pool_use_lifo=True,
        )

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy's "begin" event issue BEGIN itself, so writers can take the lock
            # up front (BEGIN IMMEDIATE) instead of failing to upgrade a read lock later.
            dbapi_conn.isolation_level = None
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            if _file_sqlite(url):
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
                # Checkpoints run on a thread of their own (_Checkpoints), not in a commit.
                cursor.execute("PRAGMA wal_autocheckpoint=0")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            # On the driver, as the hot statements run (Transaction.run): through
            # exec_driver_sql this one statement cost as much as three of them.
            options = conn.get_execution_options()
            write = options.get("adjudge_write", False)
            sql = "BEGIN IMMEDIATE" if write else "BEGIN"
            driver = conn.connection.driver_connection
            # Not waiting: BEGIN IMMEDIATE is the one statement that waits for another
            # process's writer (the busy timeout); later ones hold the write lock already.
            patient = options.get("adjudge_wait", True)
            try:
                if not patient:
                    driver.execute("PRAGMA busy_timeout=0")
                try:
                    driver.execute(sql)
                finally:
                    if not patient:
                        driver.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            except sqlite3.Error as exc:  # raised as SQLAlchemy's, as exec_driver_sql would
                raise DBAPIError.instance(
                    sql, (), exc, sqlite3.Error, dialect=conn.dialect
                ) from exc

        return engine
    engine = create_engine(
        url,
        json_deserializer=json_text.loads,  # psycopg's reading of json columns, on each connection
        pool_size=POOL_SIZE,
        max_overflow=POSTGRES_OVERFLOW,
        pool_use_lifo=True,
        # The hot statements are prepared by the store itself (``transaction._prepared_form``);
        # psycopg's own preparing would drop them with its own on every rollback (it sends
        # ``DEALLOCATE ALL``), so it is off.
        connect_args={"prepare_threshold": None},
    )
    event.listen(engine, "before_cursor_execute", _before_statement)
    event.listen(engine, "checkout", _closed_by_the_server)
    return engine


def _closed_by_the_server(driver: Any, _entry: Any, _proxy: Any) -> None:
    """Refuse a pooled connection the server closed while it sat idle (a restart, an idle
    time-out, an administrator ending it): the pool then makes a new one.

    Why not SQLAlchemy's ``pool_pre_ping``: it sends a statement at every checkout, a round
    trip a transaction. A server that ends a session says so (an error message, then the end
    of the stream), so an idle connection with anything to read is closed or closing, and a
    poll of its socket that does not wait finds that. A network that drops a connection
    without a word is found by its next statement instead: that transaction fails as a
    storage error, writing nothing, and the pool replaces the connection (a ping would have
    waited as long to find it)."""
    try:
        closed = driver.closed or driver.broken or _readable(driver.pgconn.socket)
    except driver.Error:  # no socket: the connection is lost
        closed = True
    if closed:
        raise DisconnectionError("the server closed this pooled connection")


def _readable(fd: int) -> bool:
    waiting = poll()
    waiting.register(fd, POLLIN | POLLERR | POLLHUP)
    return bool(waiting.poll(0))


#: Where a PostgreSQL connection's info names the transaction running on it.
_RUNNING = "adjudge.transaction"


def _before_statement(
    conn: Connection, _cursor: Any, _sql: Any, _args: Any, context: Any, *_: Any
) -> None:
    """A statement run through SQLAlchemy first sends the writes its transaction held back
    (:meth:`Transaction.later`), so it runs after them as it was asked to; in a read, a write
    is refused (:meth:`Store.read`)."""
    tx = conn.info.get(_RUNNING)
    if tx is not None:
        tx.send()
    elif _writes(context) and not conn.get_execution_options().get("adjudge_write", True):
        raise written_in_a_read()


def _writes(context: Any) -> bool:
    """Whether SQLAlchemy runs an insert, update or delete (``context``: its execution's)."""
    return context is not None and bool(context.isinsert or context.isupdate or context.isdelete)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (a no-op when it is already there)."""
    config = Config()
    config.set_main_option("script_location", str(files("adjudge.store") / "migrations"))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


class _Checkpoints:
    """SQLite's write-ahead log copied into the database file on a thread of its own.

    By default the commit that brings the log past 1000 pages checkpoints it: it copies them
    into the database file (7-11 ms, about every 70th finalize) while it holds the write lock
    and every writer queues behind it. Here connections never checkpoint
    (``wal_autocheckpoint=0``); shortly after writes, this thread runs a PASSIVE checkpoint
    alongside the writers, which copies the bulk, then a second one holding the store's write
    lock, which copies the few pages written meanwhile. Only a log copied to its end is started
    over by the next writer: without that second step it would grow under steady writes.

    The thread ends after :data:`CHECKPOINT_IDLE` seconds without writes and the next write
    starts it again; a failed checkpoint is retried after the next write (and SQLite
    checkpoints when the last connection closes).
    """

    def __init__(self, engine: Engine, writer: threading.Lock) -> None:
        self._engine = engine
        self._writer = writer
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._halt = threading.Event()  # ends the gathering wait at once when stopping
        self._stopping = False
        self._thread: threading.Thread | None = None

    def nudge(self) -> None:
        """Note a commit: a checkpoint follows shortly."""
        self._wake.set()
        with self._lock:
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(
                    target=self._run, name="adjudge-wal-checkpoints", daemon=True
                )
                self._thread.start()

    def stop(self) -> None:
        """End the thread after a last checkpoint."""
        with self._lock:
            thread, self._stopping = self._thread, True
        self._wake.set()
        self._halt.set()
        if thread is not None:
            thread.join(timeout=10)
        with self._lock:
            self._stopping = False
            self._halt.clear()

    def _run(self) -> None:
        while True:
            woken = self._wake.wait(CHECKPOINT_IDLE)
            if woken and not self._stopping:
                self._halt.wait(CHECKPOINT_DELAY)  # let more commits gather
            with self._lock:  # (a nudge now either sees this thread or finds it gone)
                woken = woken or self._wake.is_set()
                self._wake.clear()
                ending = self._stopping or not woken
                if ending:
                    self._thread = None
            if woken:
                self._checkpoint()
            if ending:
                return

    def _checkpoint(self) -> None:
        try:
            raw = self._engine.raw_connection()
            try:
                driver: Any = raw.driver_connection
                driver.execute("PRAGMA wal_checkpoint(PASSIVE)")
                with self._writer:
                    driver.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                raw.close()
        except Exception:  # the checkpoint after the next write tries again
            return


def _lanes(dialect: str, lanes: int | None) -> int:
    """The lanes a store chains receipts on: one on SQLite (writes are serial there); on
    PostgreSQL ``lanes``, else ``ADJUDGE_CHAIN_LANES`` (digits only, as every setting's
    variable: ``4_0`` or `` 4`` is refused, not read as 40 and 4), else
    :data:`DEFAULT_PG_LANES`."""
    if dialect == "sqlite":
        return 1
    if lanes is None:
        text = os.environ.get("ADJUDGE_CHAIN_LANES", "")
        found = read_whole(text) if text else DEFAULT_PG_LANES
        if found is None:
            raise StorageError(
                f"ADJUDGE_CHAIN_LANES is a whole number of lanes in digits, not {text[:40]!r}."
            )
        lanes = found
    if not 1 <= lanes <= MAX_LANES:
        raise StorageError(f"The receipt log has 1 to {MAX_LANES} lanes, not {lanes}.")
    return lanes


class Store:
    """One database. ``Store(url)`` connects; :meth:`migrate` creates or upgrades the schema.

    ``lanes``: how many lanes of the receipt log its writers chain on at once
    (:mod:`adjudge.store.receipt_log`; always one on SQLite).
    """

    def __init__(self, url: str = DEFAULT_URL, *, lanes: int | None = None) -> None:
        self.url = url
        self.engine = _engine(url)
        self.lanes = _lanes(self.dialect, lanes)
        # SQLite admits one writer at a time and makes the others poll with growing sleeps;
        # queueing this process's writers on a lock instead keeps latency flat under load.
        self._writer = threading.Lock() if self.dialect == "sqlite" else None
        self._checkpoints = (
            _Checkpoints(self.engine, self._writer)
            if self._writer is not None and _file_sqlite(url)
            else None
        )

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    def migrate(self) -> None:
        """Apply every pending migration, and make the receipt log's lanes the setting asks
        for (a lane is never removed: a lane no longer written stays on the log as it is)."""
        migrate(self.engine)
        for attempt in range(3):  # another process starting beside this one may make them too
            try:
                with self.engine.begin() as conn:
                    have = {row[0] for row in conn.execute(select(s.chain_lanes.c.id))}
                    missing = [
                        {"id": n, "seq": 0, "digest": None}
                        for n in range(self.lanes)
                        if n not in have
                    ]
                    if missing:
                        conn.execute(insert(s.chain_lanes), missing)
                return
            except IntegrityError:
                if attempt == 2:
                    raise

    def dispose(self) -> None:
        """Close every pooled connection (and end the checkpointer's thread)."""
        if self._checkpoints is not None:
            self._checkpoints.stop()
        self.engine.dispose()

    @property
    def local(self) -> bool:
        """Whether the store is an SQLite file (or memory) of this process: its statements
        never wait on a network, so a few of them can run on an event loop instead of being
        handed to a thread (see :meth:`write`'s ``wait``)."""
        return self._writer is not None

    @contextmanager
    def write(self, *, wait: bool = True) -> Iterator[Transaction]:
        """A read-write transaction: commits when the block ends, rolls back if it raises.

        Database conflicts that a retry can resolve (a lost race on a row, a deadlock, a busy
        SQLite file) surface as :class:`ConcurrentUpdate`; other database failures as
        :class:`adjudge.StorageError`. ``wait=False`` (a :attr:`local` store only) never waits
        for another writer, of this process or another: it raises :class:`ConcurrentUpdate`
        at once instead, before anything is written — for an event loop, which must not stall.
        """
        if self._writer is None:
            if not wait:
                raise StorageError("Only a local store writes without waiting.")
            with self._transaction(write=True) as tx:
                yield tx
            return
        if not self._writer.acquire(blocking=wait):
            raise ConcurrentUpdate("Another writer of this process holds the store.")
        try:
            with self._transaction(write=True, wait=wait) as tx:
                yield tx
        finally:
            self._writer.release()
        if self._checkpoints is not None:
            self._checkpoints.nudge()

    @contextmanager
    def read(self, *, one_moment: bool = False) -> Iterator[Transaction]:
        """A read: its statements are selects (a write is refused before it is sent,
        ``INTERNAL_ERROR``; through SQLAlchemy on SQLite, dropped by the rollback: see
        :meth:`Transaction._may_run`). On SQLite one transaction, rolled back at the end, whose
        statements all read one snapshot. On PostgreSQL no transaction of its own: under its
        isolation (read committed) each statement of a transaction reads the data as committed
        when it began, as a statement on its own does, so the ``BEGIN`` and the ``ROLLBACK``
        around a read changed nothing it read and cost a round trip (two when its first
        statement went alone). ``one_moment``: figures that must agree with each other (a
        dashboard, the books' audit) are read from one snapshot on PostgreSQL too, in a
        read-only transaction of repeatable-read isolation."""
        with self._transaction(write=False, one_moment=one_moment) as tx:
            yield tx

    @contextmanager
    def _transaction(
        self, *, write: bool, wait: bool = True, one_moment: bool = False
    ) -> Iterator[Transaction]:
        try:
            with self.engine.connect() as raw:
                conn = raw.execution_options(adjudge_write=write, adjudge_wait=wait)
                if not write and not self.local:  # a read on PostgreSQL (see read)
                    if one_moment:
                        conn.execution_options(
                            isolation_level="REPEATABLE READ", postgresql_readonly=True
                        )
                    else:
                        conn.execution_options(isolation_level="AUTOCOMMIT")
                with conn.begin() as outer:
                    tx = Transaction(conn)
                    tx.lanes = self.lanes
                    if write and not tx.sqlite:
                        conn.info[_RUNNING] = tx
                    try:
                        yield tx
                        if write:
                            receipt_log.commit(tx)  # the chain's head, locked for the last steps
                            held_days.flush(tx)  # on the same lane, as locked
                            day_counts.flush(tx)  # and so the dashboards' counts
                            ledger.flush(tx)  # credits last: a shared balance waits the least
                            quotas.flush(tx)  # then counters, waiting for no other row
                            tx.send(commit=True)  # and what is held, checks before the commit
                        else:
                            outer.rollback()
                    finally:
                        conn.info.pop(_RUNNING, None)
                if write:
                    for done in tx.committed:
                        done()
        except DBAPIError as exc:
            raise store_error(exc) from exc


def open_store(url: str) -> Store:
    """The store at ``url``, its schema brought up to date; ``STORAGE_ERROR`` with what went
    wrong (never the URL, which may hold a password) when it cannot be opened: a URL no driver
    reads, a file in a folder that does not exist, a server that does not answer."""
    try:
        store = Store(url)
        store.migrate()
    except CommandError as exc:  # a revision this adjudge does not know: a newer one's
        raise StorageError(
            f"The database's schema is not one this adjudge knows ({exc}): it was migrated by a "
            "newer adjudge; run that version, or restore a copy made before.",
            code="STORAGE_ERROR",
        ) from None
    except (ArgumentError, NoSuchModuleError) as exc:
        raise StorageError(
            f"The database URL is not one adjudge reads ({type(exc).__name__}): give a "
            "sqlite:///FILE or a postgresql+psycopg://… URL.",
            code="STORAGE_ERROR",
        ) from None
    except (OSError, DBAPIError) as exc:
        reason = getattr(exc, "orig", None) or exc
        text = str(reason).strip().splitlines()[0] if str(reason).strip() else type(exc).__name__
        raise StorageError(
            f"The database cannot be opened: {text[:300]}.", code="STORAGE_ERROR"
        ) from None
    return store


def store_error(exc: Exception) -> Exception:
    """A driver's error as the store raises it: :class:`ConcurrentUpdate` for a race a retry
    resolves (a deadlock, a serialization failure, a busy SQLite file), :class:`StorageError`
    for any other; any other exception as it is. Also for a unit of a group commit, whose own
    savepoint is rolled back and which may run again."""
    if not isinstance(exc, DBAPIError):
        return exc
    if _retryable(exc):
        return ConcurrentUpdate("The database was busy; try again.")
    return StorageError("The database failed; nothing was written.")


def _retryable(exc: DBAPIError) -> bool:
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if code in _RETRYABLE_PG:
        return True
    return "database is locked" in str(exc.orig) or "database is busy" in str(exc.orig)
