"""What the benchmarks' bare-work floors share: one commit of a row, done directly.

A floor is the work a request must do with nothing around it, timed in the benchmark's own
process; its commit is one row written and committed on the benchmark's kind of database
(SQLite: a file with the store's journal settings; PostgreSQL: the same server).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def bare_commit(url: str, directory: Path) -> tuple[Callable[[str], None], Callable[[], None]]:
    """``(commit, close)``: ``commit(row)`` writes one text row in a transaction of its own."""
    if url.startswith("sqlite"):
        import sqlite3  # noqa: PLC0415

        db = sqlite3.connect(directory / "floor.db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, body TEXT)")

        def commit(row: str) -> None:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO floor (body) VALUES (?)", (row,))
            db.execute("COMMIT")

        return commit, db.close
    import psycopg  # noqa: PLC0415

    pg = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))
    pg.execute("CREATE TEMPORARY TABLE floor (id SERIAL PRIMARY KEY, body TEXT)")
    pg.commit()

    def commit_pg(row: str) -> None:
        pg.execute("INSERT INTO floor (body) VALUES (%s)", (row,))
        pg.commit()

    return commit_pg, pg.close
