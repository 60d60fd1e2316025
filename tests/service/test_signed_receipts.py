"""Every verdict is a kernel determination in a signed receipt that verifies offline."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from adjudge.receipts import SigningKey, canonical_bytes, verify, verify_chain
from adjudge.service.wiring import SignedReceipts
from adjudge.store import Store
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


def test_new_verifier_gets_a_key_pair_once(sqlite_store: Store) -> None:
    """A verifier created without a public key gets a private key in the answer, once."""
    h, _ = _harness(sqlite_store)
    made = h.ok("root", "POST", "/accounts", {"id": "val", "roles": ["verifier"]})
    key = SigningKey.from_pem(made["verifier_private_key"].encode())
    assert made["account"]["verifier_key"] == key.keyid
    public = (
        base64.b64encode(key.public_key.raw).decode() if hasattr(key.public_key, "raw") else None
    )
    if public:
        mine = h.ok(
            "root",
            "POST",
            "/accounts",
            {"id": "vol", "roles": ["verifier"], "verifier_public_key": public},
        )
        assert "verifier_private_key" not in mine and mine["account"]["verifier_key"] == key.keyid
    bad = {"id": "vul", "roles": ["verifier"], "verifier_public_key": "nope"}
    assert h.refused("root", "POST", "/accounts", bad) == (400, "INVALID_REQUEST")
