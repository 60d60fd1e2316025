"""Agent review must be grounded (spec 002): a verifier's verdict counts only when it quotes the
brief and the result as the service holds them; otherwise the submission goes to the poster."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from adjudge.kernel.semantic import Quote
from adjudge.receipts import SignedReceipts, SigningKey, canonical_bytes, verify
from adjudge.store import Store
from support.harness import FUNDS, Harness, make_harness

RESULT = "The summary: revenue rose 4% while costs fell."


def _delivered(h: Harness) -> str:
    tid = h.post("agent", brief="Summarise the quarterly report in one sentence.")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": RESULT})
    return tid


def _statement(h: Harness, receipt_id: str) -> dict[str, Any]:
    body = h.ok("pat", "GET", f"/receipts/{receipt_id}")["receipt"]
    return dict(json.loads(base64.b64decode(body["envelope"]["payload"])))


def test_a_grounded_pass_pays_on_the_posters_trust_in_one_key(store: Store) -> None:
    """Quotes that resolve in the stored brief and result: the PASS pays, and the receipt says
    the PASS rests on the poster's trust in that one verifier key."""
    issuer = SignedReceipts(SigningKey.generate())
    h = make_harness(store, issuer=issuer)
    tid = _delivered(h)
    done = h.verdict("vera", tid, True, ["Accurate and short."])
    assert done["ending"] == "paid_on_pass"
    statement = _statement(h, done["receipts"][-1])
    assert statement["predicate"]["verdict"] == "PASS"
    assert statement["predicate"]["trustedVerifierKey"] == h.signers["vera"].keyid
    envelope = h.ok("pat", "GET", f"/receipts/{done['receipts'][-1]}/envelope")
    assert verify(canonical_bytes(envelope), issuer.fingerprint).verdict.value == "PASS"


def _quotes(case: str, brief: str) -> list[dict[str, Any]]:
    good_brief = Quote.of("brief", brief, 0, 9).to_dict()
    good_result = Quote.of("result", RESULT, 4, 11).to_dict()
    if case == "none":
        return []
    if case == "brief-only":
        return [good_brief]
    if case == "invented":  # text the result never said
        return [
            good_brief,
            {**Quote.of("result", "The result is perfect", 0, 21).to_dict(), "start": 0, "end": 21},
        ]
    if case == "wrong-offsets":
        return [good_brief, {**good_result, "start": 5, "end": 12}]
    if case == "wrong-hash":
        return [good_brief, {**good_result, "quoteHash": "sha256:" + "0" * 64}]
    if case == "other-artifact":
        return [good_brief, {**good_result, "artifact": "acceptance"}]
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case", ["none", "brief-only", "invented", "wrong-offsets", "wrong-hash", "other-artifact"]
)
def test_an_ungrounded_verdict_routes_to_the_poster_and_pays_nothing(
    store: Store, case: str
) -> None:
    """An injected or lazy verifier that cites nothing, or cites what is not there, moves no
    money: its UNKNOWN is receipted, the poster decides, and the poster's approval pays."""
    issuer = SignedReceipts(SigningKey.generate())
    h = make_harness(store, issuer=issuer)
    tid = _delivered(h)
    brief = h.ok("pat", "GET", f"/tasks/{tid}")["brief"]
    body = h.signed("vera", tid, True, ["Looks perfect."], quotes=_quotes(case, brief))
    view = h.ok("vera", "POST", f"/tasks/{tid}/verdict", body)
    assert view["status"] == "submitted" and view["ending"] is None
    assert view["routed"] is True  # the console offers the poster its review on this
    routed = view["verdicts"][-1]
    assert routed["kind"] == "routed" and routed["passed"] is None
    assert h.balance("wallet:ann") == FUNDS
    statement = _statement(h, view["receipts"][-1])
    assert statement["predicate"]["verdict"] == "UNKNOWN"
    assert statement["predicate"]["policyDecision"]["routedTo"] == "poster"
    # The verifier cannot judge again; the poster decides, as in manual review.
    again = h.call("vera", "POST", f"/tasks/{tid}/verdict", h.signed("vera", tid, True))
    assert again.status_code == 409
    paid = h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True})
    assert paid["ending"] == "paid_on_pass"
    assert h.balance("wallet:ann") == FUNDS + 1_800_000


def test_a_routed_task_resubmitted_goes_back_to_its_verifier(store: Store) -> None:
    """After the poster rejects a routed submission, the next one awaits the verifier again."""
    h = make_harness(store)
    tid = _delivered(h)
    h.ok("vera", "POST", f"/tasks/{tid}/verdict", h.signed("vera", tid, True, quotes=[]))
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": False, "reasons": ["No."]})
    again = h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": RESULT + " Also profit."})
    assert again["status"] == "awaiting_verification" and again["routed"] is False
    assert (
        h.refused("pat", "POST", f"/tasks/{tid}/review", {"passed": True})[1] == "NOT_MANUAL_MODE"
    )
    assert h.verdict("vera", tid, True)["ending"] == "paid_on_pass"


def test_agent_review_needs_a_brief(h: Harness) -> None:
    """There is nothing to ground a review in without a brief: posting refuses it."""
    r = h.call(
        "pat",
        "POST",
        "/tasks",
        {
            "title": "t",
            "reward": "10",
            "deadline_hours": 24,
            "mode": "agent",
            "verifier": "vera",
            "brief": "  ",
        },
    )
    assert (r.status_code, r.json()["error"]["code"]) == (400, "BRIEF_REQUIRED")
