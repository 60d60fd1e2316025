"""Persistence behind one interface: SQLite by default, PostgreSQL by URL (SQLAlchemy 2).

:class:`Store` opens a database, migrates it with Alembic, and hands out transactions. What it
holds is read and written by the module named for it, each a set of functions over a
:class:`Transaction`: ``records`` (accounts, tasks, submissions, verdicts, disputes, lapsed
takes), ``takes`` (each agent's count of held takes), ``ledger`` (balances and entries),
``held_days`` (the money held at each day's end), ``day_counts`` (what the dashboards count
each day), ``receipt_log`` (the hash chain), ``leases``
(the review queue), ``idempotency``, ``quotas``, ``calls`` (verified paid calls),
``call_reports`` (reports of bad call results), ``gateway`` (callable tools, signing keys,
credentials, forwarded calls), ``holds`` (providers' settled charges until their report
deadlines), ``hot_rows`` (the rows many transactions change, locked by a batch in one
order), ``meaning_queue`` (calls judged after their answers), ``quality_windows`` (each
provider's running quality counts) and ``outbox`` (webhook endpoints, events and their
deliveries); ``ids`` makes the identifiers rows are keyed by, and ``pages`` the keyset page
every listing reads. Nothing is half-written: a
transaction commits whole or not at all.
"""

from adjudge.store import (
    api_keys,
    call_reports,
    calls,
    day_counts,
    gateway,
    held_days,
    holds,
    hot_rows,
    idempotency,
    ids,
    leases,
    ledger,
    meaning_queue,
    outbox,
    pages,
    quality_windows,
    quotas,
    receipt_log,
    records,
    takes,
)
from adjudge.store.database import DEFAULT_URL, Store, migrate, open_store, store_error
from adjudge.store.pages import Page
from adjudge.store.receipt_log import StoredReceipt
from adjudge.store.records import (
    Account,
    StoredDispute,
    StoredLapse,
    StoredTask,
    StoredVerdict,
    Submission,
    VerifierKey,
)
from adjudge.store.transaction import ConcurrentUpdate, Read, Transaction

__all__ = [
    "DEFAULT_URL",
    "Account",
    "ConcurrentUpdate",
    "Page",
    "Read",
    "Store",
    "StoredDispute",
    "StoredLapse",
    "StoredReceipt",
    "StoredTask",
    "StoredVerdict",
    "Submission",
    "Transaction",
    "VerifierKey",
    "api_keys",
    "call_reports",
    "calls",
    "day_counts",
    "gateway",
    "held_days",
    "holds",
    "hot_rows",
    "idempotency",
    "ids",
    "leases",
    "ledger",
    "meaning_queue",
    "migrate",
    "open_store",
    "outbox",
    "pages",
    "quality_windows",
    "quotas",
    "receipt_log",
    "records",
    "store_error",
    "takes",
]
