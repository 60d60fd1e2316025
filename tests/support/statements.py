"""The SQL statements SQLAlchemy sends on an engine, counted by the tests that bound them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event


@contextmanager
def statements(engine: Engine, naming: str = "") -> Iterator[list[str]]:
    """The statements sent through SQLAlchemy on ``engine`` inside the block (those whose SQL
    holds ``naming``), in order. The hot path's statements go to the driver directly: a test
    of round trips counts those on the driver (``support.trips``)."""
    sent: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if naming in statement:
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", seen)
