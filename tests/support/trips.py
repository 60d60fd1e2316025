"""A transaction's round trips to PostgreSQL, counted on its driver connection."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest


class Trips:
    """The transaction's driver connection, counting its round trips (each statement
    outside a pipeline, and each pipeline) and keeping the statements' SQL."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.trips = 0
        self.depth = 0
        self.statements: list[str] = []

    @contextmanager
    def pipeline(self) -> Iterator[Any]:
        self.depth += 1
        try:
            with self.driver.pipeline() as p:
                yield p
        finally:
            self.depth -= 1
            self.trips += self.depth == 0

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.trips += self.depth == 0
        self.statements.append(args[0])
        return self.driver.execute(*args, **kwargs)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        return _Cursor(self, self.driver.cursor(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)


class _Cursor:
    def __init__(self, trips: Trips, cursor: Any) -> None:
        self._trips, self._cursor = trips, cursor

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self._trips.trips += self._trips.depth == 0
        self._trips.statements.append(args[0])
        self._cursor.execute(*args, **kwargs)
        return self

    def executemany(self, *args: Any, **kwargs: Any) -> Any:
        self._trips.trips += self._trips.depth == 0
        self._trips.statements += [args[0]] * len(args[1])  # psycopg sends one a row
        self._cursor.executemany(*args, **kwargs)
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
