"""The database's shape: the one :data:`metadata`, the column types, and the marketplace's own
tables — accounts and balances, the ledger, tasks with their takes, lapses, panel seats,
submissions, verdicts and disputes, receipts and the chain head, idempotency, review leases,
verifier keys and quotas.

The other stores define their tables beside the queries that use them, on this same metadata:
:mod:`~adjudge.store.api_keys`, :mod:`~adjudge.store.call_reports`, :mod:`~adjudge.store.calls`,
:mod:`~adjudge.store.gateway`, :mod:`~adjudge.store.holds`, :mod:`~adjudge.store.meaning_queue`,
:mod:`~adjudge.store.outbox` and :mod:`~adjudge.store.quality_windows`. ``metadata.tables`` is
the whole database once :mod:`adjudge.store` is imported; Alembic migrations (``migrations/``)
create and change every table, and a test holds the two equal.

Money columns are 64-bit integers of minor units; times are stored as naive UTC and read back as
aware UTC (SQLite keeps no time zone).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Sequence,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    and_,
    text,
)
from sqlalchemy.engine import Dialect


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime stored without a zone."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Refuse naive times; store UTC without the zone."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime; the store keeps aware UTC times only")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        """Read back as aware UTC."""
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC)


metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

accounts = Table(
    "accounts",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("roles", JSON, nullable=False),  # a list of poster / agent / verifier / admin
    Column("key_hash", String(71), nullable=False, unique=True),  # sha256:<hex> of the API key
    Column("verifier_opt_in", Boolean, nullable=False, default=False),
    Column("verifier_key", String(64), nullable=True),  # fingerprint of a verifier's public key
    Column("reputation", Integer, nullable=False),
    Column("disputes", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # How many extra keys and webhook endpoints the account ever made, revoked and deleted ones
    # too (each bounded): counted as each is made (revision 0061), where a new one counted all
    # of the account's rows, up to the bound's 10,000.
    Column("keys_made", Integer, nullable=False, server_default=text("0")),
    Column("endpoints_made", Integer, nullable=False, server_default=text("0")),
)

balances = Table(
    "balances",
    metadata,
    Column("account", String(160), primary_key=True),  # a ledger account name (wallet:…)
    Column("balance", BigInteger, nullable=False),
)

#: A row id the database counts out: 64 bits (revision 0049). PostgreSQL's ``integer`` (and the
#: sequence of a ``serial``) ends at 2^31 - 1, which the ledger's lines reach within weeks at a
#: billion calls a month, and then every payment fails; SQLite's row ids are 64-bit already,
#: and only ``INTEGER PRIMARY KEY`` is one.
ROW_ID = BigInteger().with_variant(Integer(), "sqlite")

ledger_entries = Table(
    "ledger_entries",
    metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("txn", String(64), nullable=False, index=True),  # both legs of a transfer share it
    Column("account", String(160), nullable=False),  # read by ix_ledger_entries_account_at
    Column("amount", BigInteger, nullable=False),  # signed: the debit leg is negative
    Column("task_id", String(64), nullable=True),  # a task's legs: ix_ledger_entries_task_id
    Column("memo", String(64), nullable=False),
    # The receipt whose determination released this money (legs out of a holding account).
    Column("receipt_id", String(64), nullable=True),
    Column("at", UTCDateTime, nullable=False),
)

tasks = Table(
    "tasks",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("version", Integer, nullable=False),  # optimistic concurrency: bumped on each change
    Column("poster", String(64), ForeignKey("accounts.id"), nullable=False),  # ix_tasks_poster
    Column("agent", String(64), ForeignKey("accounts.id"), nullable=True),  # ix_tasks_agent
    Column("verifier", String(64), ForeignKey("accounts.id"), nullable=True),  # ix_tasks_verifier
    Column("verifier_key", String(64), nullable=True),
    Column("mode", String(16), nullable=False),
    Column("status", String(32), nullable=False),  # read by (status, verifier)
    Column("reward", BigInteger, nullable=False),
    Column("title", String(200), nullable=False),
    Column("brief", Text, nullable=False),
    Column("criteria", JSON, nullable=False),
    Column("private", Boolean, nullable=False),
    Column("posted_at", UTCDateTime, nullable=False),
    Column("deadline", UTCDateTime, nullable=False),
    Column("accepted_at", UTCDateTime, nullable=True),
    Column("released", JSON, nullable=True),  # agents the poster released (a list)
    Column("attempts", Integer, nullable=False),
    Column("result_digest", String(71), nullable=True),
    Column("submitted_at", UTCDateTime, nullable=True),
    Column("failed_at", UTCDateTime, nullable=True),
    Column("escalated_at", UTCDateTime, nullable=True),
    Column("disputed_by", String(64), nullable=True),
    # An ungrounded agent review sent the submission to the poster for a manual decision.
    Column("routed", Boolean, nullable=False, server_default="0"),
    Column("ending", String(32), nullable=True),
    Column("closed_at", UTCDateTime, nullable=True),
    Column("take_window_hours", Integer, nullable=True),  # the poster's take window, if any
    # When the current take stops counting toward its agent's limit; the lapse sweep's index.
    Column("take_ends_at", UTCDateTime, nullable=True),  # ix_tasks_take_ends_at
    Column("lapsed", JSON, nullable=True),  # agents whose take lapsed (a list)
    # Sealed criteria: the commitment made at posting (written once, never updated), the reveal
    # that opened it, when the reveal is due (the overdue sweep's index), and why a seal broke.
    Column("seal", String(71), nullable=True),
    Column("reveal", JSON, nullable=True),
    Column("reveal_due_at", UTCDateTime, nullable=True),  # ix_tasks_reveal_due_at
    Column("seal_broken", Text, nullable=True),
    # The secret the receipts' criteria digest is salted with when the public criteria hold an
    # expected answer (written once, at posting; revision 0045).
    Column("criteria_salt", String(64), nullable=True),
    # A panel of verifiers (agent review, k of n): [[account, key fingerprint], …] as named at
    # posting, its quorum k, and the votes on the latest submission (at most one per verifier,
    # so at most 9: the tally reads them, never the history). Null for every other task.
    Column("panel", JSON, nullable=True),
    Column("quorum", Integer, nullable=True),
    Column("votes", JSON, nullable=True),
    # The upkeep's lapse or overdue reveal that failed on this task: how many times in a row,
    # and when it is tried again. Until then the task is out of the sweeps' due order (their
    # indexes hold only rows without a retry), so a row failing on every pass never holds the
    # rows due after it (revision 0056). Null: none failed.
    Column("sweep_failures", Integer, nullable=True),
    Column("sweep_retry_at", UTCDateTime, nullable=True),  # ix_tasks_sweep_retry_at
)

task_seats = Table(
    "task_seats",
    metadata,
    # Who sits on a task's panel, one row per verifier, written once at posting: a verifier's
    # own listing finds its panels by this index instead of reading every task's panel.
    Column("task_id", String(64), ForeignKey("tasks.id"), primary_key=True),
    Column("verifier", String(64), primary_key=True),
    # The task's posted time (it never changes): a verifier's seats in its listing's order.
    Column("posted_at", UTCDateTime, nullable=False),
)
Index(
    "ix_task_seats_verifier_newest",
    task_seats.c.verifier,
    task_seats.c.posted_at.desc(),
    task_seats.c.task_id,
)

task_votes = Table(
    "task_votes",
    metadata,
    # Every panel verifier's vote, one per verifier per submission (the unique key refuses a
    # second), kept for the record after the task's row moves on to a new submission.
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("task_id", String(64), ForeignKey("tasks.id"), nullable=False),  # the key leads
    Column("attempt", Integer, nullable=False),
    Column("verifier", String(64), nullable=False),
    Column("verifier_key", String(64), nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("verdict", String(16), nullable=False),  # the vote's kernel verdict
    Column("check", JSON, nullable=False),  # the vote's kernel check, as signed into receipts
    Column("signed", JSON, nullable=True),  # the vote's verified signature (a replay's input)
    Column("at", UTCDateTime, nullable=False),
    UniqueConstraint("task_id", "attempt", "verifier", name="uq_task_votes_vote"),
)

agent_takes = Table(
    "agent_takes",
    metadata,
    # One row per agent that ever took a task: how many it holds taken and not yet submitted,
    # kept by each take's start and end in their own transactions (never a recount).
    Column("agent", String(64), ForeignKey("accounts.id"), primary_key=True),
    Column("held", Integer, nullable=False),
)

held_days = Table(
    "held_days",
    metadata,
    # The money held under each holding prefix of the ledger (escrow:, hold:, held:) at the end
    # of each UTC day that moved some, in minor units of its currency: kept by every transfer in
    # its own transaction (adjudge.store.held_days), so the dashboards never sum the balances.
    Column("prefix", String(16), primary_key=True),
    Column("currency", String(16), primary_key=True),
    # The receipt log's lane of the transactions that wrote it: a day's figure is its lanes' sum.
    Column("lane", Integer, primary_key=True, autoincrement=False),
    Column("day", String(10), primary_key=True),  # YYYY-MM-DD, UTC
    Column("held", BigInteger, nullable=False),
)

day_counts = Table(
    "day_counts",
    metadata,
    # What the dashboards count each UTC day (calls by verdict, task verdicts, money flows,
    # failing checks and rules) and a poster's tasks by state (day ""): kept by the transactions
    # that make them (adjudge.store.day_counts), so a dashboard reads days, not rows.
    Column("family", String(16), primary_key=True),
    Column("subject", String(200), primary_key=True),  # a provider or poster; "" for everyone
    Column("day", String(10), primary_key=True),  # YYYY-MM-DD, UTC; "" for all time
    Column("name", String(200), primary_key=True),
    # The receipt log's lane of the transactions that wrote it: a count is its lanes' sum.
    Column("lane", Integer, primary_key=True, autoincrement=False),
    # The count is high * 2^32 + n, 0 <= n < 2^32 (revision 0048): a count of money grows with
    # every transfer for all time, past any one 64-bit column (adjudge.store.day_counts).
    Column("n", BigInteger, nullable=False),
    Column("high", BigInteger, nullable=False, server_default=text("0")),
)

task_lapses = Table(
    "task_lapses",
    metadata,
    # A take whose window ended with nothing submitted: the task's record of it.
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("task_id", String(64), ForeignKey("tasks.id"), nullable=False, index=True),
    Column("agent", String(64), nullable=False),
    Column("taken_at", UTCDateTime, nullable=False),
    Column("at", UTCDateTime, nullable=False),  # when the window ended
)

submissions = Table(
    "submissions",
    metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("task_id", String(64), ForeignKey("tasks.id"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("result", Text, nullable=False),
    Column("digest", String(71), nullable=False),
    Column("submitted_at", UTCDateTime, nullable=False),
    UniqueConstraint("task_id", "attempt"),
)

verdicts = Table(
    "verdicts",
    metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("task_id", String(64), ForeignKey("tasks.id"), nullable=False),  # the key leads
    Column("attempt", Integer, nullable=False),
    Column("kind", String(16), nullable=False),  # verdict | ruling | routed
    Column("passed", Boolean, nullable=True),  # null: routed to the poster, nothing decided
    Column("score", Integer, nullable=True),
    Column("reasons", JSON, nullable=False),
    Column("authority", String(32), nullable=False),
    Column("judge", String(64), nullable=False),
    Column("detail", JSON, nullable=False),
    Column("receipt_id", String(64), nullable=False),
    Column("at", UTCDateTime, nullable=False),
    # At most one verdict per submission and one ruling per attempt, whatever races.
    UniqueConstraint("task_id", "attempt", "kind"),
)

#: A receipt's position in the order the log was written, on PostgreSQL (SQLite, one lane and
#: one writer, writes the lane's sequence).
receipt_positions = Sequence("receipt_positions", metadata=metadata)

receipts = Table(
    "receipts",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("lane", Integer, nullable=False, server_default="0"),  # its hash chain
    Column("seq", Integer, nullable=False),  # from 1 on its lane: its signed sequence + 1
    Column("position", BigInteger, receipt_positions, nullable=False, unique=True),
    Column("task_id", String(64), nullable=True),  # a task's receipts: ix_receipts_task_id
    Column("digest", String(160), nullable=False, unique=True),
    Column("previous", String(160), nullable=True),
    Column("body", JSON, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    UniqueConstraint("lane", "seq"),
)

chain_lanes = Table(
    "chain_lanes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),  # the lane, from 0
    Column("seq", Integer, nullable=False),  # how many receipts it holds
    Column("digest", String(160), nullable=True),  # its last receipt's (None when empty)
)

idempotency = Table(
    "idempotency",
    metadata,
    Column("account_id", String(64), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("fingerprint", String(71), nullable=False),  # method, path and body of the request
    Column("status_code", Integer, nullable=False),
    Column("body", JSON, nullable=False),
    Column("at", UTCDateTime, nullable=False),
)
# The upkeep's pruning of answers past their retention reads the oldest (revision 0053).
Index("ix_idempotency_at", idempotency.c.at)

review_leases = Table(
    "review_leases",
    metadata,
    # One row per submission a verifier's worker has tried to judge, for each verifier (a
    # panel's verifiers each lease a submission for themselves).
    Column("task_id", String(64), ForeignKey("tasks.id"), primary_key=True),
    Column("attempt", Integer, primary_key=True),
    Column("verifier", String(64), primary_key=True),
    Column("tries", Integer, nullable=False),  # failed model calls so far
    Column("locked_until", UTCDateTime, nullable=False),  # no other worker takes it before
    Column("gave_up", Boolean, nullable=False),  # after 5 failures: delivered, never judged
    Column("last_error", String(500), nullable=True),
    # The lease in force (revision 0059): a fresh random token per claim, which the worker's
    # failure report names; None once that report ended it (and on leases taken before 0059).
    Column("token", String(64), nullable=True),
)

review_queue = Table(
    "review_queue",
    metadata,
    # The submissions waiting for each verifier (revision 0051): a row for the named verifier
    # and each panel seat when a submission comes to await verification, gone when the
    # verifier votes, its worker gives up, or the task moves on. A worker's claim reads its
    # verifier's rows, not every task awaiting verification (every verifier's).
    Column("task_id", String(64), ForeignKey("tasks.id"), primary_key=True),  # the key leads
    Column("verifier", String(64), primary_key=True),
    Column("attempt", Integer, nullable=False),
    Column("submitted_at", UTCDateTime, nullable=False),
)
Index(
    "ix_review_queue_verifier_oldest",
    review_queue.c.verifier,
    review_queue.c.submitted_at,
    review_queue.c.task_id,
)

disputes = Table(
    "disputes",
    metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("task_id", String(64), ForeignKey("tasks.id"), nullable=False, index=True),
    Column("attempt", Integer, nullable=False),  # the round it concerns
    Column("by", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("at", UTCDateTime, nullable=False),
)

verifier_keys = Table(
    "verifier_keys",
    metadata,
    Column("fingerprint", String(64), primary_key=True),  # sha256 hex of the raw public key
    Column("account_id", String(64), ForeignKey("accounts.id"), nullable=False, index=True),
    # Standard base64 of the raw 32-byte key; null only for keys registered before keys were
    # kept whole (their verdicts carry the key, checked against the fingerprint).
    Column("public_key", String(64), nullable=True),
    Column("added_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime, nullable=True),
)

quotas = Table(
    "quotas",
    metadata,
    Column("scope", String(200), primary_key=True),  # e.g. dry-run:<task>:<account>
    Column("window", UTCDateTime, primary_key=True),  # the start of the counting window
    Column("used", Integer, nullable=False),
    # The upkeep forgets windows long ended, oldest first (:func:`adjudge.store.quotas.prune`).
    Index("ix_quotas_window", "window"),
)

Index("ix_tasks_status_verifier", tasks.c.status, tasks.c.verifier)
Index("ix_tasks_posted", tasks.c.posted_at, tasks.c.id)
# The task listings filtered by a status, a poster or an agent (adjudge.store.records.tasks),
# each in the listing's order, newest first: a page walks one index range, however many tasks
# the filter holds (sorted for each page before, it cost all of them). The poster's and the
# agent's also serve every read by poster or by agent.
for _column in (tasks.c.status, tasks.c.poster, tasks.c.agent):
    Index(f"ix_tasks_{_column.name}_newest", _column, tasks.c.posted_at.desc(), tasks.c.id)
# A task's named verifier and its deadlines, read by a value or a range of them: most tasks have
# none (an auto task, a take ended, a task not sealed), so only the rows with one are indexed,
# and a task's update need not write an entry in each (a finalize's: five, not eight). The named
# verifier's holds the posted time too, newest first: a verifier's own listing walks it in order.
Index(
    "ix_tasks_verifier_newest",
    tasks.c.verifier,
    tasks.c.posted_at.desc(),
    tasks.c.id,
    sqlite_where=tasks.c.verifier.is_not(None),
    postgresql_where=tasks.c.verifier.is_not(None),
)
# The sweeps' due orders hold no task waiting for a retry; the retries are an order of their own.
for _column in (tasks.c.take_ends_at, tasks.c.reveal_due_at):
    _due = and_(_column.is_not(None), tasks.c.sweep_retry_at.is_(None))
    Index(f"ix_tasks_{_column.name}", _column, sqlite_where=_due, postgresql_where=_due)
Index(
    "ix_tasks_sweep_retry_at",
    tasks.c.sweep_retry_at,
    sqlite_where=tasks.c.sweep_retry_at.is_not(None),
    postgresql_where=tasks.c.sweep_retry_at.is_not(None),
)
# The ledger page's reads, newest first within an account, a kind, or the whole ledger
# (adjudge.store.ledger.movements): a page walks one index range, however long the history.
_e = ledger_entries.c
Index("ix_ledger_entries_account_at", _e.account, _e.at, _e.id)
Index("ix_ledger_entries_memo_at", _e.memo, _e.at, _e.id)
Index("ix_ledger_entries_at", _e.at, _e.id)
# A task's legs and receipts, read by task: most rows of a busy ledger are paid calls', with no
# task, so only the rows with one are indexed (each row written pays for every index it is in).
Index(
    "ix_ledger_entries_task_id",
    _e.task_id,
    sqlite_where=_e.task_id.is_not(None),
    postgresql_where=_e.task_id.is_not(None),
)
Index(
    "ix_receipts_task_id",
    receipts.c.task_id,
    sqlite_where=receipts.c.task_id.is_not(None),
    postgresql_where=receipts.c.task_id.is_not(None),
)
# The dashboards' window of verdicts (adjudge.store.console).
Index("ix_verdicts_at", verdicts.c.at)
# The verifiers' list (GET /verifiers), a page at a time by id: only the accounts that take jobs.
Index(
    "ix_accounts_verifiers",
    accounts.c.id,
    sqlite_where=accounts.c.verifier_opt_in.is_(True),
    postgresql_where=accounts.c.verifier_opt_in.is_(True),
)
