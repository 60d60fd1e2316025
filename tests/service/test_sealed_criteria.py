"""Sealed criteria over HTTP: commit at posting, reveal at verification, a broken seal escalates,
and the receipt binds the revealed criteria to the commitment."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adjudge.app.wiring import SignedReceipts
from adjudge.client import seal_criteria
from adjudge.errors import Error
from adjudge.market import seal
from adjudge.receipts import SigningKey, digest
from adjudge.receipts.canonical import canonical_bytes
from adjudge.receipts.envelope import Envelope
from adjudge.replay import from_answer, replay
from adjudge.replay.seal import verify_seal
from adjudge.store import Store, records
from support.bundles import edited
from support.harness import FUNDS, Harness, make_harness

ANSWER = {"expected_answer": "42"}
SALT = "a-poster-chosen-salt-of-some-length"
PUBLIC = {"max_length": 400}
GOOD = "The answer is 42."


@pytest.fixture
def h(sqlite_store: Store) -> Harness:
    """A harness with the real auto check and signed receipts."""
    return make_harness(
        sqlite_store, real_checker=True, issuer=SignedReceipts(SigningKey.generate())
    )


def _reveal(criteria: dict[str, Any] = ANSWER, salt: str = SALT) -> dict[str, Any]:
    return {"criteria": dict(criteria), "salt": salt}


def _sealed(h: Harness, **fields: Any) -> str:
    commitment = seal.commit(ANSWER, SALT)
    return h.post("auto", criteria=PUBLIC, seal=commitment, **fields)


def _delivered(h: Harness, result: str = GOOD, *, finalize: bool = True) -> str:
    tid = _sealed(h)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": result})
    if finalize:
        waiting = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
        assert waiting["status"] == "awaiting_verification"
    return tid


def _statement(h: Harness, receipt_id: str) -> dict[str, Any]:
    envelope = h.ok("pat", "GET", f"/receipts/{receipt_id}/envelope")
    return dict(json.loads(Envelope.from_dict(envelope).payload))


def test_the_commitment_is_public_and_the_answer_is_not(h: Harness) -> None:
    """Everyone sees the commitment and that an answer is sealed; nobody sees the answer, and
    the service holds none until the reveal."""
    tid = _sealed(h)
    for who in ("ann", "bob", "pat"):
        view = h.ok(who, "GET", f"/tasks/{tid}")
        assert view["sealed"] is True
        assert view["seal"]["commitment"] == seal.commit(ANSWER, SALT)
        assert view["seal"]["revealed"] is False and view["seal"]["reveal"] is None
        assert view["criteria"] == {**PUBLIC, "has_expected_answer": True}
    stored = h.app.tasks.unit.read(lambda tx: records.task(tx, tid))
    assert stored is not None and "42" not in json.dumps(dict(stored.task.criteria))


def test_a_matching_reveal_judges_and_the_receipt_binds_it(h: Harness) -> None:
    """The agent's finalize waits for the reveal; the reveal runs the check at once; the
    receipt carries the oracle's check of the reveal against the commitment and the digest of
    the criteria judged (salted with the reveal's salt); the reveal is shown to the agent once
    the task ends."""
    tid = _delivered(h)
    waiting = h.ok("ann", "GET", f"/tasks/{tid}")
    assert waiting["seal"]["reveal_due_at"] is not None
    paid = h.ok("pat", "POST", f"/tasks/{tid}/reveal", _reveal())
    assert paid["status"] == "completed" and paid["ending"] == "paid_on_pass"
    assert h.balance("wallet:ann") == FUNDS + 1_800_000
    statement = _statement(h, paid["verification_result"]["receipt_id"])
    p = statement["predicate"]
    commitment = seal.commit(ANSWER, SALT)
    sealed = [
        c for c in p["checks"] if c.get("expression") == f'(= sealed-criteria "{commitment}")'
    ]
    assert len(sealed) == 1 and sealed[0]["verdict"] == "PASS" and sealed[0]["oracle"] is True
    # Salted with the reveal's salt: the plain digest would test an agent's guesses.
    judged = {**PUBLIC, **ANSWER}
    assert p["criteriaDigest"] == digest({"criteria": judged, "salt": SALT})
    assert p["criteriaDigest"] != digest(judged)
    after = h.ok("ann", "GET", f"/tasks/{tid}")
    assert after["seal"]["reveal"] == _reveal()  # disclosed: the task ended
    assert seal.parse_reveal(after["seal"]["reveal"]).digest == after["seal"]["commitment"]


def test_a_reveal_one_byte_off_is_refused_and_escalates_without_money(h: Harness) -> None:
    """A reveal that differs from the committed one by one byte is refused (SEAL_MISMATCH),
    the task escalates, no money moves, and no later reveal is taken."""
    tid = _delivered(h)
    escrow = h.balance(f"escrow:{tid}")
    off = _reveal({"expected_answer": "43"})
    assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", off) == (409, "SEAL_MISMATCH")
    view = h.ok("ann", "GET", f"/tasks/{tid}")
    assert view["status"] == "escalated" and "is not the commitment" in view["seal"]["broken"]
    assert view["verdicts"] == [] and h.balance(f"escrow:{tid}") == escrow == 2_000_000
    assert h.balance("wallet:ann") == FUNDS
    salt_off = _reveal(salt=SALT[:-1] + "X")
    assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", salt_off) == (409, "REVEAL_OVERDUE")
    assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", _reveal()) == (409, "REVEAL_OVERDUE")
    assert h.balance(f"escrow:{tid}") == 2_000_000


def test_a_retried_broken_reveal_is_refused_the_same_way(h: Harness) -> None:
    """Retrying a refused reveal with its Idempotency-Key answers the same refusal."""
    tid = _delivered(h)
    off = _reveal({"expected_answer": "42 "})
    for _ in range(2):
        r = h.call("pat", "POST", f"/tasks/{tid}/reveal", off, Idempotency_Key="reveal-1")
        assert r.status_code == 409 and r.json()["error"]["code"] == "SEAL_MISMATCH"


def test_only_the_poster_reveals(h: Harness) -> None:
    """The agent, another poster and an admin cannot reveal, even with the right reveal."""
    tid = _delivered(h)
    h.keys["paula"] = h.app.accounts.create(None, "paula", ("poster",)).value["api_key"]
    assert h.refused("paula", "POST", f"/tasks/{tid}/reveal", _reveal()) == (
        403,
        "NOT_TASK_POSTER",
    )
    for who in ("ann", "root"):
        status, _code = h.refused(who, "POST", f"/tasks/{tid}/reveal", _reveal())
        assert status == 403
    assert h.ok("ann", "GET", f"/tasks/{tid}")["status"] == "awaiting_verification"


def test_a_reveal_after_a_verdict_or_replayed_is_refused(h: Harness) -> None:
    """Once revealed and judged, a second reveal — the same one replayed, or another — is
    refused; a retry with the same Idempotency-Key answers what was stored, judging once."""
    tid = _delivered(h, "It is 41.")
    first = h.call("pat", "POST", f"/tasks/{tid}/reveal", _reveal(), Idempotency_Key="r1")
    again = h.call("pat", "POST", f"/tasks/{tid}/reveal", _reveal(), Idempotency_Key="r1")
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    assert first.json()["status"] == "failed"
    for body in (_reveal(), _reveal({"expected_answer": "41"})):
        assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", body) == (
            409,
            "SEAL_ALREADY_REVEALED",
        )
    assert len(h.ok("pat", "GET", f"/tasks/{tid}")["verdicts"]) == 1
    paid = _delivered(h)
    h.ok("pat", "POST", f"/tasks/{paid}/reveal", _reveal())
    assert h.refused("pat", "POST", f"/tasks/{paid}/reveal", _reveal()) == (
        409,
        "ILLEGAL_TRANSITION",
    )
    assert h.balance("wallet:ann") == FUNDS + 1_800_000  # paid once


def test_a_reveal_before_any_submission_is_not_due(h: Harness) -> None:
    """The answer stays with the poster until a submission waits for it."""
    tid = _sealed(h)
    assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", _reveal()) == (409, "REVEAL_NOT_DUE")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", _reveal()) == (409, "REVEAL_NOT_DUE")


def test_a_reveal_before_the_finalize_waits_for_it(h: Harness) -> None:
    """Revealed while the submission waits for the agent's finalize: the finalize judges at
    once, and a failed round is judged against the revealed answer again on resubmission."""
    tid = _delivered(h, "6 times 7 is 42.", finalize=False)
    opened = h.ok("pat", "POST", f"/tasks/{tid}/reveal", _reveal())
    assert opened["status"] == "submitted" and opened["seal"]["revealed"] is True
    assert opened["seal"]["reveal"] == _reveal()  # the poster's own
    assert h.ok("ann", "GET", f"/tasks/{tid}")["seal"]["reveal"] is None  # not yet the agent's
    failed = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert failed["status"] == "failed"
    assert "more than one answer" in " ".join(failed["verification_result"]["reasons"])
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    assert h.ok("ann", "POST", f"/tasks/{tid}/finalize")["ending"] == "paid_on_pass"


def test_a_reveal_never_sent_escalates_and_the_agent_collects(h: Harness) -> None:
    """A poster who withholds the reveal gains nothing: once the reveal window passes the task
    escalates, and the agent collects 14 days later unless an admin rules."""
    tid = _delivered(h)
    h.advance(days=3)
    view = h.ok("ann", "GET", f"/tasks/{tid}")
    assert view["status"] == "escalated" and "did not reveal" in view["seal"]["broken"]
    assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", _reveal()) == (409, "REVEAL_OVERDUE")
    assert h.refused("ann", "POST", f"/tasks/{tid}/collect") == (409, "COLLECT_TOO_EARLY")
    h.advance(days=14)
    paid = h.ok("ann", "POST", f"/tasks/{tid}/collect")
    assert paid["ending"] == "paid_after_escalation"


def test_the_upkeep_escalates_an_overdue_reveal(h: Harness) -> None:
    """The sweep escalates overdue reveals nobody looked at, once."""
    tid = _delivered(h)
    assert h.app.tasks.escalate_overdue() == 0
    h.advance(days=3, seconds=1)
    assert h.app.tasks.escalate_overdue() == 1
    assert h.app.tasks.escalate_overdue() == 0
    stored = h.app.tasks.unit.read(lambda tx: records.task(tx, tid))
    assert stored is not None and stored.task.status.value == "escalated"


def test_a_matching_reveal_of_unusable_criteria_escalates(h: Harness) -> None:
    """A poster who committed to an answer no auto check can use (over 2,000 characters), or to
    a rule that may not be sealed, breaks the seal though the digest matches."""
    for hidden in ({"expected_answer": "4" * 2001}, {"regex_pattern": "^42$"}):
        tid = h.post("auto", criteria=PUBLIC, seal=seal.commit(hidden, SALT))
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
        h.ok("ann", "POST", f"/tasks/{tid}/finalize")
        assert h.refused("pat", "POST", f"/tasks/{tid}/reveal", _reveal(hidden)) == (
            409,
            "SEAL_MISMATCH",
        )
        assert h.ok("pat", "GET", f"/tasks/{tid}")["status"] == "escalated"


def test_posting_refuses_an_unusable_seal(h: Harness) -> None:
    """A seal is a digest, on an auto task, whose answer is not also public."""
    base = {"title": "t", "reward": "1000", "deadline_hours": 2}
    good = seal.commit(ANSWER, SALT)
    for body in (
        {**base, "mode": "auto", "criteria": PUBLIC, "seal": "sha256:abc"},
        {**base, "mode": "manual", "seal": good},
        {**base, "mode": "auto", "criteria": {**PUBLIC, **ANSWER}, "seal": good},
    ):
        assert h.refused("pat", "POST", "/tasks", body) == (400, "SEAL_INVALID")
    # A sealed answer counts as the real check an auto task needs.
    assert h.ok("pat", "POST", "/tasks", {**base, "mode": "auto", "seal": good})["sealed"]


def test_the_commitment_cannot_change_after_posting(h: Harness, sqlite_store: Store) -> None:
    """No request changes a seal, and the store never writes one over the posted commitment."""
    from dataclasses import replace  # noqa: PLC0415

    body = {
        "title": "t",
        "reward": "1000",
        "deadline_hours": 2,
        "mode": "auto",
        "seal": seal.commit(ANSWER, SALT),
    }
    first = h.call("pat", "POST", "/tasks", body, Idempotency_Key="p1")
    other = {**body, "seal": seal.commit({"expected_answer": "7"}, SALT)}
    second = h.call("pat", "POST", "/tasks", other, Idempotency_Key="p1")
    assert second.status_code == 409 and second.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    tid = first.json()["id"]
    assert h.call("pat", "PATCH", f"/tasks/{tid}", {"seal": other["seal"]}).status_code == 405

    def overwrite(tx: Any) -> None:
        stored = records.task(tx, tid)
        assert stored is not None
        records.update_task(tx, stored, replace(stored.task, seal=other["seal"]))

    h.app.tasks.unit.write(overwrite)
    assert h.ok("ann", "GET", f"/tasks/{tid}")["seal"]["commitment"] == body["seal"]


def test_the_client_seals_with_a_random_salt() -> None:
    """Two seals of one answer differ (a fresh salt each), and each opens with its reveal."""
    c1, r1 = seal_criteria(ANSWER)
    c2, r2 = seal_criteria(ANSWER)
    assert c1 != c2 and len(r1["salt"]) >= 40
    assert seal.parse_reveal(r1).digest == c1 and seal.parse_reveal(r2).digest == c2


def _paid_bundle(h: Harness) -> tuple[str, bytes, str]:
    """A sealed task paid on its reveal: its id, its bundle (as the agent fetched it) and the
    service's key fingerprint."""
    tid = _delivered(h)
    h.ok("pat", "POST", f"/tasks/{tid}/reveal", _reveal())
    issuer = h.app.tasks.issuer
    assert isinstance(issuer, SignedReceipts)
    return tid, from_answer(h.ok("ann", "GET", f"/tasks/{tid}/bundle")), issuer.fingerprint


def test_a_sealed_verdict_replays_the_same_with_its_reveal(h: Harness) -> None:
    """The bundle holds the reveal, and the replay re-mints the seal check byte for byte."""
    _tid, data, fingerprint = _paid_bundle(h)
    report = replay(data, fingerprint)
    assert report.outcome == "same", report.differences
    assert any("open the commitment" in note for note in report.notes)


def test_a_reveal_edited_by_one_byte_in_a_bundle_is_a_difference(h: Harness) -> None:
    """Changing the bundled reveal's answer (or its salt) by one byte, even with the criteria
    edited to agree, does not replay the same: its digest is not the commitment."""
    _tid, data, fingerprint = _paid_bundle(h)
    for edit in (
        lambda b: b.replace(b'"42"', b'"43"'),
        lambda b: b.replace(SALT.encode(), SALT[:-1].encode() + b"Y"),
    ):
        report = replay(edited(data, "reveal.json", edit), fingerprint)
        assert report.outcome == "different"
        assert any(d.what == "reveal.json" for d in report.differences)
    both = edited(
        edited(data, "reveal.json", lambda b: b.replace(b'"42"', b'"43"')),
        "criteria.json",
        lambda b: b.replace(b'"42"', b'"43"'),
    )
    report = replay(both, fingerprint)
    whats = {d.what for d in report.differences}
    assert "reveal.json" in whats and "criteria.json" in whats


def test_an_agent_verifies_the_binding_from_the_receipt_alone(h: Harness) -> None:
    """With the receipt, the disclosed reveal, the public criteria and the commitment it saw,
    the agent proves offline that it was judged against the committed answer; any other reveal,
    commitment or criteria is found."""
    tid, _data, fingerprint = _paid_bundle(h)
    view = h.ok("ann", "GET", f"/tasks/{tid}")
    receipt = canonical_bytes(h.ok("ann", "GET", f"/receipts/{view['receipts'][-1]}/envelope"))
    commitment = view["seal"]["commitment"]
    shown = view["seal"]["reveal"]
    good = verify_seal(receipt, fingerprint, shown, criteria=PUBLIC, commitment=commitment)
    assert good.valid and good.commitment == commitment, good.findings
    for reveal, criteria, seen in (
        (_reveal({"expected_answer": "43"}), PUBLIC, commitment),
        (shown, {"max_length": 401}, commitment),
        (shown, PUBLIC, seal.commit({"expected_answer": "7"}, SALT)),
    ):
        bad = verify_seal(receipt, fingerprint, reveal, criteria=criteria, commitment=seen)
        assert not bad.valid and bad.findings
    with pytest.raises(Error):  # another key: nothing the receipt says counts
        verify_seal(receipt, SigningKey.generate().keyid, shown)


def test_a_dry_run_of_a_sealed_task_never_runs_the_sealed_answer(h: Harness) -> None:
    """The sealed answer is hidden from a dry run as a posted one is: named as not run, and
    counted only where it changes the hard failures (a short answer is not under a floor)."""
    tid = _sealed(h)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    for draft in ("43", "42"):
        dry = h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": draft})
        assert dry["rules_not_run"] == ["expected_answer"] and dry["passed"] is True
