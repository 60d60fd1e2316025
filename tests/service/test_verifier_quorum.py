"""Agent review by a panel of verifiers, k of n: each votes with its own signed, grounded verdict;
k agreeing votes decide, a split goes to an admin, and the receipt lists every vote."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from adjudge.kernel.oracle import Record
from adjudge.market.signed_verdicts import sign_verdict, verdict_payload
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.replay import from_answer, replay
from adjudge.store import Store
from support.harness import FUNDS, Harness, make_harness
from support.migrations import downgrade

RESULT = "The summary: revenue rose 4% while costs fell."
BRIEF = "Summarise the quarterly report in one sentence."
PAYOUT = 1_800_000  # 2 USDC less the 10% fee


@pytest.fixture
def q(store: Store) -> Harness:
    """A harness whose verifiers vera, vic and ann all take verification jobs."""
    h = make_harness(store, issuer=SignedReceipts(SigningKey.generate()))
    for name in ("vic", "ann"):
        h.ok(name, "PATCH", "/accounts/me", {"verifier_opt_in": True})
    return h


def _panel(h: Harness, verifiers: list[str], quorum: int | None = None) -> str:
    body: dict[str, Any] = {"verifier": None, "verifiers": verifiers, "brief": BRIEF}
    if quorum is not None:
        body["quorum"] = quorum
    tid = h.post("agent", **body)
    h.ok("bob", "POST", f"/tasks/{tid}/accept")
    h.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": RESULT})
    return tid


def _statement(h: Harness, receipt_id: str) -> dict[str, Any]:
    body = h.ok("pat", "GET", f"/receipts/{receipt_id}")["receipt"]
    return dict(json.loads(base64.b64decode(body["envelope"]["payload"])))


def _rows(statement: dict[str, Any]) -> dict[str, str]:
    return {
        c["verifierKey"]: c["verdict"]
        for c in statement["predicate"]["checks"]
        if c["name"].startswith("agent-review:")
    }


def test_a_quorum_of_passes_pays_and_the_receipt_lists_each_vote(q: Harness) -> None:
    """2 of 3 grounded PASS votes pay out; the receipt holds one row per vote (by key) and the
    quorum with every verifier's vote, the one who never voted as none."""
    tid = _panel(q, ["vera", "vic", "ann"], quorum=2)
    first = q.verdict("vera", tid, True, ["Accurate."])
    assert first["status"] == "awaiting_verification" and first["ending"] is None
    assert [v["vote"] for v in first["panel"]["verifiers"]] == ["PASS", None, None]
    done = q.verdict("vic", tid, True, ["Right."])
    assert done["ending"] == "paid_on_pass"
    assert q.balance("wallet:bob") == FUNDS + PAYOUT
    statement = _statement(q, done["receipts"][-1])
    keys = {n: q.signers[n].keyid for n in ("vera", "vic", "ann")}
    assert statement["predicate"]["verdict"] == "PASS"
    assert _rows(statement) == {keys["vera"]: "PASS", keys["vic"]: "PASS"}
    decision = statement["predicate"]["policyDecision"]
    assert decision["ending"] == "paid_on_pass"
    assert (decision["quorum"], decision["verifiers"]) == (2, 3)
    assert decision[f"vote:{keys['ann']}"] == "none"
    assert sorted(statement["predicate"]["trustPolicy"]["verifierKeys"]) == sorted(keys.values())
    q.ledger()  # money conserved: both sums zero


def test_a_quorum_of_fails_fails_the_round(q: Harness) -> None:
    """2 of 3 FAIL votes fail the round; nothing is paid, the escrow holds the reward."""
    tid = _panel(q, ["vera", "vic", "ann"], quorum=2)
    q.verdict("vera", tid, False, ["Wrong figures."])
    done = q.verdict("ann", tid, False, ["Not one sentence."])
    assert done["status"] == "failed"
    statement = _statement(q, done["receipts"][-1])
    assert statement["predicate"]["verdict"] == "FAIL"
    assert set(_rows(statement).values()) == {"FAIL"}
    assert q.balance("wallet:bob") == FUNDS
    assert q.balance(f"escrow:{tid}") == 2_000_000
    q.ledger()


def test_a_dissent_sinks_a_pass_and_a_split_goes_to_an_admin(q: Harness) -> None:
    """k=2 of 3: a PASS and a FAIL wait for the third; a second PASS cannot outvote the dissent
    (the kernel lets any vote move a set down), so it is a split: disputed, no money moves, and
    the admin's ruling decides."""
    tid = _panel(q, ["vera", "vic", "ann"], quorum=2)
    q.verdict("vera", tid, True)
    waiting = q.verdict("vic", tid, False, ["Costs rose."])
    assert waiting["status"] == "awaiting_verification"
    split = q.verdict("ann", tid, True)
    assert split["status"] == "disputed" and split["ending"] is None
    assert q.balance("wallet:bob") == FUNDS and q.balance(f"escrow:{tid}") == 2_000_000
    statement = _statement(q, split["receipts"][-1])
    decision = statement["predicate"]["policyDecision"]
    assert decision["routedTo"] == "admin" and decision["reason"].startswith("split:")
    assert len(_rows(statement)) == 3
    # An admin rules on the split.
    ruled = q.ok("root", "POST", f"/tasks/{tid}/ruling", {"pay_agent": True})
    assert ruled["ending"] == "paid_by_ruling"
    assert q.balance("wallet:bob") == FUNDS + PAYOUT
    q.ledger()


def test_votes_that_can_no_longer_agree_split_at_once(q: Harness) -> None:
    """k=2 of 2: one PASS and one FAIL can never agree; the task goes to an admin."""
    tid = _panel(q, ["vera", "vic"])  # a majority of 2 is 2
    q.verdict("vera", tid, False)
    assert q.verdict("vic", tid, True)["status"] == "disputed"


def test_each_verifier_votes_once_and_not_after_the_decision(q: Harness) -> None:
    """A second vote on the same submission is VOTE_ALREADY_CAST; a vote once the quorum
    decided is QUORUM_DECIDED; a verifier the task does not name is NOT_TASK_VERIFIER."""
    tid = _panel(q, ["vera", "vic", "ann"], quorum=2)
    body = q.signed("vera", tid, True)
    q.ok("vera", "POST", f"/tasks/{tid}/verdict", body)
    again = q.refused("vera", "POST", f"/tasks/{tid}/verdict", q.signed("vera", tid, True))
    assert again == (409, "VOTE_ALREADY_CAST")
    q.verdict("vic", tid, True)
    late = q.refused("ann", "POST", f"/tasks/{tid}/verdict", q.signed("ann", tid, False))
    assert late == (409, "QUORUM_DECIDED")
    other = _panel(q, ["vera", "ann"])
    outsider = q.refused("vic", "POST", f"/tasks/{other}/verdict", q.signed("vera", other, True))
    assert outsider == (403, "NOT_TASK_VERIFIER")


def test_a_vote_signed_over_another_submission_or_task_is_refused(q: Harness) -> None:
    """The service rebuilds the payload from its own records: a signature over another
    submission's digest, or another task's verdict replayed, is VERDICT_SIGNATURE_INVALID."""
    tid = _panel(q, ["vera", "vic"])
    task = q.ok("vera", "GET", f"/tasks/{tid}")
    quotes = q.signed("vera", tid, True)["quotes"]
    forged = verdict_payload(
        task_id=tid,
        attempt=task["attempts"],
        result_digest="sha256:" + "1" * 64,
        brief_digest=Record(BRIEF.encode("utf-8"), "brief").digest,
        passed=True,
        reasons=[],
        quotes=quotes,
        verifier_key=q.signers["vera"].keyid,
    )
    body = {
        "passed": True,
        "reasons": [],
        "quotes": quotes,
        **sign_verdict(q.signers["vera"], forged),
    }
    code = q.refused("vera", "POST", f"/tasks/{tid}/verdict", body)
    assert code == (403, "VERDICT_SIGNATURE_INVALID")
    other = _panel(q, ["vera", "vic"])
    replayed = q.signed("vera", other, True)
    assert q.refused("vera", "POST", f"/tasks/{tid}/verdict", replayed) == (
        403,
        "VERDICT_SIGNATURE_INVALID",
    )
    # Nothing was counted: vera may still vote with a good signature.
    assert q.verdict("vera", tid, True)["panel"]["verifiers"][0]["vote"] == "PASS"


def test_a_panel_verifier_cannot_take_the_task(q: Harness) -> None:
    """Every verifier of the panel is refused the task (IS_VERIFIER)."""
    tid = q.post("agent", verifier=None, verifiers=["vera", "ann"], brief=BRIEF)
    assert q.refused("ann", "POST", f"/tasks/{tid}/accept") == (403, "IS_VERIFIER")


def test_each_panel_verifier_finds_the_task_among_its_own(q: Harness) -> None:
    """``GET /tasks?mine=true`` lists a panel task for each of its verifiers (as it does for a
    task's one verifier), and not for a verifier who is not on the panel."""
    tid = q.post("agent", verifier=None, verifiers=["vera", "ann"], brief=BRIEF)
    other = q.post("agent", verifier="vic", brief=BRIEF)
    for name, expected in (("vera", {tid}), ("ann", {tid}), ("vic", {other})):
        listed = q.ok(name, "GET", "/tasks?mine=true")["tasks"]
        assert {t["id"] for t in listed} == expected, name
    assert {t["id"] for t in q.ok("pat", "GET", "/tasks?mine=true")["tasks"]} >= {tid, other}


def test_the_seats_of_panels_posted_before_the_index_are_written_by_its_migration(
    q: Harness, store: Store
) -> None:
    """Upgrading from before the seats' index (0021) writes each panel's seats from the task's
    panel, so its verifiers find it again; 0022 downgrades cleanly."""
    tid = q.post("agent", verifier=None, verifiers=["vera", "ann"], brief=BRIEF)
    downgrade(store, "0021")
    store.migrate()
    for name in ("vera", "ann"):
        assert [t["id"] for t in q.ok(name, "GET", "/tasks?mine=true")["tasks"]] == [tid]


@pytest.mark.parametrize(
    ("verifiers", "quorum", "expected"),
    [
        (["vera", "pat"], None, (400, "VERIFIER_IS_POSTER")),
        (["vera", "vera"], None, (400, "VERIFIER_REPEATED")),
        (["vera", "bob"], None, (409, "VERIFIER_NOT_OPTED_IN")),
        (["vera", "vic"], 3, (400, "QUORUM_INVALID")),
        (["vera", "vic"], 0, (400, "QUORUM_INVALID")),
        (["vera"] + [f"v{i}" for i in range(9)], None, (400, "VERIFIERS_TOO_MANY")),
    ],
)
def test_posting_a_panel_refuses_what_cannot_stand(
    q: Harness, verifiers: list[str], quorum: int | None, expected: tuple[int, str]
) -> None:
    """Distinct, opted-in verifiers, none the poster, at most 9, and 1 <= k <= n."""
    body: dict[str, Any] = {
        "title": "t",
        "brief": BRIEF,
        "reward": "10",
        "deadline_hours": 24,
        "mode": "agent",
        "verifiers": verifiers,
    }
    if quorum is not None:
        body["quorum"] = quorum
    assert q.refused("pat", "POST", "/tasks", body) == expected
    assert q.balance("wallet:pat") == FUNDS


def test_one_verifier_named_as_a_panel_is_a_task_of_one_verifier(q: Harness) -> None:
    """``verifiers: [vera]`` posts exactly what ``verifier: vera`` does: no panel in the view."""
    tid = q.post("agent", verifier=None, verifiers=["vera"], brief=BRIEF)
    view = q.ok("pat", "GET", f"/tasks/{tid}")
    assert view["verifier"] == "vera" and "panel" not in view


def test_a_panel_undecided_at_the_deadline_escalates_as_an_unjudged_task(q: Harness) -> None:
    """No quorum by the deadline: as with one verifier who never posts, the poster's reclaim
    escalates the delivered work (no refund), and a vote after that is refused."""
    tid = _panel(q, ["vera", "vic", "ann"], quorum=2)
    q.verdict("vera", tid, True)
    q.later(2)
    escalated = q.ok("pat", "POST", f"/tasks/{tid}/reclaim")
    assert escalated["status"] == "escalated"
    assert q.balance("wallet:pat") == FUNDS - 2_000_000
    late = q.refused("vic", "POST", f"/tasks/{tid}/verdict", q.signed("vic", tid, True))
    assert late == (409, "ILLEGAL_TRANSITION")
    q.later(15)
    assert q.ok("bob", "POST", f"/tasks/{tid}/collect")["ending"] == "paid_after_escalation"
    q.ledger()


def test_a_resubmission_after_a_failed_quorum_opens_a_new_round_of_votes(q: Harness) -> None:
    """The votes belong to one submission: after a FAIL the next one is voted on afresh."""
    tid = _panel(q, ["vera", "vic"], quorum=1)
    assert q.verdict("vic", tid, False)["status"] == "failed"
    again = q.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": RESULT + " Margins held."})
    assert [v["vote"] for v in again["panel"]["verifiers"]] == [None, None]
    assert q.verdict("vic", tid, True)["ending"] == "paid_on_pass"


def _replayed(q: Harness, tid: str) -> Any:
    answer = q.ok("pat", "GET", f"/tasks/{tid}/bundle")
    return from_answer(answer), answer


@pytest.mark.parametrize(
    ("votes", "verdict"),
    [
        ([("vera", True), ("vic", True)], "PASS"),
        ([("vera", False), ("ann", False)], "FAIL"),
        ([("vera", True), ("vic", False), ("ann", True)], "FAIL"),  # a split: FAIL folds first
    ],
)
def test_a_panels_decision_replays_from_its_bundle(
    q: Harness, votes: list[tuple[str, bool]], verdict: str
) -> None:
    """The bundle holds the brief and each vote as signed: the replay re-verifies every
    signature, re-grounds every quote and re-tallies, byte for byte the signed statement; a
    vote edited in the bundle never replays the same."""
    tid = _panel(q, ["vera", "vic", "ann"], quorum=2)
    for who, passed in votes:
        q.verdict(who, tid, passed)
    data, answer = _replayed(q, tid)
    found = replay(data)
    assert found.outcome == "same", found.differences
    assert found.verdict == found.signed_verdict == verdict
    assert len(answer["votes"]["votes"]) == len(votes)
    flipped = json.loads(json.dumps(answer))
    flipped["votes"]["votes"][0]["passed"] = not votes[0][1]
    assert replay(from_answer(flipped)).outcome != "same"
