"""Paid-call verification through the HTTP API: tools, policies, calls, receipts, quality."""

from __future__ import annotations

import copy
import json
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from adjudge.receipts import SignedReceipts, SigningKey, canonical_bytes, verify, verify_chain
from adjudge.store import Store
from support.harness import Harness, make_harness

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"
CALL_TIME = datetime(2026, 11, 29, 19, 30, tzinfo=UTC)  # the requests say 19:00; the clock rules


def _example(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


def _harness(store: Store) -> tuple[Harness, SignedReceipts]:
    issuer = SignedReceipts(SigningKey.generate())
    h = make_harness(store, issuer=issuer)
    for provider in ("skycast", "findly"):
        h.keys[provider] = h.app.accounts.create(None, provider, ["provider"]).value["api_key"]
    h.clock.current = CALL_TIME
    return h, issuer


def _register_weather(h: Harness, quality: dict[str, Any] | None = None) -> None:
    body: dict[str, Any] = {"contract": _example("weather.contract.json")}
    if quality is not None:
        body["quality"] = quality
    made = h.ok("skycast", "POST", "/tools", body)
    assert made["tool"] == "weather.forecast" and made["provider"] == "skycast"
    policy = h.ok(
        "skycast",
        "POST",
        "/tools/weather.forecast/policies",
        {"policy": _example("weather.policy.json")},
    )
    assert policy["policy"] == "weather-forecast-standard" and policy["version"] == 1


def _call(call_id: str, response: str = "good", **extra: Any) -> dict[str, Any]:
    request = _example("weather.request.json")
    request["call_id"] = call_id
    return {
        "request": request,
        "response": _example(f"weather.{response}.response.json"),
        **extra,
    }


def _envelope(h: Harness, receipt_id: str) -> bytes:
    return canonical_bytes(h.ok("pat", "GET", f"/receipts/{receipt_id}/envelope"))


def test_verify_a_passing_and_a_failing_call(store: Store) -> None:
    """The shipped weather examples: PASS settles, FAIL refunds and strikes; both are stored
    with every check row and a signed receipt on the service's chain."""
    h, issuer = _harness(store)
    _register_weather(h)

    good = h.ok("pat", "POST", "/calls", _call("wx-1"))
    record = good["record"]
    assert record["verdict"] == "PASS" and record["payment"] == "settle"
    assert record["strike"] is False
    assert record["at"] == CALL_TIME.isoformat()  # the clock's time, not the request's
    assert good["verified_at"] == CALL_TIME.isoformat()

    h.advance(minutes=1)
    bad = h.ok("pat", "POST", "/calls", _call("wx-2", "bad"))
    assert bad["record"]["verdict"] == "FAIL"
    assert bad["record"]["payment"] == "refund" and bad["record"]["strike"] is True

    stored = h.ok("skycast", "GET", "/calls/wx-2")  # the provider reads its call too
    assert stored["record"] == bad["record"]
    names = {row["name"]: row["outcome"] for row in stored["record"]["checks"]}
    assert names["schema"] == "pass" and "fail" in names.values()
    assert stored["request"]["call_id"] == "wx-2"

    lines = [_envelope(h, good["receipt_id"]), _envelope(h, bad["receipt_id"])]
    receipts = [verify(line, issuer.fingerprint) for line in lines]
    assert receipts[0].verdict.value == "PASS"
    assert receipts[1].verdict.value == "FAIL"
    assert receipts[0].predicate["policyDecision"]["verdict"] == "PASS"
    assert receipts[1].predicate["policyDecision"]["strike"] is True
    assert verify_chain(lines, issuer.fingerprint).count == 2
    assert h.ok("pat", "GET", "/receipts/head")["digest"] == receipts[1].receipt_id


def test_a_retried_call_is_verified_and_counted_once(sqlite_store: Store) -> None:
    """Same Idempotency-Key: the stored answer; no key: CALL_EXISTS; the chain grows once."""
    h, _ = _harness(sqlite_store)
    _register_weather(h)
    first = h.call("pat", "POST", "/calls", _call("wx-1"), Idempotency_Key="k1")
    assert first.status_code == 201
    head = h.ok("pat", "GET", "/receipts/head")
    again = h.call("pat", "POST", "/calls", _call("wx-1"), Idempotency_Key="k1")
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert h.refused("pat", "POST", "/calls", _call("wx-1")) == (409, "CALL_EXISTS")
    reused = h.call("pat", "POST", "/calls", _call("wx-9"), Idempotency_Key="k1")
    assert reused.status_code == 409
    assert reused.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert h.ok("pat", "GET", "/receipts/head") == head
    assert h.ok("pat", "GET", "/calls/wx-1")["source"] == "reported"


def test_a_reported_calls_sampling_is_drawn_by_the_service(sqlite_store: Store) -> None:
    """A reported call's request names no sampling seed (``CALL_INPUT_INVALID``: the submitter
    would choose whether the meaning check looks); the service draws one, keeps it with the
    request, and a retry with the same key is the same call."""
    h, _ = _harness(sqlite_store)
    _register_weather(h)
    seeded = _call("wx-seeded")
    seeded["request"]["sample_seed"] = "0" * 32
    assert h.refused("pat", "POST", "/calls", seeded) == (400, "CALL_INPUT_INVALID")
    first = h.call("pat", "POST", "/calls", _call("wx-2"), Idempotency_Key="k2")
    again = h.call("pat", "POST", "/calls", _call("wx-2"), Idempotency_Key="k2")
    assert first.status_code == again.status_code == 201 and again.json() == first.json()
    seed = h.ok("pat", "GET", "/calls/wx-2")["request"]["sample_seed"]
    assert isinstance(seed, str) and len(seed) == 32 and int(seed, 16) >= 0


def test_quality_terms_finer_than_six_decimal_places_are_refused(sqlite_store: Store) -> None:
    """The exact penalty test runs in the commit of each of the provider's calls, in powers of
    the declared rate's and the confidence's denominators, one per observation: a rate of 4,000
    decimal places took 1 s a call at 300 observations (7.6 s at 1,000) on the thread that
    commits every account's writes. Such terms are refused; six places are declared."""
    h, _ = _harness(sqlite_store)
    contract = _example("weather.contract.json")
    fine = "0.5" + "0" * 4000 + "1"
    for terms in (
        {"declared_failure_rate": fine, "sample_gate": 5, "window_days": 7},
        {"declared_failure_rate": "1/1000001", "sample_gate": 5, "window_days": 7},
        {
            "declared_failure_rate": "0.02",
            "confidence": "0.9999999",
            "sample_gate": 5,
            "window_days": 7,
        },
    ):
        refused = h.refused("skycast", "POST", "/tools", {"contract": contract, "quality": terms})
        assert refused == (400, "QUALITY_TERMS_INVALID"), terms
    terms = {
        "declared_failure_rate": "0.123456",
        "confidence": "0.999999",
        "sample_gate": 5,
        "window_days": 7,
    }
    h.ok("skycast", "POST", "/tools", {"contract": contract, "quality": terms})


def test_bad_contracts_policies_and_calls_are_refused_with_codes(sqlite_store: Store) -> None:
    """The calls package's codes as 400; roles, ownership and duplicates as 403/404/409."""
    h, _ = _harness(sqlite_store)
    contract = _example("weather.contract.json")
    policy = _example("weather.policy.json")
    assert h.refused("skycast", "POST", "/tools", {"contract": {**contract, "bogus": 1}}) == (
        400,
        "CONTRACT_INVALID",
    )
    broken = {**contract, "output_schema": {"type": 12}}
    assert h.refused("skycast", "POST", "/tools", {"contract": broken}) == (
        400,
        "CONTRACT_SCHEMA_INVALID",
    )
    terms = {"declared_failure_rate": "2", "sample_gate": 5, "window_days": 7}
    assert h.refused("skycast", "POST", "/tools", {"contract": contract, "quality": terms}) == (
        400,
        "QUALITY_TERMS_INVALID",
    )
    assert h.refused("pat", "POST", "/tools", {"contract": contract}) == (403, "ROLE_REQUIRED")
    path = "/tools/weather.forecast/policies"
    assert h.refused("skycast", "POST", path, {"policy": policy}) == (404, "TOOL_NOT_FOUND")
    assert h.refused("pat", "POST", path, {"policy": policy}) == (403, "ROLE_REQUIRED")

    _register_weather(h)
    assert h.refused("skycast", "POST", "/tools", {"contract": contract}) == (
        409,
        "CONTRACT_EXISTS",
    )
    assert h.refused("findly", "POST", "/tools", {"contract": contract}) == (
        403,
        "NOT_TOOL_PROVIDER",
    )
    # The rules that judge a provider are its own (and an admin's), never a poster's or a rival's.
    assert h.refused("pat", "POST", path, {"policy": policy}) == (403, "ROLE_REQUIRED")
    assert h.refused("findly", "POST", path, {"policy": policy}) == (403, "NOT_TOOL_PROVIDER")
    assert h.refused("skycast", "POST", path, {"policy": policy}) == (409, "POLICY_EXISTS")
    empty = {**policy, "version": 2, "clauses": []}
    assert h.refused("skycast", "POST", path, {"policy": empty}) == (400, "POLICY_CLAUSE_INVALID")
    other = {**policy, "version": 2, "tool": "web.search"}
    assert h.refused("skycast", "POST", path, {"policy": other}) == (400, "POLICY_INVALID")

    wrong = _call("wx-1")
    wrong["request"]["provider"] = "findly"
    assert h.refused("pat", "POST", "/calls", wrong) == (400, "CALL_PROVIDER_MISMATCH")
    unknown = _call("wx-1")
    unknown["request"]["tool"] = "web.search"
    assert h.refused("pat", "POST", "/calls", unknown) == (404, "TOOL_NOT_FOUND")
    floated = _call("wx-1")
    floated["request"]["price"]["amount_minor"] = 2.5
    assert h.refused("pat", "POST", "/calls", floated) == (400, "CALL_INPUT_INVALID")
    missing = _call("wx-1", policy={"id": "nope"})
    assert h.refused("pat", "POST", "/calls", missing) == (404, "POLICY_NOT_FOUND")
    assert h.refused("skycast", "POST", "/calls", _call("wx-1")) == (403, "ROLE_REQUIRED")
    assert h.refused("pat", "GET", "/calls/wx-1") == (404, "CALL_NOT_FOUND")

    h.ok("pat", "POST", "/calls", _call("wx-1"))
    assert h.refused("ann", "GET", "/calls/wx-1") == (403, "NOT_A_PARTY")
    assert h.ok("root", "GET", "/calls/wx-1")["id"] == "wx-1"
    assert h.refused("pat", "GET", "/providers/pat/quality") == (404, "ACCOUNT_NOT_FOUND")


def test_reported_calls_never_feed_quality_or_penalties(sqlite_store: Store) -> None:
    """Any poster can report calls, failing ones included: each is verified and receipted, but
    none is an observation of the provider, so no rate is measured and no penalty proposed,
    however many are filed and however long one waits."""
    h, _ = _harness(sqlite_store)
    terms = {
        "declared_failure_rate": "1/10",
        "sample_gate": 3,
        "window_days": 7,
        "penalty_minor": 500,
    }
    _register_weather(h, quality=terms)
    for i in range(6):
        made = h.ok("pat", "POST", "/calls", _call(f"wx-{i}", "bad"))
        assert made["record"]["verdict"] == "FAIL" and made["source"] == "reported"
        h.advance(minutes=1)
    h.advance(hours=73)
    now = h.ok("ann", "GET", "/providers/skycast/quality")
    assert now["failure_rate"] is None and now["proposal"] is None
    assert now["window"]["pass"] == now["window"]["fail"] == 0


def test_a_call_under_a_named_policy_version(sqlite_store: Store) -> None:
    """A call may name the policy (and version) that governs it; a shadow version counts nothing."""
    h, _ = _harness(sqlite_store)
    _register_weather(h)
    shadow = copy.deepcopy(_example("weather.policy.json"))
    shadow.update(version=2, mode="shadow")
    h.ok("skycast", "POST", "/tools/weather.forecast/policies", {"policy": shadow})
    ref = {"id": "weather-forecast-standard", "version": 1}
    enforced = h.ok("pat", "POST", "/calls", _call("wx-1", "bad", policy=ref))
    assert enforced["record"]["policy"]["version"] == 1 and enforced["record"]["strike"] is True
    latest = h.ok("pat", "POST", "/calls", _call("wx-2", "bad"))
    assert latest["record"]["policy"]["mode"] == "shadow"
    assert latest["record"]["strike"] is False and latest["record"]["payment"] == "settle"


def test_names_the_store_cannot_hold_are_refused_not_crashed(store: Store) -> None:
    """Over-long names are 400; NUL anywhere in a body is refused at the edge as not I-JSON,
    and NUL in a path as a bad request, before the database sees either."""
    h, _ = _harness(store)
    contract = _example("weather.contract.json")
    long_version = {**contract, "version": "9" * 65}
    assert h.refused("skycast", "POST", "/tools", {"contract": long_version}) == (
        400,
        "CONTRACT_INVALID",
    )
    nul_tool = {**contract, "tool": "weather\x00forecast"}
    assert h.refused("skycast", "POST", "/tools", {"contract": nul_tool}) == (400, "INVALID_JSON")
    _register_weather(h)
    big = {**_example("weather.policy.json"), "version": 2**31}
    path = "/tools/weather.forecast/policies"
    assert h.refused("skycast", "POST", path, {"policy": big}) == (400, "POLICY_INVALID")
    nul_path = (400, "INVALID_REQUEST")
    assert h.refused("skycast", "POST", "/tools/a%00b/policies", {"policy": big}) == nul_path
    assert h.refused("pat", "GET", "/calls/a%00b") == nul_path
    assert h.refused("pat", "GET", "/providers/a%00b/quality") == nul_path
    assert h.refused("pat", "POST", "/calls", _call("wx\x00")) == (400, "INVALID_JSON")
    odd = _call("wx-nul")
    odd["response"]["body"]["timezone"] = "Europe\x00Berlin"
    assert h.refused("pat", "POST", "/calls", odd) == (400, "INVALID_JSON")
    assert h.refused("pat", "GET", "/calls/wx-nul") == (404, "CALL_NOT_FOUND")


@pytest.mark.parametrize(
    "policy_id",
    [
        "web\x1b[2Kverdict: PASS",
        "web\rstandard",
        "tab\tid",
        "line\nid",
        "\u202edrawkcab",
        "caf\u00e9",
        "web standard",
        "a/b",
        "x" * 129,
    ],
    ids=ascii,
)
def test_a_policy_id_that_is_no_identifier_is_refused(sqlite_store: Store, policy_id: str) -> None:
    """A policy id is 1 to 128 letters, digits and ``._:-``: a control character, a
    right-to-left mark, a space or a letter beyond ASCII is refused at registration with
    ``POLICY_INVALID``, naming the id escaped, and nothing is stored (a verifier printed such an
    id escaped, but it named the policy)."""
    h, _ = _harness(sqlite_store)
    h.ok("skycast", "POST", "/tools", {"contract": _example("weather.contract.json")})
    policy = {**_example("weather.policy.json"), "policy": policy_id}
    path = "/tools/weather.forecast/policies"
    r = h.call("skycast", "POST", path, {"policy": policy})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "POLICY_INVALID")
    message = r.json()["error"]["message"]
    assert message.startswith("A policy id is 1 to 128 letters") and message.isprintable()
    assert ascii(policy_id[:40]) in message
    missing = _call("wx-1", policy={"id": policy_id})
    assert h.refused("pat", "POST", "/calls", missing) == (404, "POLICY_NOT_FOUND")


@pytest.mark.parametrize("policy_id", ["weather-standard", "P1", "a.b:c_d-1", "x" * 128])
def test_a_policy_id_of_the_identifier_form_is_registered(
    sqlite_store: Store, policy_id: str
) -> None:
    """Letters, digits, dots, underscores, colons and hyphens, up to 128, are a policy id."""
    h, _ = _harness(sqlite_store)
    h.ok("skycast", "POST", "/tools", {"contract": _example("weather.contract.json")})
    policy = {**_example("weather.policy.json"), "policy": policy_id}
    made = h.ok("skycast", "POST", "/tools/weather.forecast/policies", {"policy": policy})
    assert made["policy"] == policy_id


def test_a_policy_stored_under_another_id_is_still_read(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The id's form is checked when a policy is registered, never when it is read: a policy
    stored before (here, registered past the check) still judges the calls that name it."""
    h, _ = _harness(sqlite_store)
    h.ok("skycast", "POST", "/tools", {"contract": _example("weather.contract.json")})
    odd = "web\x1bstandard"
    monkeypatch.setattr("adjudge.app.calls.POLICY_ID", re.compile(r".+", re.DOTALL))
    policy = {**_example("weather.policy.json"), "policy": odd}
    h.ok("skycast", "POST", "/tools/weather.forecast/policies", {"policy": policy})
    monkeypatch.undo()
    judged = h.ok("pat", "POST", "/calls", _call("wx-1", "bad", policy={"id": odd, "version": 1}))
    assert judged["record"]["policy"]["policy"] == odd and judged["record"]["verdict"] == "FAIL"


@pytest.mark.parametrize("odd", [[], ["ok"], {}, {"ok": 1}])
def test_a_word_sent_as_a_list_or_an_object_is_refused_not_crashed(
    sqlite_store: Store, odd: Any
) -> None:
    """A response's `status`, a rule's `kind` and a veto's `check` are words looked up in a
    table: a JSON list or object there is refused with the field's code, nothing stored
    (each was looked up as it came, and the lookup of a value that cannot be hashed answered
    500 INTERNAL_ERROR)."""
    h, _ = _harness(sqlite_store)
    _register_weather(h)
    reported = _call("wx-odd")
    reported["response"]["status"] = odd
    assert h.refused("pat", "POST", "/calls", reported) == (400, "CALL_INPUT_INVALID")
    assert h.refused("pat", "GET", "/calls/wx-odd") == (404, "CALL_NOT_FOUND")
    path = "/tools/weather.forecast/policies"
    policy = {**_example("weather.policy.json"), "version": 2}
    kind = copy.deepcopy(policy)
    kind["rules"][0]["kind"] = odd
    assert h.refused("skycast", "POST", path, {"policy": kind}) == (400, "POLICY_RULE_INVALID")
    check = copy.deepcopy(policy)
    veto = next(c for c in check["clauses"] if c["match"] == "veto")
    veto["check"] = odd
    assert h.refused("skycast", "POST", path, {"policy": check}) == (400, "POLICY_CLAUSE_INVALID")


@pytest.mark.parametrize("hours", [8761, 10**12, 2**53 - 1])
def test_a_report_window_past_its_bound_is_refused_however_long(
    sqlite_store: Store, hours: int
) -> None:
    """A policy's `report_window_hours` past a year is refused POLICY_INVALID, whatever its
    size (one too large for a duration, a million years and up, was made a duration before it
    was compared with the bound: the registration answered 500 INTERNAL_ERROR)."""
    h, _ = _harness(sqlite_store)
    _register_weather(h)
    policy = {**_example("weather.policy.json"), "version": 2, "report_window_hours": hours}
    path = "/tools/weather.forecast/policies"
    assert h.refused("skycast", "POST", path, {"policy": policy}) == (400, "POLICY_INVALID")


@pytest.mark.parametrize("citations", [None, 3, True, "/days/0", {"path": "/days/0"}])
def test_a_judgments_citations_that_are_no_list_are_refused(
    sqlite_store: Store, citations: Any
) -> None:
    """A reported call's judgment whose `citations` is not a list is refused
    CALL_INPUT_INVALID, nothing stored (a number, true or null was walked as a list and
    answered 500 INTERNAL_ERROR; a text or an object was walked by its characters or keys)."""
    h, _ = _harness(sqlite_store)
    _register_weather(h)
    judgment = {
        "status": "judged",
        "call_id": "wx-cited",
        "response_digest": "sha256:" + "0" * 64,
        "conflict": True,
        "citations": citations,
    }
    body = _call("wx-cited", judgment=judgment)
    assert h.refused("pat", "POST", "/calls", body) == (400, "CALL_INPUT_INVALID")
    assert h.refused("pat", "GET", "/calls/wx-cited") == (404, "CALL_NOT_FOUND")


def test_a_declared_digest_cannot_be_proven_so_a_pass_is_not_stored(sqlite_store: Store) -> None:
    """The service holds the parsed body, not the bytes a declared digest covers."""
    h, _ = _harness(sqlite_store)
    _register_weather(h)
    declared = _call("wx-1")
    declared["response"]["digest"] = "sha256:" + "0" * 64
    assert h.refused("pat", "POST", "/calls", declared) == (400, "INTEGRITY_PROOF_REQUIRED")
    assert h.refused("pat", "GET", "/calls/wx-1") == (404, "CALL_NOT_FOUND")
    assert h.ok("pat", "GET", "/receipts/head")["count"] == 0
    failing = _call("wx-2", "bad")
    failing["response"]["digest"] = "sha256:" + "0" * 64
    assert h.ok("pat", "POST", "/calls", failing)["record"]["verdict"] == "FAIL"


def _race(h: Harness, n: int, body: Any, headers: dict[str, str]) -> list[int]:
    """``n`` clients post ``body`` to ``/calls`` as pat at once; their status codes."""
    barrier = threading.Barrier(n)
    codes: list[int] = []
    lock = threading.Lock()
    auth = {"Authorization": f"Bearer {h.keys['pat']}", **headers}

    def run() -> None:
        client = TestClient(h.client.app)
        barrier.wait()
        code = client.post("/api/v1/calls", json=body, headers=auth).status_code
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(codes)


def test_concurrent_verifications_of_one_call_sign_once(store: Store) -> None:
    """Racing retries of one call: without a key one wins and the rest are CALL_EXISTS; with
    one key every client gets the same answer. One record and one receipt each; reported calls
    are no observation of the provider."""
    h, _ = _harness(store)
    _register_weather(h)
    assert _race(h, 6, _call("wx-1"), {}) == [201] + [409] * 5
    assert _race(h, 6, _call("wx-2"), {"Idempotency-Key": "same"}) == [201] * 6
    assert h.ok("pat", "GET", "/receipts/head")["count"] == 2
    window = h.ok("pat", "GET", "/providers/skycast/quality")["window"]
    assert window["pass"] == window["fail"] == 0


def test_reporting_a_reported_call_refunds_nothing_and_the_chain_holds(store: Store) -> None:
    """A reported call moved no money through adjudge: upholding its report signs the human
    FAIL (superseding the call's receipt on one verifying chain), refunds nothing and is no
    upheld report in the provider's quality view (its answer was the poster's word); a call id
    that cannot name a receipt's subject is refused when the call is reported."""
    h, issuer = _harness(store)
    _register_weather(h)
    good = h.ok("pat", "POST", "/calls", _call("wx-1"))
    assert good["report_deadline"] == "2026-12-02T19:30:00+00:00"
    filed = h.ok("pat", "POST", "/calls/wx-1/report", {"reason": "Rain all day; it said sun."})
    assert filed["status"] == "open"
    balances = (h.balance("wallet:pat"), h.balance("wallet:skycast"))
    ruling = {"upheld": True, "reasons": ["The station data shows rain."]}
    ruled = h.ok("root", "POST", "/calls/wx-1/report/ruling", ruling)
    assert (ruled["status"], ruled["refunded_minor"]) == ("upheld", 0)
    assert (h.balance("wallet:pat"), h.balance("wallet:skycast")) == balances
    lines = [_envelope(h, good["receipt_id"]), _envelope(h, ruled["receipt_id"])]
    receipts = [verify(line, issuer.fingerprint) for line in lines]
    assert receipts[1].supersedes == receipts[0].receipt_id
    assert receipts[1].predicate["policyDecision"]["strike"] is False
    assert verify_chain(lines, issuer.fingerprint).count == 2
    assert h.ok("pat", "GET", "/calls/wx-1")["report"]["status"] == "upheld"
    # The answer was the poster's word, which nobody observed: not a mark on the provider.
    assert h.ok("pat", "GET", "/providers/skycast/quality")["upheld_reports"] == 0
    blank_edged = _call("wx-2 ")
    assert h.refused("pat", "POST", "/calls", blank_edged) == (400, "CALL_INPUT_INVALID")
    assert h.refused("pat", "POST", "/calls/wx-1/report", {"reason": " "}) == (
        400,
        "INVALID_REASON",
    )


def test_a_reported_answer_that_cannot_be_judged_in_bounds_is_refused(store: Store) -> None:
    """A contract whose pattern backtracks (``^(a|a)*$``) is judged in a worker process: a
    reported answer that runs out the time limit is refused (422 ``CALL_NOT_JUDGEABLE``,
    nothing recorded) instead of holding the service; one that matches is judged there as it
    would be here."""
    from adjudge.app.isolation import Isolation  # noqa: PLC0415

    h, _issuer = _harness(store)
    contract = _example("weather.contract.json")
    days = contract["output_schema"]["properties"]["days"]["items"]["properties"]
    days["date"]["pattern"] = "^(a|a)*$"
    h.ok("skycast", "POST", "/tools", {"contract": contract})
    h.ok(
        "skycast",
        "POST",
        "/tools/weather.forecast/policies",
        {"policy": _example("weather.policy.json")},
    )
    isolation = Isolation(workers=2, seconds=0.5)
    h.app.calls.isolation = isolation
    try:
        slow = _call("wx-slow")
        slow["response"]["body"]["daily"][0]["date"] = "a" * 40 + "!"
        r = h.call("pat", "POST", "/calls", slow)
        assert r.status_code == 422, r.text
        assert r.json()["error"]["code"] == "CALL_NOT_JUDGEABLE"
        assert h.call("pat", "GET", "/calls/wx-slow").status_code == 404

        fine = _call("wx-fine")
        for day in fine["response"]["body"]["daily"]:
            day["date"] = "aaaa"
        record = h.ok("pat", "POST", "/calls", fine)["record"]
        assert isolation._pool is not None  # judged apart
        from adjudge.calls import (  # noqa: PLC0415
            parse_request,
            parse_response,
            register_contract,
            register_policy,
            verify_call,
        )

        parsed = register_contract(contract)
        policy = register_policy(_example("weather.policy.json"), parsed)
        here = verify_call(
            parsed,
            policy,
            parse_request(fine["request"]),
            parse_response(fine["response"]),
            CALL_TIME,
        )
        assert here.verdict is not None
        assert record["verdict"] == here.verdict.value
        assert record == {**record, **{k: v for k, v in here.to_dict().items() if k in record}}
    finally:
        isolation.close()


def test_a_rule_condition_over_large_arguments_is_judged_apart(store: Store) -> None:
    """A rule's condition reads the call's arguments beside the answer, so their bytes count
    toward the bound: an answer the loop would judge, under a condition over two hundred
    kilobytes of arguments, is judged in a worker (before: 2.6 s on the loop for 2 MB)."""
    from adjudge.app.demo import WEATHER_POLICY, weather_tool  # noqa: PLC0415
    from adjudge.app.isolation import Isolation  # noqa: PLC0415

    h, _issuer = _harness(store)
    contract = weather_tool("https://weather.example/v1")["contract"] | {"tool": "wx"}
    h.ok("skycast", "POST", "/tools", {"contract": contract})
    policy = copy.deepcopy(WEATHER_POLICY) | {"tool": "wx"}
    policy["rules"].append(
        {"kind": "min_results", "name": "asked", "path": "days", "min": 0, "when": "request.n"}
    )
    h.ok("skycast", "POST", "/tools/wx/policies", {"policy": policy})
    isolation = Isolation(workers=2, seconds=5.0)
    h.app.calls.isolation = isolation
    try:
        body = _call("wx-small")
        body["request"] |= {"tool": "wx", "arguments": {"n": 1}}
        h.ok("pat", "POST", "/calls", body)
        assert isolation._pool is None  # judged on the loop
        body = _call("wx-large")
        body["request"] |= {"tool": "wx", "arguments": {"n": 1, "pad": [1] * 100_000}}
        record = h.ok("pat", "POST", "/calls", body)["record"]
        assert isolation._pool is not None  # judged apart
        assert record["verdict"]
    finally:
        isolation.close()


def test_an_accounts_verifications_are_bounded_an_hour(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls submitted for verification are free, and each signs a receipt on the shared log
    and notifies the provider: an account may submit a bounded number an hour (here two);
    the next is ``429 VERIFICATIONS_QUOTA_EXCEEDED`` with the seconds to wait, nothing signed;
    a replay of one already made is not counted; the next hour, or an admin, may submit
    again."""
    from adjudge.app import calls as app_calls  # noqa: PLC0415

    monkeypatch.setattr(app_calls, "VERIFY_QUOTA", 2)
    h, _ = _harness(sqlite_store)
    _register_weather(h)
    for n in (1, 2):
        assert (
            h.call("pat", "POST", "/calls", _call(f"q-{n}"), Idempotency_Key=f"q{n}").status_code
            == 201
        )
    again = h.call("pat", "POST", "/calls", _call("q-1"), Idempotency_Key="q1")
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    head = h.ok("pat", "GET", "/receipts/head")
    refused = h.call("pat", "POST", "/calls", _call("q-3"))
    assert (refused.status_code, refused.json()["error"]["code"]) == (
        429,
        "VERIFICATIONS_QUOTA_EXCEEDED",
    )
    assert int(refused.headers["Retry-After"]) > 0
    assert h.ok("pat", "GET", "/receipts/head") == head
    assert h.call("root", "POST", "/calls", _call("q-4")).status_code == 201
    h.advance(minutes=61)
    assert h.call("pat", "POST", "/calls", _call("q-3")).status_code == 201
