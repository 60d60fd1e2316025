"""Throwaway PostgreSQL databases for the tests that must run there too."""

from __future__ import annotations

import os
import uuid

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

#: Where the PostgreSQL tests look; any database the user may CREATE DATABASE from.
POSTGRES_URL = os.environ.get(
    "ADJUDGE_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


class Unreachable(Exception):
    """No PostgreSQL server could give us a database; the message says why."""


def create_database(template: str | None = None) -> str:
    """Create an empty database, or a copy of ``template`` (the URL of a database nobody is
    connected to), and return its URL (:class:`Unreachable` if none can be)."""
    try:
        admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        name = "adjudge_test_" + uuid.uuid4().hex[:12]
        copied = f' TEMPLATE "{make_url(template).database}"' if template else ""
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"{copied}'))
        admin.dispose()
    except Exception as exc:  # any failure to reach it: the caller skips or fails, saying why
        raise Unreachable(
            f"PostgreSQL unreachable at {POSTGRES_URL} ({type(exc).__name__}): {exc}"
        ) from exc
    return make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    """Drop a database :func:`create_database` made."""
    name = make_url(url).database
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()
