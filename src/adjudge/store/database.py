"""Opening a database: the engine, SQLite's locking, Alembic migrations, transactions."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, OperationalError

from adjudge.errors import StorageError
from adjudge.store.transaction import ConcurrentUpdate, Transaction

#: An embedded file in the working directory: nothing else to install.
DEFAULT_URL = "sqlite:///adjudge.db"

#: PostgreSQL's "try again" conditions: serialization failure and deadlock.
_RETRYABLE_PG = {"40001", "40P01"}


def _engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy's "begin" event issue BEGIN itself, so writers can take the lock
            # up front (BEGIN IMMEDIATE) instead of failing to upgrade a read lock later.
            dbapi_conn.isolation_level = None
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            if ":memory:" not in url and url.rstrip("/") != "sqlite:":
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            write = conn.get_execution_options().get("adjudge_write", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (a no-op when it is already there)."""
    config = Config()
    config.set_main_option("script_location", str(files("adjudge.store") / "migrations"))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


class Store:
    """One database. ``Store(url)`` connects; :meth:`migrate` creates or upgrades the schema."""

    def __init__(self, url: str = DEFAULT_URL) -> None:
        self.url = url
        self.engine = _engine(url)
        # SQLite admits one writer at a time and makes the others poll with growing sleeps;
        # queueing this process's writers on a lock instead keeps latency flat under load.
        self._writer = threading.Lock() if self.dialect == "sqlite" else None

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    def migrate(self) -> None:
        """Apply every pending migration."""
        migrate(self.engine)

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    @contextmanager
    def write(self) -> Iterator[Transaction]:
        """A read-write transaction: commits when the block ends, rolls back if it raises.

        Database conflicts that a retry can resolve (a lost race on a row, a deadlock, a busy
        SQLite file) surface as :class:`ConcurrentUpdate`; other database failures as
        :class:`adjudge.StorageError`.
        """
        if self._writer is None:
            with self._transaction(write=True) as tx:
                yield tx
            return
        with self._writer, self._transaction(write=True) as tx:
            yield tx

    @contextmanager
    def read(self) -> Iterator[Transaction]:
        """A read-only transaction (rolled back at the end)."""
        with self._transaction(write=False) as tx:
            yield tx

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Transaction]:
        try:
            with self.engine.connect() as raw:
                conn = raw.execution_options(adjudge_write=write)
                with conn.begin() as outer:
                    yield Transaction(conn)
                    if not write:
                        outer.rollback()
        except OperationalError as exc:
            if _retryable(exc):
                raise ConcurrentUpdate("The database was busy; try again.") from exc
            raise StorageError("The database failed; nothing was written.") from exc
        except DBAPIError as exc:
            if _retryable(exc):
                raise ConcurrentUpdate("The database was busy; try again.") from exc
            raise StorageError("The database failed; nothing was written.") from exc


def _retryable(exc: DBAPIError) -> bool:
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if code in _RETRYABLE_PG:
        return True
    return "database is locked" in str(exc.orig) or "database is busy" in str(exc.orig)
