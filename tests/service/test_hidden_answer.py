"""A task's expected answer stays hidden from its agent in the receipts it may read: their
criteria digest is salted with a secret drawn at posting, so hashing guesses of the answer
(even the right one) never meets it, and the poster, who holds the salt, recomputes it and
replays the verdict byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adjudge.app.wiring import SignedReceipts
from adjudge.errors import InternalError
from adjudge.market import Draft, post
from adjudge.market.lifecycle import MIN_CRITERIA_SALT
from adjudge.market.proof import criteria_digest, signed_digest
from adjudge.receipts import SigningKey, digest
from adjudge.receipts.envelope import Envelope
from adjudge.replay import from_answer, replay
from adjudge.store import Store
from support.bundles import edited
from support.harness import Harness, make_harness

CRITERIA = {"expected_answer": "48213", "max_length": 400}


@pytest.fixture
def h(sqlite_store: Store) -> Harness:
    """A harness with the real auto check and signed receipts."""
    return make_harness(
        sqlite_store, real_checker=True, issuer=SignedReceipts(SigningKey.generate())
    )


def _failed_round(h: Harness) -> tuple[str, dict[str, Any]]:
    """A task with a hidden answer whose agent's first round failed, and that round's
    receipt statement as the agent reads it."""
    tid = h.post("auto", criteria=CRITERIA)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "The answer is 1."})
    failed = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert failed["status"] == "failed"
    envelope = h.ok(
        "ann", "GET", f"/receipts/{failed['verification_result']['receipt_id']}/envelope"
    )
    return tid, dict(json.loads(Envelope.from_dict(envelope).payload))


def test_no_guess_of_the_answer_meets_the_digest_the_agent_reads(h: Harness) -> None:
    """The agent's view holds neither the answer nor the salt; the receipt's criteria digest
    is not the plain digest of the criteria even with the right answer guessed, and it is the
    salted digest the poster recomputes with the salt its own view shows."""
    tid, statement = _failed_round(h)
    bound = statement["predicate"]["criteriaDigest"]
    mine = h.ok("ann", "GET", f"/tasks/{tid}")
    assert mine["criteria"] == {"max_length": 400, "has_expected_answer": True}
    assert mine["criteria_salt"] is None
    assert bound != digest(CRITERIA)  # the right guess, hashed plainly, misses
    theirs = h.ok("pat", "GET", f"/tasks/{tid}")
    salt = theirs["criteria_salt"]
    assert isinstance(salt, str) and len(salt) >= 40
    assert bound == criteria_digest(theirs["criteria"], salt)
    assert bound == digest({"criteria": CRITERIA, "salt": salt})
    other = h.ok("pat", "GET", f"/tasks/{h.post('auto', criteria=CRITERIA)}")["criteria_salt"]
    assert other != salt  # each task draws its own


def test_the_posters_bundle_replays_the_same_and_its_salt_is_bound(h: Harness) -> None:
    """The poster's bundle holds the salt and replays the same; a salt or an answer edited by
    one byte is a difference in the criteria the receipt binds."""
    tid, _ = _failed_round(h)
    issuer = h.app.tasks.issuer
    assert isinstance(issuer, SignedReceipts)
    data = from_answer(h.ok("pat", "GET", f"/tasks/{tid}/bundle"))
    report = replay(data, issuer.fingerprint)
    assert report.outcome == "same", report.differences
    salt = h.ok("pat", "GET", f"/tasks/{tid}")["criteria_salt"]
    for name, edit in (
        ("salt.json", lambda b: b.replace(salt[-4:].encode(), b"AAAA")),
        ("criteria.json", lambda b: b.replace(b'"48213"', b'"48214"')),
    ):
        changed = replay(edited(data, name, edit), issuer.fingerprint)
        assert changed.outcome == "different"
        assert any(d.what == "criteria.json" for d in changed.differences)
    assert h.refused("ann", "GET", f"/tasks/{tid}/bundle") == (403, "BUNDLE_WITHHELD")


def test_the_market_posts_no_hidden_answer_without_a_salt(h: Harness) -> None:
    """A caller that forgets to draw the salt posts nothing (``CRITERIA_SALT_MISSING``), and a
    salt too short to hide anything is refused the same way."""
    ctx = h.app.tasks.context()
    when = ctx.now + h.day * 2
    for salt in (None, "x" * (MIN_CRITERIA_SALT - 1)):
        draft = Draft("pat", 1_000_000, when, "auto", CRITERIA, criteria_salt=salt)
        with pytest.raises(InternalError) as refused:
            post("task_x", draft, ctx)
        assert refused.value.code == "CRITERIA_SALT_MISSING"
    plain = Draft("pat", 1_000_000, when, "auto", {"min_length": 40})
    assert post("task_y", plain, ctx).task.criteria_salt is None


def test_a_receipt_is_checked_against_the_salted_digest_or_the_plain_one_it_was_signed_with() -> (
    None
):
    """The digest a receipt's criteria are checked against: salted; for a receipt signed before
    hidden answers were salted, the plain one when that is what it binds; any other signed
    value is checked against the salted digest (and so differs)."""
    salted = criteria_digest(CRITERIA, "s" * 43)
    plain = digest(CRITERIA)
    assert signed_digest(CRITERIA, "s" * 43, salted) == salted
    assert signed_digest(CRITERIA, "s" * 43, plain) == plain
    assert signed_digest(CRITERIA, "s" * 43, "sha256:" + "0" * 64) == salted
    assert signed_digest(CRITERIA, None, salted) == plain  # no salt: the plain digest only
