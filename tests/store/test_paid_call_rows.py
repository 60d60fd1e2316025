"""A paid call's statements run on the driver: what they write and read is what SQLAlchemy's
column types would write and read, on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select

from adjudge import Error
from adjudge.calls.pricing import ListedPrice
from adjudge.store import ConcurrentUpdate, Store, calls, gateway, records
from adjudge.store.gateway import GatewayCall
from adjudge.store.schema import accounts
from support.rows import pending_call

T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: JSON with what a round trip could lose: non-ASCII text, nesting, nulls, booleans.
ANSWER = {"content": [{"type": "text", "text": "é ✓"}], "n": [1, None, 2.5], "ok": True}


def _accounts(store: Store) -> None:
    with store.write() as tx:
        records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)
        records.create_account(tx, "prov", ["provider"], "key-prov", opt_in=False, at=T0)


def _pending(call_id: str, *, key: str | None, started_at: datetime) -> GatewayCall:
    """A pending call with a price past 32 bits, to round-trip big integers."""
    return pending_call(call_id, started_at=started_at, key=key, price_minor=2**40, currency="USD")


def _row(store: Store, table: Any, key: str) -> dict[str, Any]:
    with store.read() as tx:
        return dict(tx.conn.execute(select(table).where(table.c.id == key)).one()._mapping)


def _call_row(store: Store, key: str) -> dict[str, Any]:
    """A call's row, and that no recovery of it failed (the upkeep's columns, no call's)."""
    row = _row(store, gateway.calls, key)
    assert (row.pop("recover_failures"), row.pop("recover_retry_at")) == (None, None)
    return row


def test_a_gateway_call_written_on_the_driver_reads_back_through_sqlalchemy(store: Store) -> None:
    """A call started and finished on the driver reads back equal through SQLAlchemy (times with
    microseconds, JSON, NULLs, big integers), and through the driver's own reads."""
    _accounts(store)
    started = T0 + timedelta(seconds=1, microseconds=7)
    pending = _pending("c1", key="k1", started_at=started)
    with store.write() as tx:
        gateway.start_call(tx, pending)
    assert _call_row(store, "c1") == asdict(pending)
    done = replace(
        pending,
        state="done",
        finished_at=started + timedelta(seconds=1),
        status="settled",
        verdict="pass",
        receipt_id="rcpt_1",
        answer=ANSWER,
    )
    with store.write() as tx:
        gateway.finish_call(
            tx,
            "c1",
            provider=pending.provider,
            started_at=started,
            status="settled",
            verdict="pass",
            receipt_id="rcpt_1",
            answer=ANSWER,
            at=started + timedelta(seconds=1),
        )
    assert _call_row(store, "c1") == asdict(done)
    with store.read() as tx:
        assert gateway.call(tx, "c1") == done
        assert gateway.call_by_key(tx, "caller", "k1") == done
        assert gateway.call_by_key(tx, "caller", "k2") is None and gateway.call(tx, "c2") is None


def test_a_gateway_call_written_through_sqlalchemy_reads_back_on_the_driver(store: Store) -> None:
    """The reverse: rows SQLAlchemy wrote (a time without microseconds, a NULL key) read back
    equal on the driver; finishing twice, a second start with one key and a taken id are
    refused, and write nothing."""
    _accounts(store)
    pending = _pending("c2", key=None, started_at=T0)
    with store.write() as tx:
        tx.conn.execute(insert(gateway.calls).values(**asdict(pending)))
    with store.read() as tx:
        assert gateway.call(tx, "c2") == pending
    with store.write() as tx:
        gateway.finish_call(tx, "c2", **_ended(pending), status="refunded", answer=ANSWER)
    with pytest.raises(ConcurrentUpdate), store.write() as tx:
        gateway.finish_call(tx, "c2", **_ended(pending), status="settled", answer={})
    done = replace(
        pending, state="done", finished_at=T0, status="refunded", receipt_id="r", answer=ANSWER
    )
    with store.read() as tx:
        assert gateway.call(tx, "c2") == done
    with store.write() as tx:
        assert gateway.start_call(tx, _pending("c3", key="k", started_at=T0))
        assert not gateway.start_call(tx, _pending("c4", key="k", started_at=T0))
    with pytest.raises(ConcurrentUpdate), store.write() as tx:
        gateway.start_call(tx, _pending("c2", key=None, started_at=T0))
    with store.read() as tx:
        assert gateway.call(tx, "c4") is None
        assert gateway.call_by_key(tx, "caller", "k") == _pending("c3", key="k", started_at=T0)
        assert gateway.call(tx, "c2") == done


def test_what_a_call_reads_on_the_driver_is_what_sqlalchemy_wrote(store: Store) -> None:
    """The tool, its provider's account, the credential, the policy, the terms and the latest
    proposal, written through SQLAlchemy, read back on the driver as written."""
    _accounts(store)
    at = T0 + timedelta(microseconds=123_456)
    document = {"name": "weather", "description": "Forecast ☀", "flags": [True, None]}
    with store.write() as tx:
        first = gateway.add_tool(
            tx,
            name="weather",
            provider="prov",
            document=document,
            digest="d1",
            price=ListedPrice(5, 5, at),
            currency="USD",
            at=at,
        )
        second = gateway.add_tool(
            tx,
            name="weather",
            provider="prov",
            document={},
            digest="d2",
            price=ListedPrice(2**40, 5, at + timedelta(days=1)),  # an increase with notice
            currency="EUR",
            at=T0,
        )
        gateway.set_credential(tx, "prov", "X-Api-Key", "sealed-secret", at)
        policy = calls.add_policy(
            tx,
            policy_id="p1",
            version=3,
            tool="weather",
            contract_version="1",
            document=document,
            digest="pd",
            by="prov",
            at=at,
        )
        calls.set_terms(tx, "prov", {"failure_rate": "1/100", "window_days": 7}, at)
        calls.add_proposal(tx, "prov", {"provider": "prov", "n": 1}, at)
        calls.add_proposal(tx, "prov", {"provider": "prov", "n": 2, "é": None}, at)
    with store.read() as tx:
        assert gateway.tool(tx, "weather") == second
        assert gateway.tool(tx, "weather", 1) == first
        assert gateway.tool(tx, "weather", 3) is None and gateway.tool(tx, "other") is None
        assert gateway.credential(tx, "prov") == ("X-Api-Key", "sealed-secret")
        assert gateway.credential(tx, "caller") is None
        assert second.listed == ListedPrice(2**40, 5, at + timedelta(days=1))
        assert calls.policy(tx, "weather", "p1", 3) == policy
        assert calls.policy(tx, "weather", "p1", 4) is None
        assert calls.policy(tx, "other", "p1", 3) is None  # a policy id is its tool's
        assert calls.policy(tx, "weather", "p1", at=at) == policy
        assert calls.policy(tx, "weather", "p1", at=at - timedelta(microseconds=1)) is None
        assert calls.terms(tx, "prov") == {"failure_rate": "1/100", "window_days": 7}
        assert calls.terms(tx, "caller") is None
        assert calls.latest_proposal(tx, "prov") == {"provider": "prov", "n": 2, "é": None}
        assert calls.latest_proposal(tx, "caller") is None
        row = tx.conn.execute(select(accounts)).all()
        by_id = {r.id: r for r in row}
        for account_id, api_key in (("caller", "key-caller"), ("prov", "key-prov")):
            found = records.account(tx, account_id)
            assert found == records.account_by_key(tx, api_key)
            assert found is not None and found.created_at == by_id[account_id].created_at
            assert found.roles == frozenset(by_id[account_id].roles)
            assert found.verifier_opt_in is by_id[account_id].verifier_opt_in
        assert records.account(tx, "nobody") is None
        assert records.account_by_key(tx, "no-key") is None


def test_a_call_record_round_trips_between_the_driver_and_sqlalchemy(store: Store) -> None:
    """A verified call stored on the driver reads back equal through SQLAlchemy (the boolean,
    JSON, the time), one SQLAlchemy stored reads back equal on the driver, and an id is
    verified once."""
    _accounts(store)
    record = {
        "call_id": "c1",
        "provider": "prov",
        "tool": "weather",
        "verdict": "pass",
        "policy": {"policy": "p1", "version": 3},
        "effect": {"enforced": True},
        "error": None,
        "rows": [{"id": "schema", "ok": True, "note": "é"}],
    }
    at = T0 + timedelta(microseconds=5)
    with store.write() as tx:
        stored = calls.add_call(
            tx,
            record=record,
            contract_version="1",
            submitted_by="caller",
            at=at,
            request={"call_id": "c1", "arguments": {"city": "Zürich"}},
            response={"digest": "sha256:00", "output": None},
            receipt_id="rcpt_1",
            source="gateway",
            evidence={"response_bytes": "e30=", "shown": False},
        )
    row = _row(store, calls.call_records, "c1")
    assert row == {
        "id": "c1",
        "provider": "prov",
        "tool": "weather",
        "contract_version": "1",
        "policy_id": "p1",
        "policy_version": 3,
        "submitted_by": "caller",
        "source": "gateway",
        "at": at,
        "verdict": "pass",
        "final_verdict": None,  # no judgment after the answer superseded it
        "enforced": True,
        "error_kind": None,
        "record": record,
        "request": stored.request,
        "response": stored.response,
        "receipt_id": "rcpt_1",
        "evidence": {"response_bytes": "e30=", "shown": False},
    }
    with store.read() as tx:
        assert calls.call(tx, "c1") == stored
    with store.write() as tx:
        tx.conn.execute(insert(calls.call_records).values({**row, "id": "c2"}))
        again = calls.call(tx, "c2")
    assert again == replace(stored, id="c2")
    with pytest.raises(Error) as refused, store.write() as tx:
        calls.add_call(
            tx,
            record=record,
            contract_version="1",
            submitted_by="caller",
            at=at,
            request={},
            response={},
            receipt_id=None,
            source="gateway",
        )
    assert refused.value.code == "CALL_EXISTS"


def _ended(call: gateway.GatewayCall) -> dict[str, Any]:
    """The rest of a finish of ``call`` with no verdict, receipt ``r``, at T0."""
    return {
        "provider": call.provider,
        "started_at": call.started_at,
        "verdict": None,
        "receipt_id": "r",
        "at": T0,
    }
