"""Webhooks end to end: events written with their state change, delivered signed to a real
receiver on loopback that verifies them with ``standardwebhooks``, retried on the schedule."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from standardwebhooks import Webhook, WebhookVerificationError

from adjudge.errors import StorageError
from adjudge.store import ledger, outbox
from adjudge.webhooks import MAX_ATTEMPTS, SCHEDULE, Sender
from support.harness import Harness
from support.receiver import Receiver, drain, endpoint

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"
RESULT = "A long enough result."
BRIEF = "Write a summary."
CALL_TIME = datetime(2026, 11, 29, 19, 30, tzinfo=UTC)


def _example(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


def _rows(h: Harness) -> tuple[int, int]:
    """How many messages and deliveries the outbox holds."""
    with h.app.store.read() as tx:
        messages = tx.conn.execute(select(func.count()).select_from(outbox.webhook_messages))
        deliveries = tx.conn.execute(select(func.count()).select_from(outbox.webhook_deliveries))
        return int(messages.scalar_one()), int(deliveries.scalar_one())


def _delivered_to(h: Harness, tid: str) -> None:
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": RESULT})


def _log(h: Harness, who: str, **params: str) -> list[dict[str, Any]]:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return list(h.ok(who, "GET", f"/webhooks/deliveries?{query}")["deliveries"])


def test_every_kind_of_event_arrives_signed_and_only_to_its_parties(
    wh: Harness, receiver: Receiver, sender: Sender
) -> None:
    """A verdict, a ruling, a payout, a refund, a dispute, an escalation and a settled call each
    reach the endpoints of the accounts party to them, signed so that the standardwebhooks
    library verifies them; a bystander's endpoint hears nothing, and no event carries a brief,
    a result or a reason."""
    h = wh
    h.clock.current = CALL_TIME  # the weather example's answer is fresh then
    h.keys["skycast"] = h.app.accounts.create(None, "skycast", ["provider"]).value["api_key"]
    for who in ("pat", "ann", "vera", "bob", "skycast"):
        endpoint(h, receiver, who)

    auto = h.post("auto")  # (1) passes the auto check: a verdict and a payout
    _delivered_to(h, auto)
    h.ok("ann", "POST", f"/tasks/{auto}/finalize")

    manual = h.post("manual", private=True)  # (2) fails, is disputed, the agent wins the ruling
    _delivered_to(h, manual)
    h.ok("pat", "POST", f"/tasks/{manual}/review", {"passed": False, "reasons": ["Too thin."]})
    h.ok("ann", "POST", f"/tasks/{manual}/disputes", {"reason": "It is all there."})
    h.ok("root", "POST", f"/tasks/{manual}/ruling", {"pay_agent": True, "note": "Fine."})

    agent = h.post("agent")  # (3) the named verifier passes it
    _delivered_to(h, agent)
    h.verdict("vera", agent, True)

    cancelled = h.post("manual")  # (4) withdrawn while nobody holds it: a refund
    h.ok("pat", "POST", f"/tasks/{cancelled}/cancel")

    h.ok("skycast", "POST", "/tools", {"contract": _example("weather.contract.json")})
    h.ok(
        "skycast",
        "POST",
        "/tools/weather.forecast/policies",
        {"policy": _example("weather.policy.json")},
    )
    request = _example("weather.request.json") | {"call_id": "wx-1"}
    call = h.ok(  # (5) a verified call
        "pat",
        "POST",
        "/calls",
        {"request": request, "response": _example("weather.good.response.json")},
    )

    h.ok("pat", "POST", "/calls/wx-1/report", {"reason": "Rain all day."})  # (6) reported
    ruling = {"upheld": True, "reasons": ["The station shows rain."]}
    h.ok("root", "POST", "/calls/wx-1/report/ruling", ruling)

    escalated = h.post("manual")  # (7) delivered, never judged, reclaimed after the deadline
    _delivered_to(h, escalated)
    h.later(days=2)
    h.ok("pat", "POST", f"/tasks/{escalated}/reclaim")

    assert drain(h, sender) > 0
    assert receiver.received and all(r.verified for r in receiver.received)

    def heard(name: str) -> set[tuple[str, str]]:
        out = set()
        for r in receiver.verified(name):
            data = r.payload["data"]
            out.add((r.payload["type"], data.get("task_id") or data.get("call_id")))
        return out

    poster = {
        ("task.verdict", auto), ("task.payout", auto),
        ("task.verdict", manual), ("task.dispute", manual), ("task.ruling", manual),
        ("task.payout", manual),
        ("task.verdict", agent), ("task.payout", agent),
        ("task.refund", cancelled),
        ("task.escalated", escalated),
        ("call.settled", "wx-1"), ("call.reported", "wx-1"), ("call.report_ruled", "wx-1"),
    }  # fmt: skip
    calls = {("call.settled", "wx-1"), ("call.reported", "wx-1"), ("call.report_ruled", "wx-1")}
    assert heard("pat") == poster
    assert heard("ann") == poster - {("task.refund", cancelled)} - calls
    assert heard("vera") == {("task.verdict", agent), ("task.payout", agent)}
    assert heard("skycast") == calls
    assert heard("bob") == set()

    for r in receiver.received:
        text = r.body.decode()
        for private in (
            *(RESULT, BRIEF, "Too thin.", "It is all there.", "Fine.", "secret"),
            *("Rain all day.", "The station shows rain."),
        ):
            assert private not in text
        assert r.msg_id.startswith("msg_") and r.payload["timestamp"]

    def event(name: str, kind: str, ref: str) -> dict[str, Any]:
        [found] = [
            r.payload["data"]
            for r in receiver.verified(name)
            if r.payload["type"] == kind
            and ref in (r.payload["data"].get("task_id"), r.payload["data"].get("call_id"))
        ]
        return dict(found)

    receipts = {r["id"] for r in h.ok("pat", "GET", f"/tasks/{auto}/receipts")["receipts"]}
    payout = event("ann", "task.payout", auto)
    assert payout["reward"] == "2000000" and payout["payout"] == "1800000"
    assert payout["fee"] == "200000" and payout["ending"] == "paid_on_pass"
    assert payout["agent"] == "ann" and payout["receipt_id"] in receipts
    verdict = event("ann", "task.verdict", auto)
    assert verdict["passed"] is True and verdict["authority"] == "deterministic"
    assert verdict["receipt_id"] == payout["receipt_id"]  # the verdict's receipt released it
    refund = event("pat", "task.refund", cancelled)
    assert refund["refund"] == "2000000" and refund["ending"] == "refunded_on_cancel"
    assert event("pat", "task.ruling", manual)["passed"] is True
    assert event("ann", "task.dispute", manual)["by"] == "ann"
    assert event("pat", "task.escalated", escalated)["status"] == "escalated"
    settled = event("skycast", "call.settled", "wx-1")
    assert settled["payment"] == "settle" and settled["verdict"] == "PASS"
    assert settled["receipt_id"] == call["receipt_id"] and settled["price"].isdigit()
    ruled = event("skycast", "call.report_ruled", "wx-1")
    assert ruled["ruling"] == "upheld" and ruled["refund"] == "0" and ruled["receipt_id"]

    log = _log(h, "pat", limit="200")
    assert len(log) == len(poster) and {d["status"] for d in log} == {"delivered"}
    assert all(d["attempts"] == 1 and d["last_status"] == 204 for d in log)


def test_a_receiver_down_then_failing_then_slow_is_retried_on_the_schedule(
    wh: Harness, receiver: Receiver, quick: Sender
) -> None:
    """Connection refused, then HTTP 500, then an answer past the time-out: each attempt is
    recorded with its error and the next is due exactly on the back-off schedule (nothing is
    sent before it); the fourth attempt succeeds and verifies."""
    h = wh
    made = endpoint(h, receiver, "pat")
    receiver.down()
    h.ok("pat", "POST", f"/webhooks/endpoints/{made['id']}/test")
    start = h.clock.now()

    assert h.app.webhooks.deliver_due(quick) == 1  # (1) refused
    [d] = _log(h, "pat")
    assert d["status"] == "pending" and d["attempts"] == 1 and d["last_status"] is None
    assert "connect" in d["last_error"]
    assert d["next_attempt_at"] == (start + SCHEDULE[0]).isoformat()

    receiver.up()
    receiver.mode = "500"
    h.advance(seconds=4)
    assert h.app.webhooks.deliver_due(quick) == 0  # not due yet: no request reaches it
    assert receiver.received == []
    h.advance(seconds=1)
    assert h.app.webhooks.deliver_due(quick) == 1  # (2) HTTP 500
    [d] = _log(h, "pat")
    assert d["attempts"] == 2 and d["last_status"] == 500
    assert d["last_error"] == "HTTP 500: receiver broke"
    assert d["next_attempt_at"] == (h.clock.now() + SCHEDULE[1]).isoformat()

    receiver.mode, receiver.delay = "slow", 2.0
    h.advance(seconds=30)
    assert h.app.webhooks.deliver_due(quick) == 1  # (3) past the time-out
    [d] = _log(h, "pat")
    assert d["attempts"] == 3 and d["status"] == "pending"
    assert "within" in d["last_error"] or "silent" in d["last_error"]
    assert d["next_attempt_at"] == (h.clock.now() + SCHEDULE[2]).isoformat()

    receiver.mode, receiver.delay = "ok", 0.0
    h.advance(minutes=2)
    assert h.app.webhooks.deliver_due(quick) == 1  # (4) delivered
    [d] = _log(h, "pat")
    assert d["status"] == "delivered" and d["attempts"] == 4 and d["last_error"] is None
    assert d["next_attempt_at"] is None and d["last_status"] == 204
    ids = {r.msg_id for r in receiver.received}
    assert ids == {d["message_id"]}  # every attempt carried the same webhook-id
    assert receiver.verified("pat")[-1].payload["type"] == "webhook.test"


def test_a_delivery_ends_failed_after_the_last_attempt_and_a_replay_sends_it_again(
    wh: Harness, receiver: Receiver, sender: Sender
) -> None:
    """A receiver that always answers 500 gets MAX_ATTEMPTS attempts, one per step of the
    schedule, then the delivery is failed and never tried again; a replay makes it due at once
    with a fresh count and the same webhook-id, and the receiver, now well, gets it."""
    h = wh
    made = endpoint(h, receiver, "pat")
    receiver.mode = "500"
    h.ok("pat", "POST", f"/webhooks/endpoints/{made['id']}/test")
    for wait in SCHEDULE:
        assert h.app.webhooks.deliver_due(sender) == 1
        h.advance(seconds=wait.total_seconds())
    assert h.app.webhooks.deliver_due(sender) == 1
    [d] = _log(h, "pat")
    assert d["status"] == "failed" and d["attempts"] == MAX_ATTEMPTS == 10
    assert d["next_attempt_at"] is None and d["last_status"] == 500
    h.advance(days=30)
    assert h.app.webhooks.deliver_due(sender) == 0
    assert len(receiver.received) == MAX_ATTEMPTS
    assert _log(h, "pat", status="failed") == [d] and _log(h, "pat", status="pending") == []

    receiver.mode = "ok"
    again = h.call("pat", "POST", f"/webhooks/deliveries/{d['id']}/replay", Idempotency_Key="r1")
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "pending" and again.json()["attempts"] == 0
    repeat = h.call("pat", "POST", f"/webhooks/deliveries/{d['id']}/replay", Idempotency_Key="r1")
    assert repeat.headers.get("Idempotent-Replayed") == "true"
    assert h.app.webhooks.deliver_due(sender) == 1
    assert h.app.webhooks.deliver_due(sender) == 0  # the retried key queued it once
    [d2] = _log(h, "pat")
    assert d2["status"] == "delivered" and d2["attempts"] == 1 and d2["replays"] == 1
    assert receiver.verified("pat")[-1].msg_id == d["message_id"]
    # Its history keeps every attempt: ten refused (500, with the receiver's answer), then,
    # counted afresh after the replay, the one delivered.
    history = h.ok("pat", "GET", f"/webhooks/deliveries/{d['id']}")["attempt_history"]
    assert [(a["attempt"], a["ok"], a["status"]) for a in history] == [
        *((n, False, 500) for n in range(1, MAX_ATTEMPTS + 1)),
        (1, True, 204),
    ]
    assert history[0]["error"].startswith("HTTP 500") and history[-1]["error"] is None
    assert [a["at"] for a in history] == sorted(a["at"] for a in history)

    # A delivered one can be replayed too: the same event, signed afresh.
    h.ok("pat", "POST", f"/webhooks/deliveries/{d['id']}/replay")
    assert h.app.webhooks.deliver_due(sender) == 1
    last, before = receiver.verified("pat")[-1], receiver.verified("pat")[-2]
    assert last.msg_id == before.msg_id and last.body == before.body


def test_a_rolled_back_state_change_emits_nothing(
    wh: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outbox row is written in the state change's transaction: when the transaction fails
    after the verdict's event was emitted (the payout's ledger write breaks), the event goes
    with it; the same finalize then succeeds and its events are there."""
    h = wh
    h.ok("pat", "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/hook"})
    tid = h.post("auto")
    _delivered_to(h, tid)
    assert _rows(h) == (0, 0)
    real = ledger.transfer
    seen: list[int] = []

    def broken(tx: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("receipt_id"):  # the payout, after the verdict's event
            n = tx.conn.execute(select(func.count()).select_from(outbox.webhook_messages))
            seen.append(int(n.scalar_one()))
            raise StorageError("The disk is full.")
        real(tx, *args, **kwargs)

    monkeypatch.setattr(ledger, "transfer", broken)
    status, code = h.refused("ann", "POST", f"/tasks/{tid}/finalize")
    assert (status, code) == (503, "STORAGE_ERROR")
    assert seen == [1]  # the verdict's event was written in that transaction…
    assert _rows(h) == (0, 0)  # …and rolled back with it
    assert h.ok("pat", "GET", f"/tasks/{tid}")["status"] == "submitted"

    monkeypatch.setattr(ledger, "transfer", real)
    h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert _rows(h) == (2, 2)
    assert sorted(d["type"] for d in _log(h, "pat")) == ["task.payout", "task.verdict"]


def test_an_event_written_in_a_failed_transaction_is_never_stored(wh: Harness) -> None:
    """outbox.emit inside a transaction that then raises leaves nothing behind."""
    h = wh
    h.ok("pat", "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/hook"})
    now = h.clock.now()
    with pytest.raises(RuntimeError), h.app.store.write() as tx:
        assert outbox.emit(tx, ["pat"], "webhook.test", {"data": {}}, at=now) is not None
        raise RuntimeError("the state change failed after its event")
    assert _rows(h) == (0, 0)
    with h.app.store.write() as tx:
        assert outbox.emit(tx, ["bob"], "webhook.test", {}, at=now) is None  # no endpoint
        assert outbox.emit(tx, ["pat", None, "pat"], "webhook.test", {}, at=now) is not None
    assert _rows(h) == (1, 1)


def test_a_tampered_delivery_fails_verification(
    wh: Harness, receiver: Receiver, sender: Sender
) -> None:
    """What the receiver got verifies; a flipped byte of the body, another webhook-id, another
    secret or an old timestamp does not."""
    h = wh
    made = endpoint(h, receiver, "pat")
    h.ok("pat", "POST", f"/webhooks/endpoints/{made['id']}/test")
    drain(h, sender)
    [got] = receiver.verified("pat")
    hook = Webhook(made["secret"])
    assert hook.verify(got.body, got.headers)["type"] == "webhook.test"
    flipped = bytearray(got.body)
    flipped[len(flipped) // 2] ^= 0x01
    for body, headers in (
        (bytes(flipped), got.headers),
        (got.body.replace(b'"pat"', b'"bob"'), got.headers),
        (got.body, {**got.headers, "webhook-id": "msg_other"}),
        (
            got.body,
            {**got.headers, "webhook-timestamp": str(int(got.headers["webhook-timestamp"]) + 1)},
        ),
    ):
        with pytest.raises(WebhookVerificationError):
            hook.verify(body, headers)
    other = h.ok("pat", "POST", "/webhooks/endpoints", {"url": receiver.url("other")})["secret"]
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(got.body, got.headers)

    # Signed ten minutes ago: the receiver's library refuses the stale timestamp.
    stale = Sender(
        sender.limits, allow_private=True, now=lambda: datetime.now(UTC) - timedelta(minutes=10)
    )
    try:
        h.ok("pat", "POST", f"/webhooks/deliveries/{_log(h, 'pat')[0]['id']}/replay")
        drain(h, stale)
    finally:
        stale.close()
    assert len(receiver.received) == 2 and not receiver.received[-1].verified
