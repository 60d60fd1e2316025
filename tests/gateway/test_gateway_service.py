"""The gateway end to end over real HTTP on loopback: the service forwards calls, signed, to a
provider behind the unmodified ``goassay-provider-verify`` middleware (configured only with its
provider id and the service's JWKS URL), verifies the answers, and lets the verdict decide the
charge — with a signed receipt for every call and the books audited after each test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adjudge.receipts import canonical_bytes, verify
from adjudge.store import Store
from adjudge.store import calls as calls_db
from support import http, live
from support.audit import audit
from support.harness import FUNDS, make_harness
from support.weather import PRICE, PROVIDER, World, tool, weather_world


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    """A served adjudge with a provider behind the real middleware, its tool and policy."""
    with weather_world(store) as w:
        yield w
    audit(store)


def test_a_good_answer_settles_and_pays_the_provider(world: World) -> None:
    """Signed, accepted by the provider's verifier, verified PASS: the caller is charged the
    price, the provider credited, and the signed receipt verifies offline."""
    r = world.call({"city": "berlin", "days": 3})
    assert r.status_code == 200, r.text
    answer = r.json()
    got = (answer["status"], answer["verdict"], answer["payment"])
    assert got == ("settled", "PASS", "settle"), answer["error"]
    assert answer["chargedPrice"] == {"amount": str(PRICE), "asset": "USDC", "decimals": 6}
    assert answer["output"]["location"] == {"lat": 52.52, "lon": 13.41}
    assert [s["call_id"] for s in world.script.seen] == [answer["intentId"]]
    assert world.h.balance("wallet:ann") == FUNDS - PRICE
    assert world.h.balance(f"held:{PROVIDER}") == PRICE
    envelope = canonical_bytes(answer["receipt"])
    assert verify(envelope, world.signer.keyid).verdict.value == "PASS"
    view = world.h.ok("ann", "GET", f"/gateway/calls/{answer['intentId']}")
    assert view["state"] == "done" and view["record"]["verdict"] == "PASS"


@pytest.mark.parametrize(
    ("answer", "status", "verdict", "strike"),
    [
        ("bad", "refunded", "FAIL", True),
        ("misapplied", "voided", "MISAPPLIED", False),
        ("empty", "settled", "EMPTY_UNVERIFIED", False),
        ("slow", "refunded", None, False),
        ("error", "refunded", None, False),
    ],
)
def test_the_verdict_decides_the_charge(
    world: World, answer: str, status: str, verdict: str | None, strike: bool
) -> None:
    """A contract-breaking answer refunds and strikes; a misapplied rule voids; an empty answer
    follows the empty-result policy; a time-out or a 5xx is a request error that refunds."""
    world.script.answer = answer
    r = world.call({"city": "berlin"})
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["status"], got["verdict"], got["strike"]) == (status, verdict, strike), got
    charged = PRICE if status == "settled" else 0
    assert world.h.balance("wallet:ann") == FUNDS - charged
    assert world.h.balance(f"held:{PROVIDER}") == charged
    if verdict is None:
        assert got["error"]["kind"] == "request_error"
    assert got["receiptId"]


def test_a_redirect_is_refunded_with_its_location_quoted_short(world: World) -> None:
    """A provider answering a paid call with a redirect to an 8 KB address: the call is
    refunded with its receipt, and its error quotes at most 200 characters of the address,
    saying it was cut (the whole header reached the caller and the call's record)."""
    world.script.answer = "redirect"
    world.script.location = "https://elsewhere.example/" + "x" * 8000
    r = world.call({"city": "berlin"})
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["status"], got["verdict"]) == ("refunded", None), got
    assert got["error"]["kind"] == "request_error" and got["receiptId"]
    message = got["error"]["message"]
    assert "https://elsewhere.example/xxx" in message and "[cut from 8026 characters]" in message
    assert len(message) < 400, message
    assert world.h.balance("wallet:ann") == FUNDS
    stored = world.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    assert "x" * 300 not in json.dumps(stored)


def test_a_retry_replays_without_calling_the_provider(world: World) -> None:
    """The same Idempotency-Key: the stored answer, the provider called once, charged once;
    the key for other arguments is IDEMPOTENCY_KEY_REUSED."""
    first = world.call({"city": "berlin"}, key="k-1")
    again = world.call({"city": "berlin"}, key="k-1")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    assert len(world.script.seen) == 1
    assert world.h.balance("wallet:ann") == FUNDS - PRICE
    other = world.call({"city": "paris"}, key="k-1")
    assert (other.status_code, other.json()["error"]["code"]) == (409, "IDEMPOTENCY_KEY_REUSED")


def test_refusals_before_the_provider_charge_nothing(world: World) -> None:
    """Arguments that do not fit the input schema, or a caller who cannot pay: refused with a
    code before the provider is called; nothing moves."""
    r = world.call({"town": "berlin"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "TOOL_ARGUMENTS_INVALID")
    world.h.app.accounts.create(None, "poor", ["agent"])
    poor = world.h.app.accounts.create(None, "poorer", ["agent"]).value["api_key"]
    world.h.keys["poorer"] = poor
    r = world.call({"city": "berlin"}, who="poorer")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "INSUFFICIENT_FUNDS")
    assert world.script.seen == []
    assert world.h.balance("wallet:ann") == FUNDS


def test_a_provider_that_refuses_the_signature_is_a_request_error(world: World) -> None:
    """A tool whose provider id is not the one the provider's verifier expects: the middleware
    refuses (WRONG_PROVIDER); the gateway records a request error and refunds."""
    world.h.keys["other"] = world.h.app.accounts.create(None, "other", ["provider"]).value[
        "api_key"
    ]
    doc = tool(world.provider_url, provider_id="other")
    doc["name"] = "weather_elsewhere"
    doc["contract"] = {"version": "1"}
    doc["policy"] = None
    made = world.h.ok("other", "POST", "/tools/callable", {"tool": doc})
    assert made["name"] == "weather_elsewhere"
    r = http.post(
        f"{world.service}/api/v1/gateway/calls",
        json={"tool": "weather_elsewhere", "arguments": {"city": "berlin"}},
        headers={"Authorization": f"Bearer {world.h.keys['ann']}"},
        timeout=30,
    )
    got = r.json()
    assert (
        got["status"] == "refunded"
        and got["error"]["code"] == "GATEWAY_SIGNATURE_REFUSED:WRONG_PROVIDER"
    )
    assert world.h.balance("wallet:ann") == FUNDS


def _declare_terms(world: World) -> None:
    """The provider declares quality terms: a failure rate of 1/10, tested from 3 calls."""
    world.h.ok(
        PROVIDER,
        "POST",
        "/tools",
        {
            "contract": {"tool": "weather_unused", "version": "1"},
            "quality": {"declared_failure_rate": "1/10", "sample_gate": 3, "window_days": 7},
        },
    )


def test_a_window_past_the_calendar_is_refused_and_stored_terms_never_stop_a_call(
    world: World, store: Store
) -> None:
    """A window of 999,999,999 days reached back before year 1: every call the provider
    answered failed in its commit (500), and the upkeep's recovery, counting the call in the
    same window, failed alike, so the caller's price stayed reserved for good. Such terms are
    refused (10 years at most; one past what a date holds is refused too, not a 500); terms
    stored before that no longer parse move no window, and the provider's calls end."""
    contract = {"tool": "weather_unused", "version": "1"}
    for days in (3651, 999_999_999, 10**10):
        terms = {"declared_failure_rate": "1/10", "sample_gate": 3, "window_days": days}
        refused = world.h.refused(
            PROVIDER, "POST", "/tools", {"contract": contract, "quality": terms}
        )
        assert refused == (400, "QUALITY_TERMS_INVALID"), days
    _declare_terms(world)
    with store.write() as tx:  # as stored before the bound
        stored = {"declared_failure_rate": "1/10", "sample_gate": 3, "window_days": 999_999_999}
        calls_db.set_terms(tx, PROVIDER, stored, world.h.clock.now())
    got = world.call({"city": "berlin"})
    assert got.status_code == 200, got.text
    assert world.h.balance("wallet:ann") == FUNDS - PRICE
    assert world.h.balance(f"held:{PROVIDER}") == PRICE


def test_observed_failures_feed_quality_and_propose_a_penalty(world: World) -> None:
    """Only calls the gateway forwarded count: failing ones raise the provider's failure rate
    and, past the sample gate, propose a penalty."""
    _declare_terms(world)
    world.script.answer = "bad"
    for _ in range(4):
        answer = world.call({"city": "berlin"}).json()
        assert answer["verdict"] == "FAIL", answer.get("error")
    quality = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    assert quality["window"]["fail"] == 4 and quality["failure_rate"] == "1/1"
    assert quality["proposal"] is not None and quality["proposal"]["status"] == "pending"


def test_a_providers_own_calls_do_not_dilute_its_failure_rate(world: World) -> None:
    """A provider calling its own tool adds nothing to its window: twenty of its own passes
    (verified, charged and receipted as any call) beside four failing calls and a pass of
    another caller still leave a rate of 4/5 and a proposed penalty (counted, the passes made
    the rate 4/25, which the declared 1/10 explains)."""
    _declare_terms(world)
    world.h.ok("root", "POST", f"/accounts/{PROVIDER}/deposits", {"amount": str(20 * PRICE)})
    for _ in range(20):
        own = world.call({"city": "berlin"}, who=PROVIDER).json()
        assert (own["verdict"], own["status"]) == ("PASS", "settled"), own.get("error")
        assert own["receiptId"]
    assert world.call({"city": "berlin"}).json()["verdict"] == "PASS"
    world.script.answer = "bad"
    for _ in range(4):
        answer = world.call({"city": "berlin"}).json()
        assert answer["verdict"] == "FAIL", answer.get("error")
    quality = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    assert (quality["window"]["pass"], quality["window"]["fail"]) == (1, 4)
    assert quality["failure_rate"] == "4/5"
    assert quality["proposal"] is not None and quality["proposal"]["status"] == "pending"
    wider = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality?window_days=30")
    assert (wider["window"]["pass"], wider["window"]["fail"]) == (1, 4)


def test_a_tools_own_view_says_how_it_is_called_and_judged(world: World) -> None:
    """One tool's view adds its endpoint, input schema and contract (what a caller reads
    before paying); the listing leaves them out."""
    doc = tool(world.provider_url)
    view = world.h.ok(PROVIDER, "GET", "/tools/weather_forecast")
    assert view["endpoint"] == {**doc["endpoint"], "arguments": view["endpoint"]["arguments"]}
    assert world.h.ok("root", "GET", "/tools/weather_forecast")["endpoint"] == view["endpoint"]
    caller = world.h.ok("ann", "GET", "/tools/weather_forecast")  # how, never where
    assert caller["endpoint"] == {
        k: v for k, v in view["endpoint"].items() if k not in ("base_url", "authority")
    }
    view = caller
    assert view["endpoint"]["arguments"]["city"] == {"in": "path", "name": "city"}
    assert view["input_schema"] == doc["input_schema"]
    assert view["contract"] == {"tool": "weather_forecast", **doc["contract"]}
    listed = world.h.ok("ann", "GET", "/tools")["tools"][0]
    assert not {"endpoint", "input_schema", "contract"} & set(listed)
    assert {k: v for k, v in view.items() if k in listed} == listed


def test_internal_providers_are_refused_by_default(store: Store) -> None:
    """Without private providers allowed, a tool on a loopback address is refused before
    anything is reserved."""
    h = make_harness(store)
    h.keys[PROVIDER] = h.app.accounts.create(None, PROVIDER, ["provider"]).value["api_key"]
    doc = tool("http://127.0.0.1:9/v1")
    doc["policy"] = None
    h.ok(PROVIDER, "POST", "/tools/callable", {"tool": doc})
    r = h.call(
        "ann", "POST", "/gateway/calls", {"tool": "weather_forecast", "arguments": {"city": "x"}}
    )
    assert (r.status_code, r.json()["error"]["code"]) == (400, "PROVIDER_ADDRESS_REFUSED")
    assert h.balance("wallet:ann") == FUNDS
    json.dumps(h.ok("ann", "GET", "/tools/weather_forecast"))


def report(world: World, call_id: str, who: str = "ann", reason: str = "stale") -> Any:
    return world.h.call(who, "POST", f"/calls/{call_id}/report", {"reason": reason})


def test_a_report_opens_a_review_and_moves_nothing(world: World) -> None:
    """The caller reports a settled call by its deadline: a review opens, nothing else — no
    refund, no strike, the provider's measured rate unchanged; only the caller may report,
    once; anyone else, a refunded call, or a late report is refused with a code."""
    settled = world.call({"city": "berlin"}).json()
    world.script.answer = "bad"
    refunded = world.call({"city": "berlin"}).json()
    before = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    view = world.h.ok("ann", "GET", f"/gateway/calls/{settled['intentId']}")
    assert view["report_deadline"] == "2026-01-04T12:00:00+00:00"  # the default 72 hours
    by_another = report(world, settled["intentId"], who="pat")
    assert (by_another.status_code, by_another.json()["error"]["code"]) == (403, "NOT_A_PARTY")
    r = report(world, refunded["intentId"])
    assert (r.status_code, r.json()["error"]["code"]) == (409, "REPORT_NOT_ALLOWED")
    r = report(world, settled["intentId"], reason="The highs are from last week.")
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "open" and r.json()["filed_by"] == "ann"
    again = report(world, settled["intentId"])
    assert (again.status_code, again.json()["error"]["code"]) == (409, "REPORT_EXISTS")
    assert world.h.balance("wallet:ann") == FUNDS - PRICE
    assert world.h.balance(f"held:{PROVIDER}") == PRICE
    after = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    assert after["window"] == before["window"] and after["upheld_reports"] == 0
    queue = world.h.ok("root", "GET", "/call-reports?status=open")["reports"]
    assert [q["call_id"] for q in queue] == [settled["intentId"]]
    assert world.h.refused("ann", "GET", "/call-reports") == (403, "ROLE_REQUIRED")
    world.script.answer = "good"
    late = world.call({"city": "paris"}).json()
    world.h.clock.advance(hours=72, seconds=1)
    r = report(world, late["intentId"])
    assert (r.status_code, r.json()["error"]["code"]) == (409, "REPORT_WINDOW_CLOSED")


def test_an_upheld_report_refunds_against_its_receipt_and_never_strikes(world: World) -> None:
    """An admin upholds the report: a human FAIL about the call, signed into a receipt that
    supersedes the call's own, and the charge goes back from the provider's wallet in the same
    transaction; the provider gets no strike and its measured rate is unchanged. A second
    ruling is refused, and so is a ruling by the call's own provider."""
    settled = world.call({"city": "berlin"}).json()
    call_id = settled["intentId"]
    assert report(world, call_id).status_code == 201
    ruling = {"upheld": True, "reasons": ["The forecast was issued a week earlier."]}
    path = f"/calls/{call_id}/report/ruling"
    assert world.h.refused(PROVIDER, "POST", path, ruling) == (403, "ROLE_REQUIRED")
    ruled = world.h.ok("root", "POST", path, ruling)
    assert (ruled["status"], ruled["refunded_minor"]) == ("upheld", PRICE)
    assert world.h.balance("wallet:ann") == FUNDS
    assert world.h.balance(f"held:{PROVIDER}") == 0
    assert world.h.refused("root", "POST", path, ruling) == (409, "REPORT_RULED")
    envelope = world.h.ok("root", "GET", f"/receipts/{ruled['receipt_id']}/envelope")
    receipt = verify(canonical_bytes(envelope), world.signer.keyid)
    assert receipt.verdict.value == "FAIL" and receipt.about == f"call:{call_id}"
    original = verify(canonical_bytes(settled["receipt"]), world.signer.keyid)
    assert receipt.supersedes == original.receipt_id and original.about == f"call:{call_id}"
    quality = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    assert quality["window"]["fail"] == 0 and quality["upheld_reports"] == 1
    view = world.h.ok("ann", "GET", f"/gateway/calls/{call_id}")
    assert view["report"]["status"] == "upheld" and view["record"]["effect"]["strike"] is False


def test_a_dismissed_report_changes_nothing(world: World) -> None:
    """Dismissed: recorded with its reasons; no receipt, no money, no strike."""
    call_id = world.call({"city": "berlin"}).json()["intentId"]
    assert report(world, call_id).status_code == 201
    body = {"upheld": False, "reasons": ["The forecast matches the issue time."]}
    ruled = world.h.ok("root", "POST", f"/calls/{call_id}/report/ruling", body)
    assert (ruled["status"], ruled["receipt_id"], ruled["refunded_minor"]) == (
        "dismissed",
        None,
        None,
    )
    assert world.h.balance(f"held:{PROVIDER}") == PRICE
    assert world.h.ok("root", "GET", "/call-reports?status=open")["reports"] == []


def test_nobody_rules_on_a_report_of_their_own_call(world: World) -> None:
    """An admin who made the call cannot rule on its report; another admin can."""
    call_id = world.call({"city": "berlin"}, who="root").json()["intentId"]
    assert report(world, call_id, who="root").status_code == 201
    path, body = f"/calls/{call_id}/report/ruling", {"upheld": True, "reasons": ["stale"]}
    assert world.h.refused("root", "POST", path, body) == (403, "CONFLICT_OF_INTEREST")
    made = world.h.app.accounts.create(None, "judge", ["admin"])
    world.h.keys["judge"] = made.value["api_key"]
    assert world.h.ok("judge", "POST", path, body)["refunded_minor"] == PRICE
    assert world.h.balance("wallet:root") == FUNDS


def test_a_forwarded_call_tells_its_parties_by_webhook(world: World) -> None:
    """The gateway's call writes ``call.settled`` to the caller's and the provider's endpoints
    in the call's own transaction, naming the call's receipt."""

    def served(who: str, method: str, path: str, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {world.h.keys[who]}"}
        r = http.request(method, f"{world.service}/api/v1{path}", json=body, headers=headers)
        assert r.status_code < 300, r.text
        return r.json()

    for who in ("ann", PROVIDER):  # the served app allows loopback endpoints
        served(who, "POST", "/webhooks/endpoints", {"url": "http://127.0.0.1:9/hook"})
    answer = world.call({"city": "berlin"}).json()
    for who in ("ann", PROVIDER):
        [queued] = served(who, "GET", "/webhooks/deliveries")["deliveries"]
        shown = served(who, "GET", f"/webhooks/deliveries/{queued['id']}")
        assert shown["payload"]["type"] == "call.settled", shown
        assert shown["payload"]["data"]["receipt_id"] == answer["receiptId"]


def test_a_world_on_a_port_an_earlier_world_used_is_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider's middleware caches a JWKS per URL for its whole process: a second world on
    the first one's port (the system hands ports out again) still has its own keys fetched, so
    its first call settles instead of being refused with UNKNOWN_KEY."""
    port = live.free_port()
    monkeypatch.setattr(live, "free_port", lambda: port)
    for n in range(2):
        store = Store(f"sqlite:///{tmp_path / f'world{n}.db'}")
        store.migrate()
        try:
            with weather_world(store) as w:
                answer = w.call({"city": "berlin"}).json()
                assert answer["status"] == "settled", answer["error"]
        finally:
            store.dispose()
