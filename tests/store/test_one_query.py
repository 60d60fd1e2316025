"""A block of statements sent as one query (PostgreSQL): its values are written into it as
literals by the driver's client-side binding, its statements run as the store prepared them
on the connection, and what the server has prepared is known again after any failure."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import bindparam, func, insert, select, text
from sqlalchemy.exc import DBAPIError

from adjudge.errors import StorageError
from adjudge.market import WORLD, Transfer
from adjudge.store import Store, Transaction, ledger, transaction
from adjudge.store import schema as s

T0 = datetime(2026, 1, 1, tzinfo=UTC)

_PUT = insert(s.idempotency)
_GET = select(s.idempotency).where(
    s.idempotency.c.account_id == bindparam("k_account"), s.idempotency.c.key == bindparam("k_key")
)
_COUNT = select(func.count()).select_from(s.idempotency)
#: Text PostgreSQL can store: any character but NUL (and no lone surrogate, which no UTF-8 has).
_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=30)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_ACCOUNTS = itertools.count()
_HOSTILE = "'; DELETE FROM balances; --\\' $1 %(k_key)s %% ;\nEXECUTE adjudge_0 \u2028 e\u0301"


def _row(account: str, key: str, fingerprint: str, body: Any) -> dict[str, Any]:
    return {
        "account_id": account,
        "key": key,
        "fingerprint": fingerprint,
        "status_code": 200,
        "body": body,
        "at": T0,
    }


def _prepared(tx: Transaction) -> set[str]:
    return {r[0] for r in tx.conn.execute(text("SELECT name FROM pg_prepared_statements"))}


def _backend(tx: Transaction) -> int:
    return int(tx.conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _postgres(store: Store) -> None:
    if store.dialect == "sqlite":
        pytest.skip("SQLite runs each statement as a call: nothing is sent, nothing prepared")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(key=_TEXT, fingerprint=_TEXT, body=st.dictionaries(_TEXT, _JSON, max_size=3))
@example(key=_HOSTILE, fingerprint="\\", body={_HOSTILE: [_HOSTILE, None, True, -1]})
@example(key="", fingerprint="'", body={})
def test_any_value_sent_together_is_read_back_as_it_was(
    store: Store, key: str, fingerprint: str, body: Any
) -> None:
    """Whatever a value holds (quotes, backslashes, a semicolon and a line break, placeholders,
    the name of a prepared statement, any character) it is a value: the row written and read
    in one block is the row given, and no other row is written."""
    account = f"acct_{next(_ACCOUNTS)}"
    with store.write() as tx:
        before = tx.conn.execute(_COUNT).scalar_one()
        tx.later(_PUT, _row(account, key, fingerprint, body))  # held: sent with the read
        found = tx.rows(_GET, {"k_account": account, "k_key": key})
        assert tx.conn.execute(_COUNT).scalar_one() == before + 1
    assert found == [_row(account, key, fingerprint, body)]
    with store.read() as tx:
        assert tx.rows(_GET, {"k_account": account, "k_key": key}) == found


#: Values of each kind the store sends (arrays are a ``day_counts`` write's).
_VALUE = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | _TEXT
    | st.datetimes()
    | st.lists(_TEXT, max_size=4)
    | st.lists(st.integers(-(2**40), 2**40), max_size=4)
)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(values=st.lists(_VALUE, min_size=1, max_size=5))
@example(values=[_HOSTILE, None, -1, [_HOSTILE, ""], [-(2**40), 0]])
def test_values_are_written_as_psycopgs_client_side_binding_writes_them(
    store: Store, values: list[Any]
) -> None:
    """A statement's values are written by the connection's adapter exactly as psycopg's own
    ``ClientCursor.mogrify`` writes them (the adapter kept from one block to the next)."""
    _postgres(store)
    names = [f"v{i}" for i in range(len(values))]
    sql = "SELECT " + ", ".join(f"%({n})s" for n in names)
    args = dict(zip(names, values, strict=True))
    form = transaction._prepared_form(sql)
    execute = f"EXECUTE {form.name}(" + ", ".join(f"%({n})s" for n in names) + ")"
    with store.write() as tx:
        driver = tx.conn.connection.driver_connection
        expected = psycopg.ClientCursor(driver).mogrify(execute, args)
        assert tx._session().execute(form, args).decode() == expected


def test_a_value_no_text_can_hold_is_refused_and_nothing_is_written(store: Store) -> None:
    """A NUL in text: the driver will not write it on PostgreSQL, and the transaction fails
    as a storage error (the callers' edges refuse such input first), writing nothing."""
    _postgres(store)
    with pytest.raises(StorageError), store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 3)], task_id="t1", at=T0)
        tx.later(_PUT, _row("acct_nul", "a\x00b", "f", {}))
        tx.send()
    with store.read() as tx:
        assert ledger.entries(tx, "t1") == []
        assert tx.conn.execute(_COUNT).scalar_one() == 0


def test_each_hot_statement_is_prepared_once_a_connection_and_no_savepoint(store: Store) -> None:
    """The store prepares its hot statements itself, once a connection; a group commit's
    savepoints (a name a unit) are never prepared, and eight units prepare what one did."""
    _postgres(store)
    with store.write() as tx:
        tx.savepoint("unit_0")
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 1)], task_id="t1", at=T0)
        tx.send()
        once = _prepared(tx)
        for i in range(1, 8):
            tx.savepoint(f"unit_{i}", done_with=f"unit_{i - 1}")
            ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 1)], task_id="t1", at=T0)
            tx.send()
        again = _prepared(tx)
    assert once == again
    assert once and all(name.startswith("adjudge_") for name in once)
    forms = {form.name: sql for sql, form in transaction._FORMS.items()}
    assert any(forms[name].startswith("UPDATE balances") for name in once)


def test_prepared_statements_outlive_a_rollback(store: Store) -> None:
    """A rolled-back transaction, and a savepoint rolled back to, leave the connection's
    prepared statements there for the next transaction (psycopg's own preparing, which drops
    every prepared statement after a rollback, is off)."""
    _postgres(store)
    with pytest.raises(RuntimeError), store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 1)], task_id="t1", at=T0)
        tx.send()
        pid, before = _backend(tx), _prepared(tx)
        tx.savepoint("a")
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 2)], task_id="t1", at=T0)
        tx.send()
        tx.rollback_to("a")
        raise RuntimeError("rolled back")
    with store.write() as tx:
        assert _backend(tx) == pid
        assert before <= _prepared(tx)
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 3)], task_id="t1", at=T0)
    with store.read() as tx:
        assert [e["amount"] for e in ledger.entries(tx, "t1")] == [-3, 3]


def test_a_block_that_failed_as_it_prepared_is_prepared_again(store: Store) -> None:
    """A block's statements first sent on a connection are prepared ahead of it; when the
    block fails, which of them the server kept is not known, so the connection's next block
    drops them all and prepares anew (else its statement would name one never prepared)."""
    _postgres(store)
    fresh = Store(store.url)  # a pool of its own: nothing prepared yet
    try:
        with pytest.raises(StorageError), fresh.write() as tx:
            pid = _backend(tx)
            with pytest.raises(DBAPIError):
                tx.conn.execute(text("SELECT 1 / 0"))  # the transaction is aborted
            tx.rows(_GET, {"k_account": "a", "k_key": "k"})  # so its PREPARE is not run
        with fresh.write() as tx:
            assert _backend(tx) == pid
            tx.later(_PUT, _row("acct_again", "k", "f", {"n": 1}))
            assert tx.rows(_GET, {"k_account": "acct_again", "k_key": "k"}) != []
    finally:
        fresh.dispose()


def test_a_connection_keeps_a_bounded_number_prepared(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the most a connection keeps, its next block drops them all and starts again."""
    _postgres(store)
    monkeypatch.setattr(transaction, "_MOST_PREPARED", 2)
    with store.write() as tx:
        for n in range(1, 9):  # the lines of n transfers: an insert of 2n rows, each its own
            moves = [Transfer(WORLD, f"wallet:{i}", 1) for i in range(n)]
            ledger.transfer(tx, moves, task_id=f"t{n}", at=T0)
            tx.send()
            assert len(_prepared(tx)) <= 2 + 3  # the most, and those of one block


def test_what_a_block_ran_before_its_code_raised_is_sent(store: Store) -> None:
    """A block whose own code raises still sends what ran in it (as psycopg's pipeline did):
    a savepoint set there exists to roll back to, and the transaction goes on from it."""
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 1)], task_id="t1", at=T0)
        with pytest.raises(RuntimeError), tx.together():
            tx.savepoint("a")
            ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 2)], task_id="t1", at=T0)
            raise RuntimeError("the block's own code failed")
        tx.rollback_to("a")
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 4)], task_id="t1", at=T0)
    with store.read() as tx:
        assert [e["amount"] for e in ledger.entries(tx, "t1")] == [-1, 1, -4, 4]


def test_statements_the_server_dropped_are_prepared_again(store: Store) -> None:
    """Prepared statements dropped behind the store's back (``DEALLOCATE ALL`` by another
    hand, a plan that no longer fits its table): the transaction that finds one gone fails,
    and the connection's next prepares anew rather than failing every transaction after."""
    _postgres(store)
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 1)], task_id="t1", at=T0)
        pid = _backend(tx)
    with pytest.raises(StorageError), store.write() as tx:
        assert _backend(tx) == pid
        tx.conn.execute(text("DEALLOCATE ALL"))
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 2)], task_id="t1", at=T0)
    with store.write() as tx:
        assert _backend(tx) == pid
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 4)], task_id="t1", at=T0)
    with store.read() as tx:
        assert [e["amount"] for e in ledger.entries(tx, "t1")] == [-1, 1, -4, 4]
