"""The plans SQLite makes for the statements a piece of code sends, with their parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event

from adjudge.store import Store, Transaction


def sqlite_plans(
    store: Store, run: Callable[[Transaction], Any], *, write: bool = False
) -> list[tuple[str, list[str]]]:
    """Each ``SELECT`` (with ``write``, each ``UPDATE`` and ``DELETE`` too) that ``run`` sends
    through SQLAlchemy in a read (or a write) of ``store`` (SQLite), and the steps of its query
    plan as SQLite makes it for the parameters it was sent with. (The hot path's statements go
    to the driver directly: ``support.steps`` counts the work those do.)"""
    kinds = ("SELECT", "WITH", "UPDATE", "DELETE") if write else ("SELECT", "WITH")
    sent: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(kinds):
            sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        with store.write() if write else store.read() as tx:
            run(tx)
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)
    with store.read() as tx:
        raw = tx.conn.connection.driver_connection
        assert raw is not None
        return [
            (sql, [row[-1] for row in raw.execute(f"EXPLAIN QUERY PLAN {sql}", params)])
            for sql, params in sent
        ]
