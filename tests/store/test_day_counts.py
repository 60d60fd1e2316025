"""The dashboards' daily counts, kept by the transactions that change what they count, equal a
recount of the rows: after any sequence of calls started, ended and judged again, money moved
and calls verified, dated in any order, with units rolled back to their savepoints and
transactions that fail; and with writers at once. (The tasks' states and verdicts are counted
through the service: ``support.audit`` recounts after every step of the HTTP state machine.)"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.market import WORLD, Transfer
from adjudge.store import ConcurrentUpdate, Store, Transaction, calls, gateway, ledger, records
from adjudge.store import day_counts as dc
from support.counts import recount
from support.rows import pending_call

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
MEMOS = ("charge", "refund", "void", "report refund", "payout", "release", "fee", "deposit", "")
VERDICTS = (None, "PASS", "FAIL", "DEGRADED")
#: Check names, one longer than a counted name and one PostgreSQL's text cannot hold.
CHECKS = ("schema", "range", "x" * 250, "nul\x00name")
_ids = itertools.count()

_moment = st.tuples(st.integers(0, 9), st.integers(0, 86_399))
_call = st.tuples(
    st.just("call"),
    st.sampled_from(("prov", "other")),
    _moment,
    st.sampled_from((*VERDICTS, "pending")),  # how it ends ("pending": not yet)
    st.sampled_from((*VERDICTS, "kept")),  # its verdict after a later judgment ("kept": none)
)
#: Accounts money moves into: a wallet and a provider's hold (their totals counted), a
#: task's escrow and a call's reservation (theirs summed from their few lines).
ACCOUNTS = ("wallet:a", "held:p", "escrow:t", "hold:call:c")
_move = st.tuples(
    st.just("move"),
    st.sampled_from(MEMOS),
    st.integers(1, 10**9),
    _moment,
    st.sampled_from(ACCOUNTS),
)
_record = st.tuples(
    st.just("record"),
    st.sampled_from(("prov", "other")),
    _moment,
    st.lists(st.tuples(st.sampled_from(CHECKS), st.sampled_from(("pass", "fail", "skip")))),
)
# One transaction: its operations, and its fate: committed, its last unit rolled back to a
# savepoint, or failed whole.
_txn = st.tuples(
    st.lists(st.one_of(_call, _move, _record), min_size=1, max_size=4),
    st.sampled_from(("commit", "unit rolled back", "fail")),
)


class _Failed(Exception):
    """A transaction that fails after its writes (nothing of it may be counted)."""


def _accounts(store: Store) -> None:
    with store.write() as tx:
        if records.account(tx, "caller") is None:
            records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)


def _clear(store: Store) -> None:
    with store.write() as tx:
        for table in (
            "day_counts",
            "gateway_calls",
            "call_records",
            "ledger_entries",
            "balances",
            "held_days",
        ):
            tx.conn.execute(text(f"DELETE FROM {table}"))


def _at(moment: tuple[int, int]) -> datetime:
    return T0 + timedelta(days=moment[0], seconds=moment[1])


def _apply(tx: Transaction, op: tuple[Any, ...]) -> None:
    """One operation, through the store's own functions (the ones the use cases call)."""
    n = next(_ids)
    if op[0] == "call":
        _, provider, moment, ending, later = op
        started = pending_call(f"c{n}", provider=provider, started_at=_at(moment))
        assert gateway.start_call(tx, started)
        if ending == "pending":
            return
        gateway.finish_call(
            tx,
            started.id,
            provider=provider,
            started_at=started.started_at,
            status="settled",
            verdict=ending,
            receipt_id=f"r{n}",
            answer={},
            at=started.started_at,
        )
        if later != "kept":
            ended = replace(started, state="done", verdict=ending)
            gateway.rejudged(tx, ended, status="settled", verdict=later, receipt_id=f"s{n}")
    elif op[0] == "move":
        _, memo, amount, moment, account = op
        moves = [Transfer(WORLD, account, amount, memo)]
        ledger.transfer(tx, moves, task_id=None, at=_at(moment))
    else:
        _, provider, moment, checks = op
        record = {
            "call_id": f"v{n}",
            "provider": provider,
            "tool": "weather",
            "verdict": "FAIL",
            "effect": {"enforced": True},
            "checks": [{"name": name, "outcome": outcome} for name, outcome in checks],
        }
        calls.add_call(
            tx,
            record=record,
            contract_version="1",
            submitted_by="caller",
            at=_at(moment),
            request={},
            response={},
            receipt_id=None,
            source="reported",
        )


def test_the_counts_equal_a_recount(store: Store) -> None:
    """Whatever committed is counted, on the day it happened, and nothing else: a unit rolled
    back to its savepoint (a group commit's failed unit) and a failed transaction count
    nothing. (Fewer examples on PostgreSQL, where each costs ten times as much.)"""
    _accounts(store)

    @settings(
        max_examples=40 if store.url.startswith("sqlite") else 12,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(txns=st.lists(_txn, max_size=12))
    def check(txns: list[Any]) -> None:
        _clear(store)
        for ops, fate in txns:
            try:
                with store.write() as tx:
                    for i, op in enumerate(ops):
                        if i == len(ops) - 1 and fate == "unit rolled back":
                            tx.savepoint("unit")
                            _apply(tx, op)
                            tx.rollback_to("unit")
                        else:
                            _apply(tx, op)
                    if fate == "fail":
                        raise _Failed
            except _Failed:
                pass
        with store.read() as tx:
            assert dc.stored(tx) == recount(tx)

    check()


def test_the_dashboards_names_are_cut_and_cleaned_as_counted(sqlite_store: Store) -> None:
    """A check's name longer than a counted name is counted cut to it, one with a NUL with the
    NUL replaced: stored as the recount makes them."""
    _accounts(sqlite_store)
    with sqlite_store.write() as tx:
        _apply(tx, ("record", "prov", (0, 0), [(CHECKS[2], "fail"), (CHECKS[3], "fail")]))
    with sqlite_store.read() as tx:
        names = {k[3] for k in dc.stored(tx)}
        assert names == {"x" * dc.NAME_LENGTH, "nul\ufffdname"}
        assert dc.stored(tx) == recount(tx)


def test_writers_at_once_keep_the_counts(store: Store) -> None:
    """Four writers at once, each starting and ending calls of two providers on three days
    (and moving money): the counts still equal a recount (a lost race is retried, as the
    service retries it)."""
    _accounts(store)
    _clear(store)
    failures: list[BaseException] = []

    def writer(k: int) -> None:
        for i in range(10):
            op = ("call", ("prov", "other")[i % 2], ((k + i) % 3, i), VERDICTS[i % 4], "kept")
            for _attempt in range(20):
                try:
                    with store.write() as tx:
                        _apply(tx, op)
                        _apply(tx, ("move", "charge", 1 + i, ((k + i) % 3, k), ACCOUNTS[k]))
                    break
                except ConcurrentUpdate:
                    time.sleep(0.01)
            else:
                failures.append(AssertionError(f"writer {k} gave up"))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    with store.read() as tx:
        kept = dc.stored(tx)
        assert kept == recount(tx)
        assert sum(n for k, n in kept.items() if k[:2] == (dc.CALLS, dc.EVERYONE)) == 40


@pytest.mark.parametrize(
    ("detail", "rules"),
    [
        (
            {"breakdown": [{"name": "length", "score": 0.5}, {"name": "tone", "score": 1}]},
            ["length"],
        ),
        ({"breakdown": [], "reasons": ["Output too short: 3 < 40"]}, ["Output too short"]),
        ({"reasons": ["my own words"]}, []),  # a person's verdict: no breakdown, no rules
        ({"breakdown": "x"}, []),
        (
            {"breakdown": [None, "x", {"name": "n", "score": "0.5"}, {"name": "b", "score": True}]},
            [],
        ),
        ({"breakdown": [], "reasons": "not a list"}, []),
    ],
)
def test_a_verdicts_rules_are_read_from_its_breakdown_and_nothing_else_fails(
    detail: dict[str, Any], rules: list[str]
) -> None:
    """The rules a failed verdict counts; a detail not in the auto check's shape counts none
    and raises nothing (it is read as the verdict is written)."""
    assert dc.failed_rules(detail) == rules


def test_a_records_failed_checks_are_its_failing_rows_and_nothing_else_fails() -> None:
    """The checks a record failed; rows not in shape are passed over."""
    record = {"checks": [{"name": "schema", "outcome": "fail"}, {"name": "x"}, None, "fail"]}
    assert dc.failed_checks(record) == ["schema"]
    assert dc.failed_checks({"checks": {"name": "schema"}}) == []
