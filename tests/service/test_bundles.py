"""Replay bundles of reported calls through the API: the judgment a verification read is kept
and replayed; a bundle without it, or of a ruling's call, says exactly what differs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from adjudge.app import calls as app_calls
from adjudge.calls import register_contract
from adjudge.calls.contract import map_response
from adjudge.calls.verify import digest_of
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.replay import from_answer, replay
from adjudge.store import Store
from adjudge.store import calls as calls_db
from support.bundles import edited, without
from support.harness import Harness, make_harness

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"
SAMPLED = "search-4"  # selected for the meaning check at web-search-standard v3's rate 0.25
SEED = f"{5:032x}"  # ... with this sampling seed, the service's draw for every call here


@pytest.fixture(autouse=True)
def _seeded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The service draws each reported call's sampling seed at random; here, one known to
    select SAMPLED, so the meaning check runs where the tests ask for it."""
    monkeypatch.setattr(app_calls, "new_sample_seed", lambda: SEED)


def _example(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


def _harness(store: Store) -> tuple[Harness, SignedReceipts]:
    issuer = SignedReceipts(SigningKey.generate())
    h = make_harness(store, issuer=issuer)
    h.keys["findly"] = h.app.accounts.create(None, "findly", ["provider"]).value["api_key"]
    h.clock.current = datetime(2026, 11, 29, 19, 30, tzinfo=UTC)
    h.ok("findly", "POST", "/tools", {"contract": _example("search.contract.json")})
    policy = {"policy": _example("search.policy.json")}
    h.ok("findly", "POST", "/tools/web.search/policies", policy)
    return h, issuer


def _judged_call(call_id: str) -> dict[str, Any]:
    """The example search call, with a model's cited conflict about its first title."""
    request = {**_example("search.request.json"), "call_id": call_id}
    response = _example("search.good.response.json")
    output = map_response(register_contract(_example("search.contract.json")), response["body"])
    title = output.output["results"][0]["title"]
    judgment = {
        "call_id": call_id,
        "response_digest": digest_of(response["body"]),
        "status": "judged",
        "conflict": True,
        "citations": [{"path": "/results/0/title", "quote_sha256": digest_of(title)}],
        "reason": "the first result is about another language",
    }
    return {"request": request, "response": response, "judgment": judgment}


def test_a_judged_call_replays_with_its_judgment(sqlite_store: Store) -> None:
    """The cited conflict the caller reported is kept with the call: its bundle replays the
    meaning check's FAIL vote byte for byte; taken out, the check reads as unavailable."""
    h, issuer = _harness(sqlite_store)
    made = h.ok("pat", "POST", "/calls", _judged_call(SAMPLED))
    meaning = next(c for c in made["record"]["checks"] if c["name"] == "meaning")
    assert meaning["outcome"] == "fail"
    answer = h.ok("findly", "GET", f"/calls/{SAMPLED}/bundle")  # the provider reads it too
    assert answer["judgment"]["conflict"] is True and answer["source"] == "reported"
    data = from_answer(answer)
    found = replay(data, issuer.fingerprint)
    assert found.outcome == "same", [d.describe() for d in found.differences]
    assert found.detail["call_verdict"] == "FAIL"
    assert "meaning: fail (cited conflict: the first result is about another language)" in (
        found.lines
    )
    assert any("judgment.json is bound only through the checks" in n for n in found.notes)
    stripped = replay(without(data, "judgment.json"), issuer.fingerprint)
    differences = {d.what: d for d in stripped.differences}
    assert differences["predicate.checks[9] (meaning).verdict"].recorded == "FAIL"
    assert differences["predicate.checks[9] (meaning).verdict"].replayed == "NOT_RUN"
    assert differences["predicate.policyDecision.verdict"].recorded == "FAIL"
    assert "manifest depends_on.judgment" in differences
    assert differences["record.json.checks[8] (meaning).outcome"].replayed == "unavailable"


def test_a_reported_call_under_a_policy_in_the_providers_stead_replays_as_shadow(
    sqlite_store: Store,
) -> None:
    """findly's enforcing policy, its row rewritten as root's (registered in findly's stead
    before that was refused): a reported call it fails is recorded FAIL, settled and unstruck,
    the record saying it acted as shadow and who registered it; its bundle names the
    registrant and replays the same, and without it replays a refund the receipt never signed.
    (The record and receipt said refund and strike, on root's word.)"""
    h, issuer = _harness(sqlite_store)
    with sqlite_store.write() as tx:
        tx.conn.execute(update(calls_db.call_policies).values(registered_by="root"))
    made = h.ok("pat", "POST", "/calls", _judged_call(SAMPLED))["record"]
    assert (made["verdict"], made["payment"], made["strike"]) == ("FAIL", "settle", False)
    assert (made["policy"]["mode"], made["policy"]["acts_as"]) == ("enforce", "shadow")
    assert made["policy"]["registered_by"] == "root"
    assert made["effect"]["enforced"] is False and made["effect"]["table_payment"] == "refund"
    answer = h.ok("findly", "GET", f"/calls/{SAMPLED}/bundle")
    assert answer["policy_registered_by"] == "root"
    data = from_answer(answer)
    found = replay(data, issuer.fingerprint)
    assert found.outcome == "same", [d.describe() for d in found.differences]
    assert found.detail == {"call_verdict": "FAIL", "payment": "settle"}
    assert any("registered by root" in n for n in found.notes)

    def unnamed(held: bytes) -> bytes:
        how = json.loads(held)
        del how["policy_registered_by"]
        return json.dumps(how).encode()

    forged = replay(edited(data, "call.json", unnamed), issuer.fingerprint)
    differences = {d.what: d for d in forged.differences}
    assert differences["predicate.policyDecision.payment"].replayed == "refund"


def test_a_ruled_call_bundles_its_own_receipt(sqlite_store: Store) -> None:
    """An upheld report supersedes the call's receipt; the call's bundle is still of the call's
    own verification, which replays the same. A stranger is refused."""
    h, issuer = _harness(sqlite_store)
    call = _judged_call("search-9")
    del call["judgment"]
    made = h.ok("pat", "POST", "/calls", call)
    assert made["record"]["payment"] == "settle"
    h.ok("pat", "POST", "/calls/search-9/report", {"reason": "The results were stale."})
    h.ok("root", "POST", "/calls/search-9/report/ruling", {"upheld": True, "reasons": ["Stale."]})
    answer = h.ok("pat", "GET", "/calls/search-9/bundle")
    assert answer["receipt"]["id"] == made["receipt_id"] and answer["judgment"] is None
    assert replay(from_answer(answer), issuer.fingerprint).outcome == "same"
    assert h.refused("bob", "GET", "/calls/search-9/bundle") == (403, "NOT_A_PARTY")
    assert h.refused("pat", "GET", "/calls/nothing/bundle") == (404, "CALL_NOT_FOUND")


def test_a_reported_body_the_receipt_does_not_bind_is_said_to(sqlite_store: Store) -> None:
    """A caller that reports the digest of the bytes it received makes the receipt bind that
    digest, not the body. While the body digests to it, the body is bound; a body that does not
    (another one swapped in, here, that the checks read alike) replays the same statement, and
    the replay says the body is the service's word (before: the same, silently)."""
    h, issuer = _harness(sqlite_store)
    call = _judged_call("search-7")
    del call["judgment"]
    call["response"]["digest"] = digest_of(call["response"]["body"])
    h.ok("pat", "POST", "/calls", call)
    data = from_answer(h.ok("pat", "GET", "/calls/search-7/bundle"))
    found = replay(data, issuer.fingerprint)
    assert found.outcome == "same" and not any("not bound" in n for n in found.notes)

    def swapped(held: bytes) -> bytes:
        response = json.loads(held)
        response["body"]["web"]["results"][0]["title"] = "Another title altogether"
        return json.dumps(response).encode()

    forged = replay(edited(data, "response.json", swapped), issuer.fingerprint)
    assert any("response.json's body is not bound by the receipt" in n for n in forged.notes)


def test_a_calls_arguments_are_said_to_be_bound_only_through_its_checks(
    sqlite_store: Store,
) -> None:
    """The receipt signs a call's id, provider, tool and price, not its arguments: a bundle
    with another query replays the same statement when the checks read it alike, and the replay
    says the arguments are not signed (before: the same, silently)."""
    h, issuer = _harness(sqlite_store)
    call = _judged_call("search-8")
    del call["judgment"]
    h.ok("pat", "POST", "/calls", call)
    data = from_answer(h.ok("pat", "GET", "/calls/search-8/bundle"))

    def asked(held: bytes) -> bytes:
        request = json.loads(held)
        request["arguments"]["q"] = "something never asked"
        return json.dumps(request).encode()

    found = replay(edited(data, "request.json", asked), issuer.fingerprint)
    assert found.outcome == "same", [d.describe() for d in found.differences]
    assert any("request.json's arguments are bound only through" in n for n in found.notes)
