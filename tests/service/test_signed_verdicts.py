"""A verifier's verdict carries its own Ed25519 signature, checked on POST /tasks/{id}/verdict."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from adjudge.kernel.oracle import Record
from adjudge.market.signed_verdicts import sign_verdict, verdict_payload
from adjudge.receipts import SignedReceipts, SigningKey, canonical_bytes, verify
from adjudge.store import Store
from support.harness import Harness, make_harness

GOOD = "A long enough result."


def _harness(store: Store) -> tuple[Harness, SignedReceipts]:
    issuer = SignedReceipts(SigningKey.generate())
    return make_harness(store, issuer=issuer), issuer


def _delivered(h: Harness, result: str = GOOD) -> str:
    tid = h.post("agent")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": result})
    return tid


def _untouched(h: Harness, tid: str, wallets: dict[str, str]) -> None:
    """Nothing of a refused verdict was written: no verdict, receipt, money or state change."""
    view = h.ok("pat", "GET", f"/tasks/{tid}")
    assert view["status"] == "awaiting_verification"
    assert view["verdicts"] == [] and view["receipts"] == []
    assert h.ledger() == wallets
    assert h.ok("pat", "GET", "/agents/ann")["reputation"] == 100


def test_a_signed_verdict_is_accepted_stored_and_named_in_the_receipt(store: Store) -> None:
    """The signature is verified, kept with the verdict, and its payload digest is evidence."""
    h, issuer = _harness(store)
    tid = _delivered(h)
    body = h.signed("vera", tid, False, ["The table is missing."])
    view = h.ok("vera", "POST", f"/tasks/{tid}/verdict", body)
    assert view["status"] == "failed"
    record = view["verdicts"][0]["verification_result"]["verifier_signature"]
    payload = verdict_payload(
        task_id=tid,
        attempt=1,
        result_digest=view["result_digest"],
        brief_digest=Record(view["brief"].encode()).digest,
        passed=False,
        reasons=["The table is missing."],
        quotes=body["quotes"],
        verifier_key=h.signers["vera"].keyid,
    )
    assert record["payload"] == payload
    assert record["signature"] == body["signature"]
    raw = base64.b64decode(record["signature"])
    assert h.signers["vera"].public_key.verify(raw, canonical_bytes(payload))
    receipt = h.ok("pat", "GET", f"/receipts/{view['receipts'][0]}")["receipt"]
    assert verify(canonical_bytes(receipt["envelope"]), issuer.fingerprint).verdict.value == "FAIL"
    statement = json.loads(base64.b64decode(receipt["envelope"]["payload"]))
    check = next(c for c in statement["predicate"]["checks"] if c["name"] == "agent-review")
    assert view["result_digest"] in check["evidence"] and record["digest"] in check["evidence"]
    assert {q["quoteHash"] for q in body["quotes"]} <= set(check["evidence"])
    assert check["verifierKey"] == h.signers["vera"].keyid
    h.ledger()


def _variants(h: Harness, tid: str) -> dict[str, tuple[dict[str, Any], int, str]]:
    good = h.signed("vera", tid, True)
    task = h.ok("vera", "GET", f"/tasks/{tid}")
    stranger = SigningKey.generate()
    payload = verdict_payload(
        task_id=tid,
        attempt=task["attempts"],
        result_digest=task["result_digest"],
        passed=True,
        reasons=[],
        verifier_key=stranger.keyid,
    )
    veras = verdict_payload(
        task_id=tid,
        attempt=task["attempts"],
        result_digest=task["result_digest"],
        passed=True,
        reasons=[],
        verifier_key=h.signers["vera"].keyid,
    )
    by_vic = sign_verdict(h.signers["vic"], veras)["signature"]
    return {
        "missing": ({"passed": True}, 400, "VERDICT_SIGNATURE_REQUIRED"),
        "another-key": (
            {"passed": True, **sign_verdict(stranger, payload)},
            403,
            "VERDICT_SIGNATURE_INVALID",
        ),
        "another-key-claiming-veras": (
            {"passed": True, "signature": by_vic, "public_key": good["public_key"]},
            403,
            "VERDICT_SIGNATURE_INVALID",
        ),
        "tampered-passed": (
            {**h.signed("vera", tid, False), "passed": True},
            403,
            "VERDICT_SIGNATURE_INVALID",
        ),
        "tampered-reasons": (
            {**h.signed("vera", tid, False, ["Missing table."]), "reasons": ["Looks fine."]},
            403,
            "VERDICT_SIGNATURE_INVALID",
        ),
        "not-base64": ({**good, "signature": "%%%"}, 403, "VERDICT_SIGNATURE_INVALID"),
        "bad-public-key": ({**good, "public_key": "AAAA"}, 403, "VERDICT_SIGNATURE_INVALID"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "another-key",
        "another-key-claiming-veras",
        "tampered-passed",
        "tampered-reasons",
        "not-base64",
        "bad-public-key",
    ],
)
def test_unsigned_or_badly_signed_verdicts_are_refused(store: Store, case: str) -> None:
    """Each refusal has its code, and nothing is half-written: a retry with the same
    Idempotency-Key and a good signature then goes through."""
    h, _ = _harness(store)
    tid = _delivered(h)
    wallets = h.ledger()
    body, status, code = _variants(h, tid)[case]
    r = h.call("vera", "POST", f"/tasks/{tid}/verdict", body, Idempotency_Key="k1")
    assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.text
    assert r.json()["error"]["message"]
    _untouched(h, tid, wallets)
    r = h.call(
        "vera", "POST", f"/tasks/{tid}/verdict", h.signed("vera", tid, True), Idempotency_Key="k1"
    )
    assert r.status_code == 200 and r.json()["ending"] == "paid_on_pass", r.text
    h.ledger()


def test_a_signature_replayed_onto_another_submission_is_refused(store: Store) -> None:
    """A verdict signed for attempt 1 does not judge attempt 2, nor the same text in another
    task: the payload binds the task, the attempt and the judged result's digest."""
    h, _ = _harness(store)
    tid = _delivered(h)
    first = h.signed("vera", tid, False, ["Too short."])
    h.ok("vera", "POST", f"/tasks/{tid}/verdict", first)
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})  # the same text again
    wallets = h.ledger()
    replayed = {**first, "passed": False}
    assert h.refused("vera", "POST", f"/tasks/{tid}/verdict", replayed) == (
        403,
        "VERDICT_SIGNATURE_INVALID",
    )
    view = h.ok("pat", "GET", f"/tasks/{tid}")
    assert view["status"] == "awaiting_verification" and len(view["verdicts"]) == 1
    assert h.ledger() == wallets
    other = _delivered(h)  # the same result, so the same digest, in another task
    assert h.refused("vera", "POST", f"/tasks/{other}/verdict", first) == (
        403,
        "VERDICT_SIGNATURE_INVALID",
    )
    assert h.ok("pat", "GET", f"/tasks/{other}")["verdicts"] == []
    assert h.verdict("vera", tid, True)["ending"] == "paid_on_pass"
    h.ledger()


def test_the_market_rules_come_before_the_signature(store: Store) -> None:
    """Who may judge and in what state is decided first, so those codes do not change."""
    h, _ = _harness(store)
    tid = _delivered(h)
    body = h.signed("vera", tid, True)
    assert h.refused("vic", "POST", f"/tasks/{tid}/verdict", body) == (403, "NOT_TASK_VERIFIER")
    assert h.refused("ann", "POST", f"/tasks/{tid}/verdict", body) == (409, "SELF_VERIFICATION")
    h.ok("vera", "POST", f"/tasks/{tid}/verdict", body)
    assert h.refused("vera", "POST", f"/tasks/{tid}/verdict", body)[0] == 409
