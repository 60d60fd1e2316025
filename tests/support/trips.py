"""A transaction's round trips to PostgreSQL, counted on its driver connection."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from adjudge.store import database, transaction
from adjudge.store.transaction import _JOIN, Transaction


class Trips:
    """The transaction's driver connection, counting its round trips (each query sent) and
    keeping the statements' SQL: those of a block sent as one query (``Transaction.together``)
    one by one (split where the store joins them: a value holding that break would be split
    too, and no test's does), each run of a prepared statement as the SQL it prepared, and the
    preparing apart (``prepared``)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.trips = 0
        self.statements: list[str] = []
        self.prepared: list[str] = []

    def noted(self, query: str | bytes) -> None:
        self.trips += 1
        text = query.decode() if isinstance(query, bytes) else query
        for sql in text.split(_JOIN.decode()):
            if sql.startswith(("PREPARE ", "DEALLOCATE ")):
                self.prepared.append(sql)
            elif sql.startswith("EXECUTE "):
                self.statements.append(_prepared_sql(sql))
            else:
                self.statements.append(sql)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.noted(args[0])
        return self.driver.execute(*args, **kwargs)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        return _Cursor(self, self.driver.cursor(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)


def _prepared_sql(execute: str) -> str:
    """The SQL a prepared statement's ``EXECUTE name(…)`` runs."""
    name = execute.removeprefix("EXECUTE ").split("(", 1)[0]
    return next(sql for sql, form in transaction._FORMS.items() if form.name == name)


class _Cursor:
    def __init__(self, trips: Trips, cursor: Any) -> None:
        self._trips, self._cursor = trips, cursor

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self._trips.noted(args[0])
        self._cursor.execute(*args, **kwargs)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def statuses_at(monkeypatch: pytest.MonkeyPatch, method: str) -> list[psycopg.pq.TransactionStatus]:
    """psycopg's transaction status at each call of ``Connection.<method>`` (``commit`` or
    ``rollback``) from now on: ``IDLE`` when there is nothing to end, so nothing is sent."""
    found: list[psycopg.pq.TransactionStatus] = []
    real = getattr(psycopg.Connection, method)

    def noted(conn: psycopg.Connection[Any]) -> None:
        found.append(conn.info.transaction_status)
        real(conn)

    monkeypatch.setattr(psycopg.Connection, method, noted)
    return found


def traced(monkeypatch: pytest.MonkeyPatch) -> list[Trips]:
    """From now on (``monkeypatch``'s scope), every transaction the store begins counts its
    round trips on its driver: one :class:`Trips` a transaction, in the order begun."""
    found: list[Trips] = []

    class Traced(Transaction):
        def __init__(self, conn: Any) -> None:
            super().__init__(conn)
            self._driver = Trips(self._driver)
            found.append(self._driver)

    monkeypatch.setattr(database, "Transaction", Traced)
    return found
