"""The store on SQLite and PostgreSQL: schema, optimistic locking, the ledger, the chain."""

from __future__ import annotations

import importlib
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import PrimaryKeyConstraint, Table, UniqueConstraint, select, text

from adjudge import Error
from adjudge.market import WORLD, Mode, Task, Transfer, VerdictReached, wallet_account
from adjudge.market.tasks import Seat
from adjudge.store import (
    ConcurrentUpdate,
    Store,
    Submission,
    Transaction,
    calls,
    database,
    day_counts,
    gateway,
    holds,
    idempotency,
    ledger,
    meaning_queue,
    outbox,
    receipt_log,
    records,
    schema,
    takes,
)
from adjudge.store.ledger import UnprovenRelease
from adjudge.store.schema import metadata, tasks
from support.counts import recount
from support.fakes import FakeIssuer
from support.migrations import downgrade
from support.plans import sqlite_plans
from support.rows import pending_call

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _manual(task_id: str, poster: str, at: datetime, *, reward: int = 1, **fields: Any) -> Task:
    """A manual task posted at ``at``, due a day later."""
    return Task(
        id=task_id,
        poster=poster,
        mode=Mode.MANUAL,
        reward=reward,
        posted_at=at,
        deadline=at + timedelta(days=1),
        criteria=fields.pop("criteria", {}),
        **fields,
    )


def _seed(store: Store) -> Task:
    task = _manual("t1", "p", T0, reward=100, criteria={"min_length": 10})
    with store.write() as tx:
        for name in ("p", "a"):
            records.create_account(
                tx, name, ["poster", "agent"], f"key-{name}", opt_in=False, at=T0
            )
        ledger.transfer(tx, [Transfer(WORLD, wallet_account("p"), 1000)], task_id=None, at=T0)
        records.insert_task(tx, task, title="A task", brief="Do it.")
    return task


def test_migrations_match_the_tables(store: Store) -> None:
    """After migrating, the database has exactly the declared tables; migrating again is a no-op."""
    store.migrate()
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == []


def test_the_schema_says_where_every_table_is_defined() -> None:
    """Every table is on the one metadata, and ``schema``'s docstring names each store module
    that defines tables of its own (so what it says of the tables stays true)."""
    import adjudge.store as package  # noqa: PLC0415

    homes = set()
    for path in sorted(Path(package.__file__).parent.glob("*.py")):
        module = importlib.import_module(f"adjudge.store.{path.stem}")
        tables = [v for v in vars(module).values() if isinstance(v, Table)]
        assert all(t.metadata is metadata for t in tables), path.stem
        if tables and path.stem != "schema":
            homes.add(path.stem)
    doc = schema.__doc__ or ""
    assert homes and all(f"adjudge.store.{home}`" in doc for home in homes), homes


def test_task_round_trip_and_optimistic_lock(store: Store) -> None:
    """A task reads back equal; an update from a stale version is refused."""
    task = _seed(store)
    with store.read() as tx:
        stored = records.task(tx, "t1")
    assert stored is not None and stored.task == task and stored.version == 1
    with store.write() as tx:
        records.update_task(tx, stored, task)
    with pytest.raises(ConcurrentUpdate), store.write() as tx:
        records.update_task(tx, stored, task)


def test_hot_path_stores_what_sqlalchemy_would(store: Store) -> None:
    """A task written on the driver reads back equal through SQLAlchemy's column types, and
    the reverse: times with and without microseconds, JSON, booleans, NULLs."""
    task = _seed(store)
    changed = replace(
        task,
        criteria={"min_length": 3, "contains_keywords": ["é", "x"], "nested": {"a": [1, None]}},
        private=True,
        deadline=T0 + timedelta(days=2, microseconds=7),
        submitted_at=T0 + timedelta(hours=1),
        result_digest="sha256:00",
    )
    with store.write() as tx:
        stored = records.task(tx, "t1")
        assert stored is not None
        records.update_task(tx, stored, changed)
    with store.read() as tx:
        row = tx.conn.execute(select(tasks).where(tasks.c.id == "t1")).one()._mapping
        assert row["criteria"] == changed.criteria and row["private"] is True
        assert row["deadline"] == changed.deadline and row["submitted_at"] == changed.submitted_at
        assert row["failed_at"] is None
        again = records.task(tx, "t1")
    assert again is not None and again.task == changed and again.version == 2


def test_json_columns_read_back_as_json_reads_them(store: Store) -> None:
    """Read by orjson where it gives what json gives, by json elsewhere: an integer past 64 bits
    (orjson alone reads a float), and on SQLite a NaN and a lone surrogate (PostgreSQL's json
    refuses both), on the hot path and through SQLAlchemy alike (checked to fail with orjson
    alone)."""
    task = _seed(store)
    documents: list[dict[str, Any]] = [{"big": 2**70, "near": -(2**63) - 1, "ok": [1.5]}]
    if store.dialect == "sqlite":
        documents.append({"nan": float("nan"), "lone": "\ud800", "big": 2**70})
    for document in documents:
        with store.write() as tx:
            stored = records.task(tx, "t1")
            assert stored is not None
            records.update_task(tx, stored, replace(task, criteria=document))
        with store.read() as tx:
            hot = records.task(tx, "t1")
            row = tx.conn.execute(select(tasks.c.criteria).where(tasks.c.id == "t1")).one()
        assert hot is not None
        for read in (hot.task.criteria, row.criteria):
            assert repr(read) == repr(document)  # repr: 2**70 is not its float, NaN is NaN


def test_an_update_sets_what_changed_even_to_an_equal_value_of_another_type(
    store: Store,
) -> None:
    """An update sets only the columns that changed, and a value equal to the old but of
    another type, at any depth (``1`` → ``1.0``, ``0`` → ``False``), counts as changed: its
    stored form differs. A column the update leaves alone keeps what the row holds."""
    task = _seed(store)
    with store.write() as tx:
        stored = records.task(tx, "t1")
        assert stored is not None
        first = replace(task, criteria={"min_length": 1, "nested": {"a": [0]}})
        stored = records.update_task(tx, stored, first)
        again = replace(first, criteria={"min_length": 1.0, "nested": {"a": [False]}})
        stored = records.update_task(tx, stored, again)
        tx.conn.execute(tasks.update().where(tasks.c.id == "t1").values(title="kept"))
        records.update_task(tx, stored, replace(again, private=True))
    with store.read() as tx:
        row = tx.conn.execute(select(tasks).where(tasks.c.id == "t1")).one()._mapping
        loaded = records.task(tx, "t1")
    assert row["criteria"] == {"min_length": 1.0, "nested": {"a": [False]}}
    assert type(row["criteria"]["min_length"]) is float
    assert row["criteria"]["nested"]["a"][0] is False
    assert row["private"] is True and row["title"] == "kept" and row["version"] == 4
    assert loaded is not None and loaded.task == replace(again, private=True)


def test_a_task_s_submissions_are_known_once_the_transaction_read_each(store: Store) -> None:
    """The submissions a transaction has read stand for the list only when they are all of
    them (1 to the task's attempts); a missing one means the list is read."""
    _seed(store)
    with store.write() as tx:
        for attempt in (1, 2):
            records.add_submission(tx, Submission("t1", attempt, f"r{attempt}", "sha256:0", T0))
    with store.read() as tx:
        assert records.known_submissions(tx, "t1", 0) == []
        latest = records.latest_submission(tx, "t1")
        assert latest is not None and latest.attempt == 2
        assert records.known_submissions(tx, "t1", 2) is None  # the first was not read
        assert records.submission(tx, "t1", 1) is not None
        known = records.known_submissions(tx, "t1", 2)
        assert known == records.submissions(tx, "t1")
        assert [s.result for s in known or []] == ["r1", "r2"]


def test_ledger_is_double_entry_and_all_or_nothing(store: Store) -> None:
    """Every transfer writes two legs; an overdraft rolls the whole transaction back."""
    _seed(store)
    with pytest.raises(Error) as err, store.write() as tx:
        fund = [Transfer(wallet_account("p"), "escrow:t1", 600)]
        ledger.transfer(tx, fund, task_id="t1", at=T0)
        ledger.transfer(tx, fund, task_id="t1", at=T0)
    assert err.value.code == "INSUFFICIENT_FUNDS"
    assert "too little to move 0.0006 USDC" in err.value.message  # as a person reads it
    with store.read() as tx:
        assert ledger.balance(tx, wallet_account("p")) == 1000
        assert ledger.entries(tx, "t1") == []
        assert ledger.total(tx) == (0, 0)


def test_receipts_chain(store: Store) -> None:
    """Each receipt names the digest of the one before it; the head is the last one. Appended
    receipts are chained as the transaction commits, in the order they were appended, and the
    log keeps that order (on PostgreSQL the rows go as one statement: their positions follow
    its rows' order)."""
    _seed(store)
    with store.write() as tx:
        appended = [
            receipt_log.append(
                tx, lambda prev, n=n: FakeIssuer.chained({"n": n}, prev), task_id="t1", at=T0
            )
            for n in range(5)
        ]
        assert {r.id for r in appended} <= tx.appended  # money may move against them at once
        assert tx.flushed == {}  # the head is not locked yet
    stored = [tx.flushed[r.id] for r in appended]
    assert stored[0].previous is None
    assert [r.previous for r in stored[1:]] == [r.digest for r in stored[:-1]]
    with store.read() as tx:
        assert receipt_log.head(tx) == (5, stored[-1].digest)
        assert [r.id for r in receipt_log.receipts(tx, "t1")] == [r.id for r in appended]


def test_one_verdict_per_submission(store: Store) -> None:
    """A second verdict on the same attempt is refused by the database itself."""
    _seed(store)
    v = VerdictReached("t1", 1, True, 100, (), "human", "p", None, T0)
    with store.write() as tx:
        records.add_verdict(tx, v, "r1", poster="p")
    with pytest.raises(ConcurrentUpdate), store.write() as tx:
        records.add_verdict(tx, v, "r2", poster="p")


def test_idempotency_key_stored_once(store: Store) -> None:
    """The same key cannot be stored twice; the first response is what is recalled."""
    _seed(store)
    with store.write() as tx:
        idempotency.remember(tx, account_id="p", key="k", fingerprint="f", answer={"n": 1}, at=T0)
    with pytest.raises(ConcurrentUpdate), store.write() as tx:
        idempotency.remember(tx, account_id="p", key="k", fingerprint="f", answer={"n": 2}, at=T0)
    with store.read() as tx:
        assert idempotency.recalled(tx, "p", "k") == ("f", {"n": 1})
        stored = tx.conn.exec_driver_sql("SELECT key FROM idempotency").scalar()
    assert stored != "k" and str(stored).startswith("sha256:")  # the key itself is never stored


def test_racing_spends_never_overdraw(store: Store) -> None:
    """Eight threads each try to spend 300 of 1000: at most three succeed, the rest are refused."""
    _seed(store)
    outcomes: list[str] = []
    lock = threading.Lock()

    def spend(i: int) -> None:
        for _ in range(50):
            try:
                with store.write() as tx:
                    ledger.transfer(
                        tx,
                        [Transfer(wallet_account("p"), f"escrow:x{i}", 300)],
                        task_id=None,
                        at=T0,
                    )
                result = "ok"
            except ConcurrentUpdate:
                continue
            except Error as exc:
                result = exc.code
            with lock:
                outcomes.append(result)
            return

    threads = [threading.Thread(target=spend, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("ok") == 3 and outcomes.count("INSUFFICIENT_FUNDS") == 5
    with store.read() as tx:
        assert ledger.balance(tx, wallet_account("p")) == 100
        assert ledger.total(tx) == (0, 0)


def test_sqlite_log_is_checkpointed_off_the_commit(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commits never checkpoint SQLite's log; after writes from several threads the
    checkpointer copies it to its end, the next writer starts it over, and dispose ends the
    checkpointer's thread."""
    monkeypatch.setattr(database, "CHECKPOINT_DELAY", 0.05)  # the test waits four of them
    _seed(sqlite_store)
    with sqlite_store.read() as tx:
        assert tx.conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0

    def spend(i: int) -> None:
        for _ in range(150):
            with sqlite_store.write() as tx:
                ledger.transfer(tx, [Transfer(WORLD, f"escrow:x{i}", 1)], task_id=None, at=T0)

    threads = [threading.Thread(target=spend, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(database.CHECKPOINT_DELAY * 4)
    with sqlite_store.write() as tx:  # starts the log over
        ledger.transfer(tx, [Transfer(WORLD, "escrow:last", 1)], task_id=None, at=T0)
    time.sleep(database.CHECKPOINT_DELAY * 4)
    raw = sqlite_store.engine.raw_connection()
    try:
        busy, log, copied = raw.driver_connection.execute(  # type: ignore[union-attr]
            "PRAGMA wal_checkpoint(PASSIVE)"
        ).fetchone()
    finally:
        raw.close()
    assert busy == 0 and log == copied and log < 100
    with sqlite_store.read() as tx:
        assert ledger.total(tx) == (0, 0) and ledger.balance(tx, "escrow:x3") == 150
    sqlite_store.dispose()  # ends the checkpointer's thread
    assert not [t for t in threading.enumerate() if t.name == "adjudge-wal-checkpoints"]


def test_a_closing_store_does_not_wait_out_the_checkpoints_delay(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpointer lets writes gather before it runs; a store closed meanwhile ends that
    wait at once and checkpoints, where the thread slept the delay through (the close gave up
    on it after 10 s)."""
    monkeypatch.setattr(database, "CHECKPOINT_DELAY", 60.0)
    _seed(sqlite_store)
    with sqlite_store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "escrow:x", 1)], task_id=None, at=T0)
    time.sleep(0.1)  # the thread is waiting out the delay
    sqlite_store.dispose()
    assert not [t for t in threading.enumerate() if t.name == "adjudge-wal-checkpoints"]


def test_escrow_is_released_only_against_a_receipt_of_the_same_transaction(store: Store) -> None:
    """Money leaves an escrow only with a receipt appended in the same transaction, and each leg
    names it; no receipt, another transaction's receipt, or a made-up id moves nothing."""
    _seed(store)
    fund = [Transfer(wallet_account("p"), "escrow:t1", 100, "fund")]
    payout = [Transfer("escrow:t1", wallet_account("a"), 100, "payout")]
    with store.write() as tx:
        ledger.transfer(tx, fund, task_id="t1", at=T0)
        earlier = receipt_log.append(
            tx, lambda prev: FakeIssuer.chained({"n": 1}, prev), task_id="t1", at=T0
        )
    for receipt_id in (None, earlier.id, "rcpt_made_up"):
        with pytest.raises(UnprovenRelease), store.write() as tx:
            ledger.transfer(tx, payout, task_id="t1", at=T0, receipt_id=receipt_id)
    with store.write() as tx:
        receipt = receipt_log.append(
            tx, lambda prev: FakeIssuer.chained({"n": 2}, prev), task_id="t1", at=T0
        )
        ledger.transfer(tx, payout, task_id="t1", at=T0, receipt_id=receipt.id)
    with store.read() as tx:
        assert ledger.balance(tx, wallet_account("a")) == 100
        legs = [e for e in ledger.entries(tx, "t1") if e["memo"] == "payout"]
        assert {e["receipt_id"] for e in legs} == {receipt.id}
        assert ledger.total(tx) == (0, 0)


def test_a_busy_sqlite_file_is_a_lost_race(sqlite_store: Store) -> None:
    """When another process holds the file's write lock, a write (begun on the driver) is
    refused as ConcurrentUpdate, which callers retry, and writes again once it is free."""
    _seed(sqlite_store)
    sqlite_store.engine.dispose()
    with sqlite_store.engine.connect() as conn:  # the pool's one connection: stop waiting
        conn.connection.driver_connection.execute("PRAGMA busy_timeout = 0")  # type: ignore[union-attr]
    path = sqlite_store.engine.url.database
    assert path is not None
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(ConcurrentUpdate), sqlite_store.write() as tx:
            ledger.transfer(tx, [Transfer(WORLD, "escrow:x", 1)], task_id=None, at=T0)
        other.execute("ROLLBACK")
    finally:
        other.close()
    with sqlite_store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "escrow:x", 1)], task_id=None, at=T0)
    with sqlite_store.read() as tx:
        assert ledger.balance(tx, "escrow:x") == 1


def _account_p(conn: Any, at: dict[str, datetime]) -> None:
    """Account ``p``, written as a revision before the current schema holds it."""
    conn.execute(
        text(
            "INSERT INTO accounts (id, roles, key_hash, verifier_opt_in, reputation, "
            "disputes, created_at) VALUES ('p', '[]', 'sha256:p', false, 100, 0, :at)"
        ),
        at,
    )


def test_migration_0010_counts_the_takes_already_held(store: Store) -> None:
    """Upgrading a database with tasks already taken starts each agent's counter of held
    takes from them (each counting until its deadline), so the counter equals a recount from
    the first take after the upgrade; 0010 also downgrades cleanly."""
    downgrade(store, "0009")
    posted = {"posted": T0.replace(tzinfo=None), "deadline": T0.replace(tzinfo=None)}
    with store.engine.begin() as conn:
        for name in ("p", "a", "b"):
            conn.execute(
                text(
                    "INSERT INTO accounts (id, roles, key_hash, verifier_opt_in, reputation, "
                    "disputes, created_at) VALUES (:id, '[]', :kh, false, 100, 0, :at)"
                ),
                {"id": name, "kh": f"sha256:{name}", "at": posted["posted"]},
            )
        for i, (agent, status) in enumerate(
            [
                ("a", "assigned"),
                ("a", "assigned"),
                ("a", "submitted"),
                ("b", "assigned"),
                (None, "funded"),
            ]
        ):
            conn.execute(
                text(
                    "INSERT INTO tasks (id, version, poster, agent, mode, status, reward, title, "
                    "brief, criteria, private, posted_at, deadline, attempts, routed) VALUES "
                    "(:id, 1, 'p', :agent, 'manual', :status, 1, 't', '', '{}', false, :posted, "
                    ":deadline, 0, false)"
                ),
                {"id": f"t{i}", "agent": agent, "status": status, **posted},
            )
    store.migrate()
    with store.read() as tx:
        assert takes.counted(tx) == takes.recount(tx) == {"a": 2, "b": 1}
        stored = records.task(tx, "t0")
        assert stored is not None and stored.task.take_ends_at == stored.task.deadline
        assert records.task(tx, "t2").task.take_ends_at is None  # type: ignore[union-attr]


def test_migration_0024_asks_the_keys_of_the_calls_already_pending(store: Store) -> None:
    """Upgrading a database with calls pending a judgment after their answer asks each one's
    named keys (its policy's ``key:`` judges, not its models), less the keys that already
    signed; a call already judged asks nobody. 0024 also downgrades cleanly."""
    downgrade(store, "0023")
    at = T0.replace(tzinfo=None)
    judges = '{"meaning": {"sample_rate": 1, "judges": ["key:b", "model:m", "key:a"]}}'
    with store.engine.begin() as conn:
        _account_p(conn, {"at": at})
        conn.execute(
            text(
                "INSERT INTO call_policies (policy_id, version, tool, contract_version, "
                "document, digest, registered_by, registered_at) VALUES "
                "('pol', 1, 'tool', '1', :doc, 'sha256:pol', 'p', :at)"
            ),
            {"doc": judges, "at": at},
        )
        for call, state in (("c1", "pending"), ("c2", "judged"), ("c3", "pending")):
            conn.execute(
                text(
                    "INSERT INTO meaning_queue (call_id, provider, policy_digest, "
                    "response_digest, receipt_id, state, queued_at, attempts) VALUES "
                    "(:call, 'prov', 'sha256:pol', 'sha256:r', 'rcpt', :state, :at, 0)"
                ),
                {"call": call, "state": state, "at": at},
            )
        conn.execute(
            text(
                "INSERT INTO meaning_key_judgments (call_id, judge, conflict, reason, citations, "
                "signature, public_key, at) VALUES ('c3', 'key:b', false, '', '[]', 's', 'k', :at)"
            ),
            {"at": at},
        )
    store.migrate()
    with store.read() as tx:
        asked = tx.conn.execute(select(meaning_queue.asks)).all()
        assert sorted((r.call_id, r.judge, r.queued_at) for r in asked) == [
            ("c1", "key:a", T0),
            ("c1", "key:b", T0),
            ("c3", "key:a", T0),
        ]
        assert [(q.call_id, key) for q, key in meaning_queue.asked_of(tx, ["key:a"], limit=5)] == [
            ("c1", "key:a"),
            ("c3", "key:a"),
        ]
    downgrade(store, "0023")
    store.migrate()


def test_migration_0060_marks_the_holds_of_the_judgments_pending(store: Store) -> None:
    """Upgrading marks each held charge whose call's judgment is pending with when it was
    queued (one judged, or never queued, is marked by none), so the due order, which no longer
    asks the queue, still passes it over; 0060 also downgrades cleanly."""
    downgrade(store, "0059")
    at = T0.replace(tzinfo=None)
    with store.engine.begin() as conn:
        for call in ("c1", "c2", "c3"):
            conn.execute(
                text(
                    "INSERT INTO provider_holds (call_id, provider, caller, amount, receipt_id, "
                    "matures_at, state) VALUES (:call, 'prov', 'ann', 5, 'rcpt', :at, 'held')"
                ),
                {"call": call, "at": at},
            )
        for call, state in (("c1", "pending"), ("c2", "judged")):
            conn.execute(
                text(
                    "INSERT INTO meaning_queue (call_id, provider, policy_digest, "
                    "response_digest, receipt_id, state, queued_at, attempts) VALUES "
                    "(:call, 'prov', 'sha256:pol', 'sha256:r', 'rcpt', :state, :at, 0)"
                ),
                {"call": call, "state": state, "at": at},
            )
    store.migrate()
    h = holds.provider_holds.c
    with store.read() as tx:
        marks = dict(tx.conn.execute(select(h.call_id, h.judgment_queued_at)).tuples().all())
        assert marks == {"c1": T0, "c2": None, "c3": None}
        assert [d.call_id for d in holds.due(tx, T0 + timedelta(days=1))] == ["c2", "c3"]
    downgrade(store, "0059")
    store.migrate()


def test_migration_0025_takes_the_final_verdicts_already_judged(store: Store) -> None:
    """Upgrading takes each call judged after its answer's final verdict from its gateway call
    (a call never judged again keeps none) and drops the running windows, which the next call
    rebuilds by one recount; 0025 also downgrades cleanly."""
    downgrade(store, "0024")
    at = {"at": T0.replace(tzinfo=None)}
    with store.engine.begin() as conn:
        _account_p(conn, at)
        for call, state in (("c1", "judged"), ("c2", "pending")):
            ids = {"id": call, "state": state, **at}
            conn.execute(
                text(
                    "INSERT INTO call_records (id, provider, tool, contract_version, "
                    "submitted_by, source, at, verdict, enforced, record, request, response) "
                    "VALUES (:id, 'prov', 't', '1', 'p', 'gateway', :at, 'DEGRADED', true, "
                    "'{}', '{}', '{}')"
                ),
                ids,
            )
            conn.execute(
                text(
                    "INSERT INTO gateway_calls (id, caller, tool, tool_version, provider, "
                    "price_minor, currency, fingerprint, state, started_at, verdict) VALUES "
                    "(:id, 'p', 't', 1, 'prov', 1, 'USDC', 'f', 'done', :at, 'FAIL')"
                ),
                ids,
            )
            conn.execute(
                text(
                    "INSERT INTO meaning_queue (call_id, provider, policy_digest, "
                    "response_digest, receipt_id, state, queued_at, attempts) VALUES "
                    "(:id, 'prov', 'sha256:pol', 'sha256:r', 'rcpt', :state, :at, 0)"
                ),
                ids,
            )
        conn.execute(
            text(
                "INSERT INTO quality_windows (provider, span_seconds, edge, passes, fails, "
                "not_counted, request_errors, system_errors) VALUES "
                "('prov', 60, :at, 0, 0, 2, 0, 0)"
            ),
            at,
        )
    store.migrate()
    with store.read() as tx:
        final = dict(tx.conn.execute(text("SELECT id, final_verdict FROM call_records")).all())
        assert final == {"c1": "FAIL", "c2": None}
        assert tx.conn.execute(text("SELECT COUNT(*) FROM quality_windows")).scalar() == 0
    downgrade(store, "0024")
    store.migrate()


def test_migration_0055_counts_the_quality_days_without_a_providers_own_calls(
    store: Store,
) -> None:
    """Upgrading counts each provider's observed calls by day again without its own calls of
    its tool (a pass it made of its own tool was counted) and drops the running windows, which
    the next call rebuilds from those counts; downgrading counts its own calls again."""
    downgrade(store, "0054")
    at = {"at": T0.replace(tzinfo=None)}
    with store.engine.begin() as conn:
        _account_p(conn, at)
        conn.execute(
            text(
                "INSERT INTO accounts (id, roles, key_hash, verifier_opt_in, reputation, "
                "disputes, created_at) VALUES ('c', '[]', 'sha256:c', false, 100, 0, :at)"
            ),
            at,
        )
        for call, by, source, verdict in (
            ("own", "p", "gateway", "PASS"),
            ("theirs", "c", "gateway", "FAIL"),
            ("told", "c", "reported", "PASS"),
        ):
            conn.execute(
                text(
                    "INSERT INTO call_records (id, provider, tool, contract_version, "
                    "submitted_by, source, at, verdict, enforced, record, request, response) "
                    "VALUES (:id, 'p', 't', '1', :by, :source, :at, :verdict, true, '{}', "
                    "'{}', '{}')"
                ),
                {"id": call, "by": by, "source": source, "verdict": verdict, **at},
            )
        for name, lane in (("passes", 0), ("fails", 3)):
            conn.execute(
                text(
                    "INSERT INTO day_counts (family, subject, day, name, lane, n, high) VALUES "
                    "('quality', 'p', '2026-01-01', :name, :lane, 1, 0)"
                ),
                {"name": name, "lane": lane},
            )
        conn.execute(
            text(
                "INSERT INTO quality_windows (provider, span_seconds, edge, passes, fails, "
                "not_counted, request_errors, system_errors) VALUES "
                "('p', 60, :at, 1, 1, 0, 0, 0)"
            ),
            at,
        )

    def quality() -> dict[str, int]:
        with store.read() as tx:
            kept = day_counts.summed(tx, day_counts.QUALITY, ["p"], "2026-01-01", None)
            assert tx.conn.execute(text("SELECT COUNT(*) FROM quality_windows")).scalar() == 0
        return dict(kept)

    store.migrate()
    assert quality() == {"fails": 1}
    downgrade(store, "0054")
    assert quality() == {"passes": 1, "fails": 1}
    store.migrate()


#: Reads by a column whose own index revision 0027 dropped or narrowed, and the index each reads.
_READS_0027 = {
    "SELECT id FROM ledger_entries WHERE task_id = 't'": "ix_ledger_entries_task_id",
    "SELECT id FROM receipts WHERE task_id = 't'": "ix_receipts_task_id",
    "SELECT id FROM ledger_entries WHERE account = 'a'": "ix_ledger_entries_account_at",
    "SELECT id FROM gateway_calls WHERE caller = 'c'": None,  # its unique key, or 0039's
    "SELECT id FROM call_records WHERE provider = 'p'": "ix_call_records_provider_at",
}


def test_migration_0027_leaves_every_read_on_an_index(store: Store) -> None:
    """After 0027 drops the indexes another one leads and keeps the task indexes for rows with a
    task, each read by those columns still walks an index (SQLite's plan; PostgreSQL's depends on
    its statistics); 0027 also downgrades cleanly."""
    _read_on_indexes(store, "0026", _READS_0027)


def _read_on_indexes(store: Store, before: str, reads: Mapping[str, str | None]) -> None:
    """Migrate up from revision ``before``, then (on SQLite) find each read's plan searching
    the index named for it (None: an index, whichever)."""
    downgrade(store, before)
    store.migrate()
    if store.dialect != "sqlite":
        return
    with store.read() as tx:
        for sql, index in reads.items():
            plan = " ".join(row[-1] for row in tx.conn.execute(text(f"EXPLAIN QUERY PLAN {sql}")))
            named = [f"USING INDEX {index}", f"USING COVERING INDEX {index}"] if index else []
            found = any(n in plan for n in named) if index else " INDEX " in plan
            assert plan.startswith("SEARCH") and found, (sql, plan)


#: Reads by the columns whose own index revision 0033 dropped (each leads another index).
_READS_0033: dict[str, str | None] = {
    "SELECT id FROM tasks WHERE status = 's'": None,  # (status, verifier), or 0038's
    "SELECT id FROM verdicts WHERE task_id = 't'": None,  # SQLite's index of the unique key
    "SELECT id FROM task_votes WHERE task_id = 't'": None,
    "SELECT id FROM call_contracts WHERE tool = 't'": None,
    "SELECT id FROM call_policies WHERE tool = 't'": None,
}


def test_migration_0033_leaves_every_read_on_an_index(store: Store) -> None:
    """After 0033 drops the indexes another one leads, each read by those columns still
    searches an index (SQLite's plan; PostgreSQL's depends on its statistics); 0033 also
    downgrades cleanly."""
    _read_on_indexes(store, "0032", _READS_0033)


#: Reads of tasks by a column revision 0034 indexes only where it has a value, and its index.
_READS_0034 = {
    "SELECT id FROM tasks WHERE verifier = 'v'": "ix_tasks_verifier_newest",  # 0040's
    # No retry pending: as 0056 narrowed these indexes, and the sweeps read them.
    "SELECT id FROM tasks WHERE take_ends_at <= '2026-01-01' AND sweep_retry_at IS NULL "
    "ORDER BY take_ends_at, id": "ix_tasks_take_ends_at",
    "SELECT id FROM tasks WHERE reveal_due_at <= '2026-01-01' AND sweep_retry_at IS NULL "
    "ORDER BY reveal_due_at, id": "ix_tasks_reveal_due_at",
}


def test_migration_0034_leaves_every_read_of_those_columns_on_its_index(store: Store) -> None:
    """After 0034 keeps a task's verifier and deadlines indexed only where it has one, a read
    by a value or a range of one still walks that index (SQLite takes the comparison to imply
    the column is not null); 0034 also downgrades cleanly."""
    _read_on_indexes(store, "0033", _READS_0034)


#: The task listings revision 0038 indexes in their order, and the index each walks.
_READS_0038 = {
    f"SELECT id FROM tasks WHERE {column} = 'x' ORDER BY posted_at DESC, id LIMIT 51": (
        f"ix_tasks_{column}_newest"
    )
    for column in ("status", "poster", "agent")
}


def test_migration_0038_walks_each_filtered_listing_in_its_order(store: Store) -> None:
    """After 0038, a page of tasks by status, poster or agent walks that filter's index in the
    listing's order, newest first, and sorts nothing (SQLite's plan: before, it searched the
    column's index and sorted every task it held in a temporary tree); 0038 also downgrades
    cleanly."""
    _read_on_indexes(store, "0037", _READS_0038)
    if store.dialect == "sqlite":
        with store.read() as tx:
            for sql in _READS_0038:
                plan = [row[-1] for row in tx.conn.execute(text(f"EXPLAIN QUERY PLAN {sql}"))]
                assert not any("TEMP B-TREE" in step for step in plan), (sql, plan)


_NEWEST = "ORDER BY started_at DESC, id LIMIT 51"
#: The listings of paid calls revision 0039 indexes in their order, and the index each walks.
_READS_0039 = {
    **{
        f"SELECT id FROM gateway_calls WHERE {column} = 'x' {_NEWEST}": (
            f"ix_gateway_calls_{column}_newest"
        )
        for column in ("caller", "provider", "tool")
    },
    f"SELECT id FROM gateway_calls {_NEWEST}": "ix_gateway_calls_newest",
}


def test_migration_0039_walks_each_call_listing_in_its_order(store: Store) -> None:
    """After 0039, a page of calls (all, a caller's, a provider's, a tool's) walks its index in
    the listing's order and sorts nothing, and the search for calls left pending reads only
    the pending ones' index (SQLite's plans: before, a page searched the column's index and
    sorted every call it held, or read the calls in time order to filter them, and the search
    walked every call before its cutoff); 0039 also downgrades cleanly."""
    downgrade(store, "0038")
    store.migrate()
    if store.dialect != "sqlite":
        return
    with store.read() as tx:
        for sql, index in _READS_0039.items():
            plan = [row[-1] for row in tx.conn.execute(text(f"EXPLAIN QUERY PLAN {sql}"))]
            assert any(
                step.endswith(f"INDEX {index}") or f"INDEX {index} " in step for step in plan
            ), (
                sql,
                plan,
            )
            assert not any("TEMP B-TREE" in step for step in plan), (sql, plan)
    [(_, plan)] = sqlite_plans(store, lambda tx: gateway.pending_before(tx, datetime.now(UTC)))
    assert plan == ["SEARCH gateway_calls USING INDEX ix_gateway_calls_pending (started_at<?)"]


#: The listings revision 0040 indexes in their order, and the index each walks.
_READS_0040 = {
    "SELECT call_id FROM call_reports WHERE status = 'x' ORDER BY filed_at, call_id LIMIT 51": (
        "ix_call_reports_status_filed"
    ),
    "SELECT id FROM tasks WHERE verifier = 'x' ORDER BY posted_at DESC, id LIMIT 51": (
        "ix_tasks_verifier_newest"
    ),
    "SELECT task_id FROM task_seats WHERE verifier = 'x' ORDER BY posted_at DESC, task_id "
    "LIMIT 51": "ix_task_seats_verifier_newest",
}


def test_migration_0040_walks_the_remaining_listings_in_their_order(store: Store) -> None:
    """After 0040, a page of the reports of a status, of a named verifier's tasks and of a
    verifier's panel seats each walks its index in the listing's order and sorts nothing
    (SQLite's plan: before, each searched its column's index and sorted every row it held); a
    seat made before 0040 gets its task's posted time; 0040 also downgrades cleanly."""
    at = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    with store.write() as tx:
        for name in ("pat", "vic", "val"):
            records.create_account(tx, name, ["poster"], f"k-{name}", opt_in=True, at=at)
        panel = (Seat("val", None), Seat("vic", None))
        records.insert_task(tx, _manual("task_seated", "pat", at, panel=panel), title="t", brief="")
    downgrade(store, "0039")
    with store.read() as tx:
        assert "posted_at" not in list(tx.conn.execute(text("SELECT * FROM task_seats")).keys())
    _read_on_indexes(store, "0039", _READS_0040)
    with store.read() as tx:
        seat = schema.task_seats.c
        seats = tx.conn.execute(select(seat.verifier, seat.posted_at)).all()
        page = records.tasks(tx, involving="vic")
    assert sorted(v for v, _ in seats) == ["val", "vic"]
    assert {p for _, p in seats} == {at}
    assert [t.task.id for t in page.items] == ["task_seated"]
    if store.dialect == "sqlite":
        with store.read() as tx:
            for sql in _READS_0040:
                plan = [row[-1] for row in tx.conn.execute(text(f"EXPLAIN QUERY PLAN {sql}"))]
                assert not any("TEMP B-TREE" in step for step in plan), (sql, plan)


def test_migration_0041_reads_a_tools_latest_contract_and_policy_in_one_step(
    store: Store,
) -> None:
    """After 0041, a tool's latest contract and its latest policy are each one step of an
    index in registration order (its first provider is a row of its own since 0052), with
    nothing sorted (SQLite's plan: before, each read every version of the tool and sorted
    them); 0041 also downgrades cleanly."""
    downgrade(store, "0040")
    store.migrate()
    if store.dialect != "sqlite":
        return
    reads = {
        "ix_call_contracts_tool_id": (lambda tx: calls.latest_contract(tx, "t"),),
        "ix_call_policies_tool_id": (lambda tx: calls.latest_policy(tx, "t"),),
    }
    for index, runs in reads.items():
        for run in runs:
            [(_, plan)] = sqlite_plans(store, run)
            assert plan == [f"SEARCH {index.split('_tool_id')[0][3:]} USING INDEX {index} (tool=?)"]


def _old_counts(tx: Transaction) -> dict[day_counts.Key, int]:
    """The day counts as a revision before 0048 keeps them (one column), read by its SQL."""
    rows = tx.conn.execute(
        text("SELECT family, subject, day, name, sum(n) FROM day_counts GROUP BY 1, 2, 3, 4")
    )
    return {(f, sub, d, n): int(v) for f, sub, d, n, v in rows if v}


def test_migration_0043_leaves_a_reveal_due_only_on_an_awaiting_task(store: Store) -> None:
    """0043 clears the reveal's due time of a task that left verification keeping it, keeps an
    awaiting task's, and the sweep's read then walks the due time's index alone (SQLite's plan:
    asked for the status too, it read every awaiting task by the status's index and sorted)."""
    at = datetime(2026, 3, 4, tzinfo=UTC)
    with store.write() as tx:  # written by this code, then as 0042 left them
        records.create_account(tx, "pat", ["poster"], "k-pat", opt_in=True, at=at)
        for name in ("waits", "left"):
            records.insert_task(tx, _manual(name, "pat", at), title=name, brief="")
    downgrade(store, "0042")
    with store.engine.begin() as conn:
        for name, status in (("waits", "awaiting_verification"), ("left", "completed")):
            conn.execute(
                text("UPDATE tasks SET status = :s, reveal_due_at = :due WHERE id = :id"),
                {"s": status, "due": at.replace(tzinfo=None), "id": name},
            )
    store.migrate()
    with store.read() as tx:
        assert records.reveals_due(tx, at + timedelta(hours=1), 10) == ["waits"]
    if store.dialect == "sqlite":
        [(_, plan)] = sqlite_plans(store, lambda tx: records.reveals_due(tx, at, 10))
        assert plan[0] == "SEARCH tasks USING INDEX ix_tasks_reveal_due_at (reveal_due_at<?)"
        assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan  # ties only: the right part


def test_migration_0056_takes_a_task_waiting_for_a_retry_out_of_the_due_order(
    store: Store,
) -> None:
    """After 0056, a task whose sweep failed is out of its sweep's due order until its retry,
    read from an index of its own; each read walks its partial index, sorting nothing but ties
    (SQLite's plan): a pass never reads the tasks waiting for a retry. 0056 downgrades cleanly,
    the waiting task due again."""
    at = datetime(2026, 3, 4, tzinfo=UTC)
    downgrade(store, "0055")
    store.migrate()
    with store.write() as tx:
        records.create_account(tx, "pat", ["poster"], "k-pat", opt_in=True, at=at)
        for name in ("failed", "next"):
            task = _manual(name, "pat", at, take_ends_at=at, reveal_due_at=at)
            records.insert_task(tx, task, title=name, brief="")
        records.defer_sweep(tx, {"failed": (1, at + timedelta(minutes=1))})
    with store.read() as tx:
        assert records.takes_due(tx, at, 10) == ["next"]
        assert records.reveals_due(tx, at, 10) == ["next"]
        assert records.sweep_retries_due(tx, at, 10) == []
        assert records.sweep_retries_due(tx, at + timedelta(minutes=1), 10) == ["failed"]
        assert records.sweep_failures(tx, ["failed", "next"]) == {"failed": 1, "next": 0}
    if store.dialect == "sqlite":
        for read, index in (
            (records.takes_due, "ix_tasks_take_ends_at"),
            (records.reveals_due, "ix_tasks_reveal_due_at"),
            (records.sweep_retries_due, "ix_tasks_sweep_retry_at"),
        ):
            [(_, plan)] = sqlite_plans(store, lambda tx, read=read: read(tx, at, 10))
            assert plan[0].startswith(f"SEARCH tasks USING INDEX {index} "), plan
            assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan
    with store.write() as tx:
        records.sweep_done(tx, "failed")
    with store.read() as tx:
        assert records.takes_due(tx, at, 10) == ["failed", "next"]
    with store.write() as tx:
        records.defer_sweep(tx, {"failed": (1, at + timedelta(minutes=1))})
    downgrade(store, "0055")
    with store.read() as tx:
        due = tx.conn.execute(text("SELECT id FROM tasks WHERE take_ends_at IS NOT NULL"))
        assert sorted(r.id for r in due) == ["failed", "next"]
    store.migrate()


def test_migration_0057_passes_over_a_hold_waiting_for_a_retry(store: Store) -> None:
    """After 0057, a hold whose release failed is out of the due order until its retry, read
    from an index of its own (SQLite's plan: the partial index, sorting nothing but ties); a
    report's claim ends its retry. 0057 downgrades cleanly, the waiting hold due again."""
    at = datetime(2026, 3, 4, tzinfo=UTC)
    downgrade(store, "0056")
    store.migrate()
    with store.write() as tx:
        for call_id in ("failed", "next"):
            holds.add(
                tx,
                call_id=call_id,
                provider="p",
                caller="c",
                amount=1,
                receipt_id=f"r-{call_id}",
                matures_at=at,
            )
        holds.defer(tx, {"failed": (1, at + timedelta(minutes=1))})
    later = at + timedelta(minutes=1)
    with store.read() as tx:
        assert [d.call_id for d in holds.due(tx, later)] == ["next"]
        assert [d.call_id for d in holds.due(tx, later, call_ids=["failed"])] == ["failed"]
        assert holds.retries_due(tx, at) == []
        assert holds.retries_due(tx, later) == ["failed"]
        assert holds.retries_due(tx, later, provider="q") == []
        assert holds.release_failures(tx, ["failed", "next"]) == {"failed": 1, "next": 0}
    if store.dialect == "sqlite":
        [(_, plan)] = sqlite_plans(store, lambda tx: holds.retries_due(tx, later))
        assert plan[0].startswith("SEARCH provider_holds USING INDEX ix_provider_holds_retry_at ")
        assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan
    with store.write() as tx:
        assert holds.move(tx, "failed", from_state=holds.HELD, to_state=holds.REPORTED)
    with store.read() as tx:
        assert holds.release_failures(tx, ["failed"]) == {"failed": 0}
    with store.write() as tx:
        assert holds.move(tx, "failed", from_state=holds.REPORTED, to_state=holds.HELD)
        holds.defer(tx, {"failed": (1, later)})
    downgrade(store, "0056")
    with store.read() as tx:
        due = tx.conn.execute(text("SELECT call_id FROM provider_holds WHERE state = 'held'"))
        assert sorted(r.call_id for r in due) == ["failed", "next"]
    store.migrate()


def test_migration_0058_passes_over_a_call_waiting_for_a_retry(store: Store) -> None:
    """After 0058, a pending call whose recovery failed is out of the pending index until its
    retry, read from an index of its own (SQLite's plans: each read one partial index's range,
    sorting nothing but ties); a retry cleared puts the call back. 0058 downgrades cleanly, the
    waiting call pending in the index again."""
    at = datetime(2026, 3, 4, tzinfo=UTC)
    downgrade(store, "0057")
    store.migrate()
    with store.write() as tx:
        records.create_account(tx, "caller", ["agent"], "k-caller", opt_in=True, at=at)
        for call_id in ("failed", "next"):
            assert gateway.start_call(tx, pending_call(call_id, started_at=at))
        gateway.defer_recovery(tx, {"failed": (1, at + timedelta(minutes=1))})
    later = at + timedelta(minutes=1)
    with store.read() as tx:
        assert [c.id for c in gateway.pending_before(tx, later)] == ["next"]
        assert gateway.recover_retries_due(tx, at) == []
        assert [c.id for c in gateway.recover_retries_due(tx, later)] == ["failed"]
        assert gateway.recover_failures(tx, ["failed", "next"]) == {"failed": 1, "next": 0}
    if store.dialect == "sqlite":
        [(_, plan)] = sqlite_plans(store, lambda tx: gateway.pending_before(tx, later))
        assert plan == ["SEARCH gateway_calls USING INDEX ix_gateway_calls_pending (started_at<?)"]
        [(_, plan)] = sqlite_plans(store, lambda tx: gateway.recover_retries_due(tx, later))
        assert plan[0].startswith(
            "SEARCH gateway_calls USING INDEX ix_gateway_calls_recover_retry_at "
        ), plan
        assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan
    with store.write() as tx:
        gateway.recovery_retried(tx, "failed")
    with store.read() as tx:
        assert sorted(c.id for c in gateway.pending_before(tx, later)) == ["failed", "next"]
        assert gateway.recover_failures(tx, ["failed"]) == {"failed": 0}
    with store.write() as tx:
        gateway.defer_recovery(tx, {"failed": (2, later)})
    downgrade(store, "0057")
    with store.read() as tx:
        pending = tx.conn.execute(text("SELECT id FROM gateway_calls WHERE state = 'pending'"))
        assert sorted(r.id for r in pending) == ["failed", "next"]
    store.migrate()


def test_no_index_is_led_by_another_of_its_table() -> None:
    """An index on the first columns of another index (or key) of its table reads nothing the
    other does not, and every row written pays for it (revisions 0027 and 0033 dropped them):
    only a unique one (it refuses what the longer one does not) or one of some rows may."""
    led = []
    for table in metadata.sorted_tables:
        keys = [tuple(c.name for c in k.columns) for k in table.constraints if _is_key(k)]
        indexes = [(i, tuple(c.name for c in i.columns)) for i in table.indexes]
        for index, columns in indexes:
            if index.unique or _partial(index):
                continue
            others = keys + [cols for i, cols in indexes if i is not index and not _partial(i)]
            if any(len(o) > len(columns) and o[: len(columns)] == columns for o in others):
                led.append(index.name)
    assert led == []


def _is_key(constraint: Any) -> bool:
    return isinstance(constraint, PrimaryKeyConstraint | UniqueConstraint)


def _partial(index: Any) -> bool:
    return any(index.dialect_options[d].get("where") is not None for d in ("sqlite", "postgresql"))


def test_migration_0028_counts_the_ledger_lines_already_written(store: Store) -> None:
    """Upgrading a database with ledger lines counts them by day for the ledger's totals (for
    everyone, and for each account but a task's escrow or a call's reservation), as a recount
    from the lines gives them; 0028 also downgrades cleanly."""
    downgrade(store, "0027")

    def naive(at: datetime) -> datetime:
        return at.replace(tzinfo=None)

    legs = [
        ("1", WORLD, -5, "deposit", T0),
        ("1", "wallet:a", 5, "deposit", T0),
        ("2", "wallet:a", -3, "reserve", T0 + timedelta(days=1)),
        ("2", "hold:call:c", 3, "reserve", T0 + timedelta(days=1)),
        ("3", "hold:call:c", -3, "charge", T0 + timedelta(days=1, hours=1)),
        ("3", "held:p", 3, "charge", T0 + timedelta(days=1, hours=1)),
    ]
    with store.engine.begin() as conn:
        for txn, account, amount, memo, at in legs:
            conn.execute(
                text(
                    "INSERT INTO ledger_entries (txn, account, amount, memo, at) "
                    "VALUES (:txn, :account, :amount, :memo, :at)"
                ),
                {"txn": txn, "account": account, "amount": amount, "memo": memo, "at": naive(at)},
            )
    store.migrate()
    with store.read() as tx:
        kept = {k: n for k, n in day_counts.stored(tx).items() if k[0] == day_counts.LEDGER}
        assert kept == {k: n for k, n in recount(tx).items() if k[0] == day_counts.LEDGER}
        assert kept[day_counts.LEDGER, "wallet:a", T0.date().isoformat(), "in deposit"] == 5
        assert not any(k[1] == "hold:call:c" for k in kept)
        which = ledger.Movements(accounts=("wallet:a",), since=T0, until=T0 + timedelta(days=2))
        assert ledger.movement_totals(tx, which) == {
            "lines": 2,
            "credits": 5,
            "debits": -3,
            "net": 2,
        }
    downgrade(store, "0027")
    with store.read() as tx:
        assert not any(k[0] == day_counts.LEDGER for k in _old_counts(tx))
    store.migrate()


def test_migration_0029_counts_the_deliveries_already_made(store: Store) -> None:
    """Upgrading a database with webhook deliveries counts them by status, as the operator's
    counts read them; 0029 also downgrades cleanly."""
    downgrade(store, "0028")
    at = {"at": T0.replace(tzinfo=None)}
    with store.engine.begin() as conn:
        _account_p(conn, at)
        conn.execute(
            text(
                "INSERT INTO webhook_endpoints (id, account_id, url, secret, description, "
                "enabled, created_at) VALUES ('ep', 'p', 'https://example.com', 's', '', true, :at)"
            ),
            at,
        )
        for i, status in enumerate(("delivered", "delivered", "failed", "pending")):
            conn.execute(
                text(
                    "INSERT INTO webhook_messages (id, type, payload, created_at) "
                    "VALUES (:id, 'webhook.test', '{}', :at)"
                ),
                {"id": f"d{i}", **at},
            )
            conn.execute(
                text(
                    "INSERT INTO webhook_deliveries (id, message_id, endpoint_id, account_id, "
                    "status, attempts, replays, created_at) "
                    "VALUES (:id, :id, 'ep', 'p', :status, 0, 0, :at)"
                ),
                {"id": f"d{i}", "status": status, **at},
            )
    store.migrate()
    with store.read() as tx:
        assert outbox.counts(tx) == {"delivered": 2, "failed": 1, "pending": 1}
        assert day_counts.stored(tx) == recount(tx)
    downgrade(store, "0028")
    with store.read() as tx:
        assert not any(k[0] == day_counts.DELIVERIES for k in _old_counts(tx))
    store.migrate()


def test_migration_0036_counts_the_holds_already_open(store: Store) -> None:
    """Upgrading a database with provider holds counts those open (held or under a report) by
    the hour they mature and for all time, as a recount from the holds gives them, and the
    metrics' summary reads them; 0036 also downgrades cleanly."""
    downgrade(store, "0035")
    rows = [
        ("c1", holds.HELD, 3, T0),
        ("c2", holds.REPORTED, 4, T0 + timedelta(minutes=59)),
        ("c3", holds.HELD, 5, T0 + timedelta(days=2, hours=5)),
        ("c4", holds.RELEASED, 6, T0),
        ("c5", holds.REFUNDED, 7, T0 + timedelta(days=2)),
    ]
    with store.engine.begin() as conn:
        for call_id, state, amount, at in rows:
            conn.execute(
                text(
                    "INSERT INTO provider_holds (call_id, provider, caller, amount, receipt_id, "
                    "matures_at, state) VALUES (:id, 'p', 'a', :amount, 'r', :at, :state)"
                ),
                {"id": call_id, "amount": amount, "at": at.replace(tzinfo=None), "state": state},
            )
    store.migrate()
    with store.read() as tx:
        kept = {k: n for k, n in day_counts.stored(tx).items() if k[0] == day_counts.HOLDS}
        assert kept == {k: n for k, n in recount(tx).items() if k[0] == day_counts.HOLDS}
        assert kept[day_counts.HOLDS, "", day_counts.hour_of(T0), "open"] == 2
        assert holds.open_summary(tx, T0) == {"count": 3, "amount": 12, "maturing_24h": 2}
    downgrade(store, "0035")
    with store.read() as tx:
        assert not any(k[0] == day_counts.HOLDS for k in _old_counts(tx))
    store.migrate()


def test_migration_0037_drops_the_rows_of_emptied_escrows_and_reservations(
    store: Store,
) -> None:
    """Upgrading to 0037 deletes the balance rows of escrows and call reservations holding 0,
    and no other: a wallet or provider hold at 0, an escrow still holding money stay; 0037
    also downgrades cleanly (a missing row reads 0 either way)."""
    downgrade(store, "0036")
    rows = {"escrow:t1": 0, "hold:call:c1": 0, "escrow:t2": 5, "wallet:a": 0, "held:p": 0}
    with store.engine.begin() as conn:
        for account, balance in rows.items():
            conn.execute(
                text("INSERT INTO balances (account, balance) VALUES (:a, :b)"),
                {"a": account, "b": balance},
            )
    store.migrate()
    with store.read() as tx:
        assert ledger.balances(tx) == {"escrow:t2": 5, "wallet:a": 0, "held:p": 0}
        assert ledger.balance(tx, "escrow:t1") == 0
    downgrade(store, "0036")
    store.migrate()


def test_migration_0030_counts_a_providers_upheld_reports_by_one_range(store: Store) -> None:
    """After 0030 a provider's upheld reports since a time are one range of an index (SQLite's
    plan: the index, searched on all three columns), and its reports by provider alone still
    walk an index; 0030 also downgrades cleanly."""
    downgrade(store, "0029")
    store.migrate()
    if store.dialect != "sqlite":
        return
    reads = {
        "SELECT count(*) FROM call_reports WHERE provider = 'p' AND status = 'upheld' "
        "AND ruled_at >= '2026-01-01'": "provider=? AND status=? AND ruled_at>?",
        "SELECT call_id FROM call_reports WHERE provider = 'p'": "provider=?",
    }
    with store.read() as tx:
        for sql, search in reads.items():
            plan = " ".join(row[-1] for row in tx.conn.execute(text(f"EXPLAIN QUERY PLAN {sql}")))
            assert "ix_call_reports_provider_status" in plan and search in plan, (sql, plan)


def test_migration_0031_counts_the_ledger_for_all_time(store: Store) -> None:
    """Upgrading to 0031 adds the ledger's counts for all time, the sums of its days lane by
    lane, as a recount from the lines gives them; 0031 also downgrades cleanly."""
    with store.write() as tx:
        for days in (0, 1, 1):
            at = T0 + timedelta(days=days)
            ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 5, "deposit")], task_id=None, at=at)
    downgrade(store, "0030")
    with store.read() as tx:
        kept = _old_counts(tx)
        assert not any(k[0] == day_counts.LEDGER and k[2] == day_counts.ALL_TIME for k in kept)
    store.migrate()
    with store.read() as tx:
        assert day_counts.stored(tx) == recount(tx)
        everything = ledger.Movements(accounts=("wallet:a",))
        assert ledger.movement_totals(tx, everything)["credits"] == 15


def test_the_verifiers_come_by_id_a_page_at_a_time(store: Store) -> None:
    """Every page size walks the same list: the accounts that take jobs and hold the role, by
    id; the accounts opted in without the role (here 13 in a row, more than a page) are
    passed over without cutting a page short of the ones after them."""
    with store.write() as tx:
        for n in range(30):
            roles = ["verifier"] if (n < 8 and n % 3 == 0) or n > 20 else ["agent"]
            opted = n % 3 == 0 or n >= 8
            records.create_account(tx, f"v{n:02}", roles, f"adj_key{n}", opt_in=opted, at=T0)
    expected = [f"v{n:02}" for n in (0, 3, 6, *range(21, 30))]
    for limit in (1, 2, 5, 50):
        seen, cursor, pages = [], None, 0
        while True:
            with store.read() as tx:
                page = records.verifiers(tx, limit=limit, cursor=cursor)
            assert len(page.items) == limit or page.next_cursor is None
            seen += [a.id for a in page.items]
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == expected, limit
        assert pages == -(-len(expected) // limit), limit


def test_migration_0032_reads_the_verifiers_from_their_index(store: Store) -> None:
    """After 0032 a page of the verifiers is a range of their own index (SQLite's plan), not
    a pass over every account; 0032 also downgrades cleanly."""
    downgrade(store, "0031")
    store.migrate()
    if store.dialect != "sqlite":
        return
    sql = "SELECT id FROM accounts WHERE verifier_opt_in IS 1 AND id > 'a' ORDER BY id LIMIT 51"
    with store.read() as tx:
        plan = " ".join(row[-1] for row in tx.conn.execute(text(f"EXPLAIN QUERY PLAN {sql}")))
    assert "ix_accounts_verifiers" in plan and "id>?" in plan, plan


def test_an_emptied_escrow_pays_out_once_and_takes_money_again(store: Store) -> None:
    """The debit that empties an escrow deletes its row: a second payout from it finds nothing
    and is refused (``INSUFFICIENT_FUNDS``, nothing written), and a credit makes the row again."""
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "escrow:t", 5)], task_id="t", at=T0)
    for attempt in range(2):
        try:
            with store.write() as tx:
                tx.appended.add("r")  # as the payout's receipt, signed in the transaction
                paid = [Transfer("escrow:t", "wallet:a", 5, "payout")]
                ledger.transfer(tx, paid, task_id="t", at=T0, receipt_id="r")
        except Error as refusal:
            assert attempt == 1 and refusal.code == "INSUFFICIENT_FUNDS"
        else:
            assert attempt == 0
    with store.read() as tx:
        assert "escrow:t" not in ledger.balances(tx) and ledger.balance(tx, "wallet:a") == 5
        assert ledger.recount(tx) == ledger.Recount(0, [])
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "escrow:t", 3)], task_id="t", at=T0)
    with store.read() as tx:
        assert ledger.balances(tx)["escrow:t"] == 3


def test_migration_0045_keeps_a_tasks_criteria_salt_written_once(store: Store) -> None:
    """A task's criteria salt is stored with it and read back, and no update writes it again;
    0045 downgrades cleanly, and a task stored without the column reads back with none."""
    at = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    task = _manual(
        "t_salted", "pat", at, criteria={"expected_answer": "42"}, criteria_salt="s" * 43
    )
    with store.write() as tx:
        records.create_account(tx, "pat", ["poster"], "k-pat", opt_in=False, at=at)
        records.insert_task(tx, task, title="t", brief="")
    with store.write() as tx:
        stored = records.task(tx, "t_salted")
        assert stored is not None and stored.task.criteria_salt == "s" * 43
        records.update_task(tx, stored, replace(stored.task, criteria_salt=None, private=True))
    with store.read() as tx:
        again = records.task(tx, "t_salted")
        assert again is not None and again.task.private
        assert again.task.criteria_salt == "s" * 43
    downgrade(store, "0044")
    store.migrate()
    with store.read() as tx:
        before = records.task(tx, "t_salted")
        assert before is not None and before.task.criteria_salt is None


def test_migration_0046_reads_an_accounts_enabled_endpoints_on_their_range(store: Store) -> None:
    """After 0046, an event's subscribers (the enabled endpoints of its parties) and the count a
    new endpoint is checked against search the enabled ones' range of the account's index
    (SQLite's plans: before, each read every endpoint the account ever made); 0046 also
    downgrades cleanly."""
    downgrade(store, "0045")
    store.migrate()
    if store.dialect != "sqlite":
        return
    subscribers = "SELECT id FROM webhook_endpoints WHERE account_id IN ('a', 'b') AND enabled = 1"
    with store.read() as tx:
        plan = [row[-1] for row in tx.conn.execute(text(f"EXPLAIN QUERY PLAN {subscribers}"))]
    assert any(
        "ix_webhook_endpoints_account_enabled (account_id=? AND enabled=?)" in p for p in plan
    )
    [(_, counted)] = sqlite_plans(store, lambda tx: outbox.enabled_count(tx, "a"))
    assert counted == [
        "SEARCH webhook_endpoints USING COVERING INDEX ix_webhook_endpoints_account_enabled "
        "(account_id=? AND enabled=?)"
    ]


def test_migration_0049_counts_rows_past_31_bits(store: Store) -> None:
    """After 0049 a ledger line (and every row the database numbers) is written past
    2^31 - 1, where PostgreSQL's ``serial`` ended (SQLite's row ids were 64-bit already); 0049
    also downgrades cleanly."""
    downgrade(store, "0048")
    store.migrate()
    if store.dialect == "postgresql":
        with store.engine.begin() as conn:
            for table in ("ledger_entries", "webhook_attempts", "submissions"):
                conn.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), 2147483650)")
                )
    else:
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO ledger_entries (id, txn, account, amount, memo, at) "
                    "VALUES (2147483650, 'old', 'wallet:big', 0, 'deposit', '2026-01-01')"
                )
            )
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:big", 5, "deposit")], task_id=None, at=T0)
    with store.read() as tx:
        ids = tx.conn.execute(text("SELECT max(id) FROM ledger_entries")).scalar_one()
    assert ids > 2**31
