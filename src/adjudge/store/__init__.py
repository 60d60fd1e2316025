"""Persistence behind one interface: SQLite by default, PostgreSQL by URL (SQLAlchemy 2).

:class:`Store` opens a database, migrates it with Alembic, and hands out transactions; a
:class:`Transaction` reads and writes tasks, accounts, the ledger, verdicts, receipts and
idempotency records. Nothing is half-written: a transaction commits whole or not at all.
"""

from adjudge.store import calls  # registers the paid-call tables in the one metadata
from adjudge.store.database import DEFAULT_URL, Store, migrate
from adjudge.store.transaction import (
    Account,
    ConcurrentUpdate,
    StoredReceipt,
    StoredTask,
    StoredVerdict,
    Submission,
    Transaction,
)

__all__ = [
    "DEFAULT_URL",
    "Account",
    "ConcurrentUpdate",
    "Store",
    "StoredReceipt",
    "StoredTask",
    "StoredVerdict",
    "Submission",
    "Transaction",
    "calls",
    "migrate",
]
