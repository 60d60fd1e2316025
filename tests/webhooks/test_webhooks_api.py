"""The webhook routes: secrets shown once and kept sealed, subscriptions, refusals with their
codes, disabling, the delivery log's pages, and Idempotency-Key on every state change."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from adjudge.app import Settings
from adjudge.app.webhooks import secret_context
from adjudge.errors import Error
from adjudge.store import Store, outbox
from adjudge.webhooks import Sender
from support.harness import Harness, make_harness
from support.receiver import Receiver, drain, endpoint


def _create(h: Harness, who: str, url: str, key: str | None = None, **fields: Any) -> Any:
    headers = {"Idempotency_Key": key} if key else {}
    return h.call(who, "POST", "/webhooks/endpoints", {"url": url, **fields}, **headers)


def test_the_secret_is_shown_once_and_stored_sealed(wh: Harness) -> None:
    """The creation answers the whsec_ secret; a retry with the same key answers the same one;
    no read returns it; the database holds it only sealed, for that endpoint alone."""
    h = wh
    first = _create(h, "pat", "https://hooks.example.com/a", key="k1")
    assert first.status_code == 201
    made = first.json()
    assert made["secret"].startswith("whsec_") and made["enabled"] is True
    again = _create(h, "pat", "https://hooks.example.com/a", key="k1")
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == made
    assert (
        _create(h, "pat", "https://hooks.example.com/a", key="k2").json()["secret"]
        != made["secret"]
    )
    listed = h.ok("pat", "GET", "/webhooks/endpoints")["endpoints"]
    assert len(listed) == 2 and all("secret" not in e for e in listed)
    assert "secret" not in h.ok("pat", "GET", f"/webhooks/endpoints/{made['id']}")
    with h.app.store.read() as tx:
        rows = tx.conn.execute(
            select(outbox.webhook_endpoints.c.id, outbox.webhook_endpoints.c.secret)
        ).all()
        idem = tx.conn.execute(select(outbox.s.idempotency.c.body)).all()
    sealed = dict(rows)[made["id"]]
    assert made["secret"] not in sealed and sealed.startswith("v1.")
    assert all(made["secret"] not in str(r.body) for r in idem)  # the stored answer is sealed too
    box = h.app.secrets
    assert box.open_text(sealed, context=secret_context(made["id"])) == made["secret"]
    other = next(i for i in dict(rows) if i != made["id"])
    with pytest.raises(Error) as refused:
        box.open_text(sealed, context=secret_context(other))
    assert refused.value.code == "SECRET_UNREADABLE"


def test_refusals_have_stable_codes(sqlite_store: Store) -> None:
    """Bad URLs, unknown event types, too many endpoints, others' endpoints and deliveries,
    and a missing key are each refused with their code; by default private addresses are."""
    h = make_harness(sqlite_store)  # the default settings: public addresses only

    def code(r: Any) -> tuple[int, str]:
        return r.status_code, r.json()["error"]["code"]

    assert code(_create(h, "pat", "http://127.0.0.1:9/x")) == (400, "WEBHOOK_URL_PRIVATE")
    assert code(_create(h, "pat", "https://u:p@example.com/")) == (400, "WEBHOOK_URL_CREDENTIALS")
    assert code(_create(h, "pat", "ftp://example.com/")) == (400, "WEBHOOK_URL_INVALID")
    assert code(_create(h, "pat", "https://example.com/", event_types=["task.nope"])) == (
        400,
        "WEBHOOK_EVENT_TYPE_UNKNOWN",
    )
    assert code(_create(h, "pat", "https://example.com/", event_types=[])) == (
        400,
        "WEBHOOK_EVENT_TYPE_UNKNOWN",
    )
    assert h.call(None, "GET", "/webhooks/endpoints").status_code == 401
    made = [_create(h, "pat", f"https://example.com/{i}").json() for i in range(10)]
    assert code(_create(h, "pat", "https://example.com/11")) == (409, "WEBHOOK_ENDPOINT_LIMIT")
    mine = made[0]["id"]
    for method, path in (
        ("GET", f"/webhooks/endpoints/{mine}"),
        ("DELETE", f"/webhooks/endpoints/{mine}"),
        ("POST", f"/webhooks/endpoints/{mine}/test"),
    ):
        assert h.refused("bob", method, path) == (404, "WEBHOOK_ENDPOINT_NOT_FOUND")
    assert h.refused("bob", "GET", f"/webhooks/deliveries?endpoint={mine}") == (
        404,
        "WEBHOOK_ENDPOINT_NOT_FOUND",
    )
    delivery = h.ok("pat", "POST", f"/webhooks/endpoints/{mine}/test")["id"]
    for method, path in (
        ("GET", f"/webhooks/deliveries/{delivery}"),
        ("POST", f"/webhooks/deliveries/{delivery}/replay"),
    ):
        assert h.refused("bob", method, path) == (404, "WEBHOOK_DELIVERY_NOT_FOUND")
    assert h.refused("pat", "GET", "/webhooks/deliveries?status=lost") == (422, "INVALID_REQUEST")
    assert h.refused("pat", "GET", "/webhooks/deliveries?cursor=nope") == (400, "CURSOR_INVALID")
    # Deleting one makes room for another.
    h.ok("pat", "DELETE", f"/webhooks/endpoints/{mine}")
    assert _create(h, "pat", "https://example.com/11").status_code == 201


def test_the_endpoints_an_account_makes_are_bounded_deleted_ones_counted(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deleted endpoint stays on record with its delivery log, so an account makes a bounded
    number of endpoints (here three), deleted ones counted: the next is ``409
    WEBHOOK_ENDPOINT_LIMIT``, its message naming the bound, nothing made, however few are
    enabled; a retry of one made answers it again; another account is counted apart (before,
    making and deleting grew the table at will)."""
    from adjudge.app import webhooks as app_webhooks  # noqa: PLC0415

    monkeypatch.setattr(app_webhooks, "MAX_ENDPOINTS_MADE", 3)
    h = make_harness(sqlite_store)
    first = _create(h, "pat", "https://example.com/0", key="e0")
    assert first.status_code == 201
    for n in (1, 2):
        made = _create(h, "pat", f"https://example.com/{n}").json()
        h.ok("pat", "DELETE", f"/webhooks/endpoints/{made['id']}")
    refused = _create(h, "pat", "https://example.com/3")
    assert (refused.status_code, refused.json()["error"]["code"]) == (
        409,
        "WEBHOOK_ENDPOINT_LIMIT",
    )
    assert "at most 3 endpoints, deleted ones too" in refused.json()["error"]["message"]
    again = _create(h, "pat", "https://example.com/0", key="e0")
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert len(h.ok("pat", "GET", "/webhooks/endpoints")["endpoints"]) == 1
    assert len(h.ok("pat", "GET", "/webhooks/endpoints?disabled=true")["endpoints"]) == 2
    assert _create(h, "bob", "https://example.com/b").status_code == 201


def test_a_subscription_gets_only_its_event_types(
    wh: Harness, receiver: Receiver, sender: Sender
) -> None:
    """An endpoint subscribed to payouts hears the payout of a passing task, not its verdict."""
    h = wh
    endpoint(h, receiver, "ann", event_types=["task.payout"])
    endpoint(h, receiver, "ann", name="all")
    tid = h.post("auto")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A long enough result."})
    h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    drain(h, sender)
    assert [r.payload["type"] for r in receiver.verified("ann")] == ["task.payout"]
    assert sorted(r.payload["type"] for r in receiver.verified("all")) == [
        "task.payout",
        "task.verdict",
    ]


def test_a_deleted_endpoint_gets_nothing_more(
    wh: Harness, receiver: Receiver, sender: Sender
) -> None:
    """Deleting disables for good: pending deliveries end failed, new events skip it, replays
    and test events are refused, and deleting again answers the same."""
    h = wh
    made = endpoint(h, receiver, "pat")
    pending = h.ok("pat", "POST", f"/webhooks/endpoints/{made['id']}/test")
    gone = h.ok("pat", "DELETE", f"/webhooks/endpoints/{made['id']}")
    assert gone["enabled"] is False and gone["disabled_at"]
    assert h.ok("pat", "DELETE", f"/webhooks/endpoints/{made['id']}") == gone
    [d] = h.ok("pat", "GET", "/webhooks/deliveries")["deliveries"]
    assert d["id"] == pending["id"] and d["status"] == "failed"
    assert d["last_error"] == "the endpoint was disabled"
    h.post("manual")
    tid = h.post("manual")
    h.ok("pat", "POST", f"/tasks/{tid}/cancel")
    assert drain(h, sender) == 0 and receiver.received == []
    assert h.refused("pat", "POST", f"/webhooks/deliveries/{d['id']}/replay") == (
        409,
        "WEBHOOK_ENDPOINT_DISABLED",
    )
    assert h.refused("pat", "POST", f"/webhooks/endpoints/{made['id']}/test") == (
        409,
        "WEBHOOK_ENDPOINT_DISABLED",
    )


def test_enabled_endpoints_come_whole_and_deleted_ones_by_page(wh: Harness) -> None:
    """The listing answers the enabled endpoints, oldest first; ``disabled=true`` pages the
    deleted ones, newest deleted first; a bad limit or cursor is refused with its code."""
    h = wh
    made = [_create(h, "pat", f"https://hooks.example.com/{n}").json() for n in range(4)]
    for n in (2, 0, 3):
        h.advance(seconds=1)
        h.ok("pat", "DELETE", f"/webhooks/endpoints/{made[n]['id']}")
    listed = h.ok("pat", "GET", "/webhooks/endpoints")
    assert [e["id"] for e in listed["endpoints"]] == [made[1]["id"]]
    assert listed["next_cursor"] is None
    first = h.ok("pat", "GET", "/webhooks/endpoints?disabled=true&limit=2")
    assert [e["id"] for e in first["endpoints"]] == [made[3]["id"], made[0]["id"]]
    assert all(not e["enabled"] and "secret" not in e for e in first["endpoints"])
    rest = h.ok("pat", "GET", f"/webhooks/endpoints?disabled=true&cursor={first['next_cursor']}")
    assert [e["id"] for e in rest["endpoints"]] == [made[2]["id"]]
    assert rest["next_cursor"] is None
    assert h.ok("bob", "GET", "/webhooks/endpoints?disabled=true")["endpoints"] == []
    assert h.refused("pat", "GET", "/webhooks/endpoints?disabled=true&limit=0")[1] == (
        "INVALID_REQUEST"
    )
    assert h.refused("pat", "GET", "/webhooks/endpoints?disabled=true&cursor=nope") == (
        400,
        "CURSOR_INVALID",
    )


def test_the_delivery_log_pages_newest_first(wh: Harness) -> None:
    """limit and cursor walk every delivery once, newest first; one delivery shows its
    event."""
    h = wh
    made = h.ok("pat", "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/x"})
    queued = []
    for _ in range(5):
        queued.append(h.ok("pat", "POST", f"/webhooks/endpoints/{made['id']}/test")["id"])
        h.advance(seconds=1)
    seen, cursor = [], None
    while True:
        page = h.ok(
            "pat", "GET", "/webhooks/deliveries?limit=2" + (f"&cursor={cursor}" if cursor else "")
        )
        assert len(page["deliveries"]) <= 2
        seen += [d["id"] for d in page["deliveries"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == queued[::-1]
    one = h.ok("pat", "GET", f"/webhooks/deliveries/{queued[0]}")
    assert one["payload"]["type"] == "webhook.test"
    assert one["payload"]["data"] == {"endpoint_id": made["id"], "account": "pat"}
    assert one["status"] == "pending" and one["max_attempts"] == 10
    assert h.ok("ann", "GET", "/webhooks/deliveries")["deliveries"] == []


def test_test_events_are_rate_limited_per_endpoint(wh: Harness) -> None:
    """An endpoint takes 10 test events an hour; the 11th is 429 RATE_LIMITED with Retry-After
    and queues nothing; a replayed Idempotency-Key is not counted; another endpoint has its own
    allowance, and the next hour a new one."""
    h = wh
    first = h.ok("pat", "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/a"})["id"]
    other = h.ok("pat", "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/b"})["id"]
    h.advance(minutes=20)  # the clock starts on the hour
    test = f"/webhooks/endpoints/{first}/test"
    once = h.ok("pat", "POST", test, Idempotency_Key="t-1")["id"]
    for _ in range(9):
        h.ok("pat", "POST", test)
    assert h.ok("pat", "POST", test, Idempotency_Key="t-1")["id"] == once  # a replay, not a use
    r = h.call("pat", "POST", test)
    assert r.status_code == 429 and r.json()["error"]["code"] == "RATE_LIMITED"
    assert r.headers["Retry-After"] == str(40 * 60 + 1)
    assert "10 test events an hour" in r.json()["error"]["message"]
    listed = h.ok("pat", "GET", f"/webhooks/deliveries?endpoint={first}&limit=200")
    assert len(listed["deliveries"]) == 10
    h.ok("pat", "POST", f"/webhooks/endpoints/{other}/test")
    h.advance(minutes=40)
    h.ok("pat", "POST", test)


def test_an_endpoint_made_again_does_not_start_its_accounts_count_again(wh: Harness) -> None:
    """An account's endpoints take 10 test events an hour each and 100 in all: deleting used
    endpoints and making new ones (at the same URL, say) sends no more than that."""
    h = wh
    h.advance(minutes=20)
    sent = 0
    for _ in range(3):
        made = [
            h.ok("pat", "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/x"})["id"]
            for _ in range(10)
        ]
        for made_id in made:
            for _ in range(10):
                r = h.call("pat", "POST", f"/webhooks/endpoints/{made_id}/test")
                if r.status_code == 429:
                    assert "100 test events an hour in all" in r.json()["error"]["message"]
                    continue
                assert r.status_code == 201, r.text
                sent += 1
            h.ok("pat", "DELETE", f"/webhooks/endpoints/{made_id}")
    assert sent == 100
    h.advance(minutes=40)
    again = h.ok("pat", "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/x"})["id"]
    h.ok("pat", "POST", f"/webhooks/endpoints/{again}/test")  # a new hour


def test_the_poster_hears_when_a_sealed_reveal_is_due(sqlite_store: Store) -> None:
    """A sealed task's finalize queues task.reveal_due, with its due time, for the parties;
    a broken seal queues task.escalated."""
    from tests.webhooks.conftest import SETTINGS  # noqa: PLC0415

    from adjudge.app.wiring import SignedReceipts  # noqa: PLC0415
    from adjudge.market import seal  # noqa: PLC0415
    from adjudge.receipts import SigningKey  # noqa: PLC0415

    h = make_harness(
        sqlite_store,
        settings=SETTINGS,
        real_checker=True,
        issuer=SignedReceipts(SigningKey.generate()),
    )
    h.ok("pat", "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/x"})
    commitment = seal.commit({"expected_answer": "42"}, "a-salt-of-sixteen")
    tid = h.post("auto", criteria={"max_length": 100}, seal=commitment)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "42"})
    waiting = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    wrong = {"criteria": {"expected_answer": "41"}, "salt": "a-salt-of-sixteen"}
    assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", wrong) == (409, "SEAL_MISMATCH")
    found = [
        h.ok("pat", "GET", f"/webhooks/deliveries/{d['id']}")["payload"]
        for d in h.ok("pat", "GET", "/webhooks/deliveries")["deliveries"]
    ]
    due = next(p for p in found if p["type"] == "task.reveal_due")
    assert (
        due["data"]["task_id"] == tid and due["data"]["due_at"] == waiting["seal"]["reveal_due_at"]
    )
    assert any(p["type"] == "task.escalated" and p["data"]["task_id"] == tid for p in found)


def test_replays_are_bounded_per_account(sqlite_store: Store, receiver: Receiver) -> None:
    """A replay is a request to a URL the caller chose, as a test event is: an account's
    replays are counted in the same windows (``webhooks_replays``, 1,000 an hour by default);
    the next is 429 RATE_LIMITED with Retry-After and queues nothing; a retried
    Idempotency-Key is not counted; another account has its own; the next hour allows more.
    (A test event replayed each time its attempt was recorded sent its URL a request each
    time, without end: the bound on test events bounded nothing.)"""
    settings = Settings(webhooks_allow_private=True, webhooks_replays=5)
    assert Settings().webhooks_replays == 1000
    h = make_harness(sqlite_store, settings=settings)
    made = endpoint(h, receiver, "pat")
    other = endpoint(h, receiver, "ann")
    h.advance(minutes=20)  # the clock starts on the hour
    d = h.ok("pat", "POST", f"/webhooks/endpoints/{made['id']}/test")
    theirs = h.ok("ann", "POST", f"/webhooks/endpoints/{other['id']}/test")
    with Sender(allow_private=True) as sender:
        drain(h, sender)
        replay = f"/webhooks/deliveries/{d['id']}/replay"
        for n in range(5):
            h.ok("pat", "POST", replay, Idempotency_Key=f"r-{n}")
            assert drain(h, sender) == 1
        assert h.ok("pat", "POST", replay, Idempotency_Key="r-0")["id"] == d["id"]  # not a use
        r = h.call("pat", "POST", replay)
        assert r.status_code == 429 and r.json()["error"]["code"] == "RATE_LIMITED"
        assert r.headers["Retry-After"] == str(40 * 60 + 1)
        assert "at most 5 replays an hour" in r.json()["error"]["message"]
        assert drain(h, sender) == 0
        assert len(receiver.verified("pat")) == 6
        h.ok("ann", "POST", f"/webhooks/deliveries/{theirs['id']}/replay")
        h.advance(minutes=40)
        h.ok("pat", "POST", replay)
        assert drain(h, sender) == 2
    h.ledger()
