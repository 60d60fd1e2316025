"""Every verdict is a kernel determination in a signed receipt that verifies offline."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
import rfc8785

from adjudge.receipts import SignedReceipts, SigningKey, canonical_bytes, verify, verify_chain
from adjudge.replay import from_answer, replay
from adjudge.store import Store
from support.audit import audit
from support.harness import Harness, make_harness

GOOD = "A long enough result."
BAD = "FAIL: nothing here"


def _harness(store: Store) -> tuple[Harness, SignedReceipts]:
    issuer = SignedReceipts(SigningKey.generate())
    return make_harness(store, issuer=issuer), issuer


def _statement(receipt: dict[str, Any]) -> dict[str, Any]:
    payload = receipt["receipt"]["envelope"]["payload"]
    statement: dict[str, Any] = json.loads(base64.b64decode(payload))
    return statement


@pytest.mark.parametrize("mode", ["auto", "agent", "manual"])
def test_receipts_verify_offline_in_every_mode(sqlite_store: Store, mode: str) -> None:
    """A fail, a pass on resubmission: two receipts that verify and chain under the service key."""
    h, issuer = _harness(sqlite_store)
    tid = h.post(mode)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    for result, passed in ((BAD, False), (GOOD, True)):
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": result})
        if mode == "auto":
            h.ok("ann", "POST", f"/tasks/{tid}/finalize")
        elif mode == "manual":
            h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": passed})
        else:
            h.verdict("vera", tid, passed)
    receipts = h.ok("pat", "GET", f"/tasks/{tid}/receipts")["receipts"]
    lines = [canonical_bytes(r["receipt"]["envelope"]) for r in receipts]
    verdicts = [verify(line, issuer.fingerprint).verdict.value for line in lines]
    assert verdicts == ["FAIL", "PASS"]
    assert verify_chain(lines, issuer.fingerprint).count == 2
    predicate = _statement(receipts[1])["predicate"]
    authorities = {c["name"]: c["authority"] for c in predicate["checks"]}
    assert authorities["evidence-integrity"] == "deterministic"
    vera_key = h.ok("pat", "GET", "/agents/vera")["verifier_key"]
    if mode == "agent":
        assert authorities["agent-review"] == "semantic"
        assert predicate["trustPolicy"]["verifierKeys"] == [vera_key]
    else:
        assert predicate["trustPolicy"]["verifierKeys"] == []
        assert authorities.get("auto-check", authorities.get("manual-review")) in {
            "deterministic",
            "human",
        }


def test_rulings_are_signed_too(sqlite_store: Store) -> None:
    """An admin's ruling is a human determination with its own receipt on the same chain."""
    h, issuer = _harness(sqlite_store)
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": False})
    h.ok("ann", "POST", f"/tasks/{tid}/disputes", {})
    h.ok("root", "POST", f"/tasks/{tid}/ruling", {"pay_agent": True, "note": "It was right."})
    receipts = h.ok("root", "GET", f"/tasks/{tid}/receipts")["receipts"]
    last = verify(canonical_bytes(receipts[-1]["receipt"]["envelope"]), issuer.fingerprint)
    assert last.verdict.value == "PASS" and last.sequence == 1
    names = [c["name"] for c in _statement(receipts[-1])["predicate"]["checks"]]
    assert "admin-ruling" in names
    head = h.ok("pat", "GET", "/receipts/head")
    assert head["digest"] == last.receipt_id


def test_verifier_keys_are_the_verifiers_own(sqlite_store: Store) -> None:
    """The service never makes or returns a private key: a verifier registers its public key,
    rotates to a new one and revokes the old; a revoked key signs nothing, and receipts that
    name it still verify."""
    h, issuer = _harness(sqlite_store)
    made = h.ok("root", "POST", "/accounts", {"id": "val", "roles": ["verifier"]})
    assert "verifier_private_key" not in made and made["account"]["verifier_key"] is None
    bad = {"id": "vul", "roles": ["verifier"], "verifier_public_key": "nope"}
    assert h.refused("root", "POST", "/accounts", bad) == (422, "INVALID_REQUEST")

    tid = h.post("agent")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": BAD})
    h.verdict("vera", tid, False, ["Not yet."])
    old = h.signers["vera"]
    new = SigningKey.generate()
    added = h.ok(
        "vera", "POST", "/accounts/me/verifier-keys", {"public_key": new.public_key.to_base64()}
    )
    assert added["fingerprint"] == new.keyid
    me = h.ok("vera", "GET", "/accounts/me")
    assert me["verifier_key"] == new.keyid
    assert {k["fingerprint"] for k in me["verifier_keys"]} == {old.keyid, new.keyid}
    assert all("private" not in json.dumps(k) for k in me["verifier_keys"])
    # The task was posted trusting the old key; it still judges with it until revoked.
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    h.ok("vera", "POST", f"/accounts/me/verifier-keys/{old.keyid}/revoke")
    assert h.refused("vera", "POST", f"/tasks/{tid}/verdict", h.signed("vera", tid, True)) == (
        403,
        "VERDICT_SIGNATURE_INVALID",
    )
    revoke = f"/accounts/me/verifier-keys/{old.keyid}/revoke"
    assert h.refused("ann", "POST", revoke) == (404, "KEY_NOT_FOUND")  # not ann's key
    assert h.refused("bob", "POST", revoke) == (403, "ROLE_REQUIRED")
    receipts = h.ok("pat", "GET", f"/tasks/{tid}/receipts")["receipts"]
    line = canonical_bytes(receipts[0]["receipt"]["envelope"])
    assert verify(line, issuer.fingerprint).verdict.value == "FAIL"
    checks = _statement(receipts[0])["predicate"]["checks"]
    assert [c.get("verifierKey") for c in checks if c["name"] == "agent-review"] == [old.keyid]
    # A task posted now trusts the new key.
    later = h.post("agent")
    h.ok("bob", "POST", f"/tasks/{later}/accept")
    h.ok("bob", "POST", f"/tasks/{later}/submissions", {"result": GOOD})
    h.signers["vera"] = new
    assert h.verdict("vera", later, True)["ending"] == "paid_on_pass"


#: Criteria with numbers written with a point: a threshold between two whole scores, a rubric
#: item's weight, a cap written in exponent form.
POINTED = {
    "min_length": 10,
    "pass_threshold": 60.5,
    "max_length": 1e3,
    "rubric": [{"criterion": "summary", "keywords": ["long"], "weight": 0.5}],
}


@pytest.mark.parametrize("mode", ["auto", "manual"])
def test_criteria_with_numbers_written_with_a_point_are_bound_and_the_task_settles(
    sqlite_store: Store, mode: str
) -> None:
    """A task whose criteria hold a number with a point is judged and paid, and another is
    cancelled, refunded, each under a receipt binding the sha256 of the criteria's RFC 8785
    JSON (every receipt of such a task was refused, RECEIPT_UNSIGNABLE: no verdict, cancel,
    reclaim or ruling could end it, and its escrow stayed locked)."""
    issuer = SignedReceipts(SigningKey.generate())
    h = make_harness(sqlite_store, issuer=issuer, real_checker=True)
    tid = h.post(mode, criteria=POINTED)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    if mode == "auto":
        done = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    else:
        done = h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True})
    assert done["ending"] == "paid_on_pass"
    if mode == "auto":  # the auto check's receipt replays from its bundle, byte for byte
        found = replay(from_answer(h.ok("pat", "GET", f"/tasks/{tid}/bundle")))
        assert found.outcome == "same", found.differences
    cancelled = h.ok("pat", "POST", f"/tasks/{h.post(mode, criteria=POINTED)}/cancel")
    assert cancelled["ending"] == "refunded_on_cancel"
    bound = "sha256:" + hashlib.sha256(rfc8785.dumps(POINTED)).hexdigest()
    for task in (done, cancelled):
        receipts = h.ok("pat", "GET", f"/tasks/{task['id']}/receipts")["receipts"]
        lines = [canonical_bytes(r["receipt"]["envelope"]) for r in receipts]
        assert [verify(line, issuer.fingerprint).verdict.value for line in lines] == [
            "PASS" if task is done else "NOT_RUN"
        ]
        assert _statement(receipts[0])["predicate"]["criteriaDigest"] == bound
    audit(sqlite_store)
