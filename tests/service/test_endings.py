"""End to end through the HTTP API: every ending of a task in every mode, and the money.

Three ways to pay (a pass, a ruling for the agent, collection after escalation) and the refunds
(cancel, unaccepted, undelivered, after a failed round and the appeal window, a ruling for the
poster), plus escalation itself. Each test ends by checking the ledger sums to zero.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adjudge.store import Store
from support.harness import FUNDS, Harness, make_harness

GOOD = "A long enough result."
BAD = "FAIL: nothing here"
MODES = ["auto", "agent", "manual"]
REWARD = 2_000_000


@pytest.fixture
def h(sqlite_store: Store) -> Iterator[Harness]:
    """A fresh service on SQLite."""
    harness = make_harness(sqlite_store)
    yield harness
    harness.ledger()  # every test ends with a balanced ledger


def deliver(h: Harness, tid: str, result: str = GOOD) -> dict:
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    return h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": result})


def resubmit(h: Harness, tid: str, result: str) -> dict:
    return h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": result})


def judge(h: Harness, tid: str, mode: str, passed: bool) -> dict:
    """Judge the latest submission the way the mode does (auto: deliver GOOD or BAD first)."""
    if mode == "auto":
        return h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    body = {"passed": passed, "reasons": [] if passed else ["The summary table is missing."]}
    if mode == "manual":
        return h.ok("pat", "POST", f"/tasks/{tid}/review", body)
    return h.verdict("vera", tid, passed, body["reasons"])


def wallets(h: Harness) -> tuple[int, int, int]:
    b = h.ledger()
    return int(b["wallet:pat"]), int(b["wallet:ann"]), int(b.get("platform:fees", "0"))


# --- payouts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_pass_pays_agent_90_and_platform_10(h: Harness, mode: str) -> None:
    """A pass pays the agent 90% and the platform 10% in the same step, with a receipt."""
    tid = h.post(mode)
    assert wallets(h) == (FUNDS - REWARD, FUNDS, 0)
    view = deliver(h, tid)
    assert view["status"] == ("awaiting_verification" if mode == "agent" else "submitted")
    view = judge(h, tid, mode, True)
    assert view["status"] == "completed" and view["ending"] == "paid_on_pass"
    assert view["verification_result"]["passed"] is True
    assert wallets(h) == (FUNDS - REWARD, FUNDS + 1_800_000, 200_000)
    receipts = h.ok("pat", "GET", f"/tasks/{tid}/receipts")["receipts"]
    assert len(receipts) == 1 and receipts[0]["receipt"]["statement"]["verdict"] == "PASS"
    assert h.ok("pat", "GET", f"/receipts/{receipts[0]['id']}")["digest"] == receipts[0]["digest"]
    assert h.ok("pat", "GET", "/receipts/head")["digest"] == receipts[0]["digest"]
    assert h.ok("pat", "GET", "/agents/ann")["reputation"] == 100


@pytest.mark.parametrize("mode", MODES)
def test_dispute_ruled_for_agent_pays(h: Harness, mode: str) -> None:
    """A failed round costs reputation; the agent disputes and the admin rules it paid."""
    tid = h.post(mode)
    deliver(h, tid, BAD)
    assert judge(h, tid, mode, False)["status"] == "failed"
    record = h.ok("bob", "GET", "/agents/ann")
    assert (record["reputation"], record["disputes"]) == (90, 1)
    assert h.ok("ann", "POST", f"/tasks/{tid}/disputes", {"reason": "It is right."})["status"] == (
        "disputed"
    )
    assert h.refused("ann", "POST", f"/tasks/{tid}/ruling", {"pay_agent": True}) == (
        403,
        "ROLE_REQUIRED",
    )
    view = h.ok("root", "POST", f"/tasks/{tid}/ruling", {"pay_agent": True, "note": "Fine."})
    assert view["ending"] == "paid_by_ruling"
    assert wallets(h) == (FUNDS - REWARD, FUNDS + 1_800_000, 200_000)
    kinds = [v["kind"] for v in view["verdicts"]]
    assert kinds == ["verdict", "ruling"] and len(view["receipts"]) == 2


@pytest.mark.parametrize("mode", MODES)
def test_never_judged_escalates_and_agent_collects(h: Harness, mode: str) -> None:
    """Delivered work never judged: reclaiming escalates; the agent collects 14 days later."""
    tid = h.post(mode)
    deliver(h, tid)
    assert h.refused("pat", "POST", f"/tasks/{tid}/reclaim") == (409, "DEADLINE_NOT_REACHED")
    h.later(1)
    view = h.ok("pat", "POST", f"/tasks/{tid}/reclaim")
    assert view["status"] == "escalated"
    assert wallets(h) == (FUNDS - REWARD, FUNDS, 0)  # escalation moves no money
    h.later(13.9)
    assert h.refused("ann", "POST", f"/tasks/{tid}/collect") == (409, "COLLECT_TOO_EARLY")
    h.later(0.1)
    assert h.ok("ann", "POST", f"/tasks/{tid}/collect")["ending"] == "paid_after_escalation"
    assert wallets(h) == (FUNDS - REWARD, FUNDS + 1_800_000, 200_000)


# --- refunds ------------------------------------------------------------------------------------


def test_cancel_unaccepted_refunds_in_full(h: Harness) -> None:
    """The poster cancels a task nobody took; the whole reward comes back, no fee."""
    tid = h.post("manual")
    assert h.ok("pat", "POST", f"/tasks/{tid}/cancel")["ending"] == "refunded_on_cancel"
    assert wallets(h) == (FUNDS, FUNDS, 0)


def test_unaccepted_after_deadline_refunds(h: Harness) -> None:
    """Nobody took the task by the deadline: reclaim refunds it."""
    tid = h.post("auto")
    h.later(1)
    assert h.refused("ann", "POST", f"/tasks/{tid}/accept") == (409, "DEADLINE_REACHED")
    assert h.ok("pat", "POST", f"/tasks/{tid}/reclaim")["ending"] == "refunded_unaccepted"
    assert wallets(h) == (FUNDS, FUNDS, 0)


@pytest.mark.parametrize("mode", MODES)
def test_undelivered_refunds(h: Harness, mode: str) -> None:
    """The agent took the task and never delivered: reclaim after the deadline refunds it."""
    tid = h.post(mode)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    assert h.refused("pat", "POST", f"/tasks/{tid}/cancel") == (409, "ILLEGAL_TRANSITION")
    h.later(1)
    assert h.ok("pat", "POST", f"/tasks/{tid}/reclaim")["ending"] == "refunded_undelivered"
    assert wallets(h) == (FUNDS, FUNDS, 0)


@pytest.mark.parametrize("mode", MODES)
def test_failed_refunds_after_deadline_and_appeal_window(h: Harness, mode: str) -> None:
    """After a fail the poster is refunded once the deadline and the 3-day window have passed."""
    tid = h.post(mode)
    deliver(h, tid, BAD)
    h.advance(hours=23)
    judge(h, tid, mode, False)
    h.later(1)
    assert h.refused("pat", "POST", f"/tasks/{tid}/reclaim") == (409, "APPEAL_WINDOW_OPEN")
    assert h.refused("pat", "POST", f"/tasks/{tid}/disputes", {}) == (409, "DEADLINE_REACHED")
    assert h.refused("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD}) == (
        409,
        "DEADLINE_REACHED",
    )
    h.later(2)
    view = h.ok("pat", "POST", f"/tasks/{tid}/reclaim")
    assert view["ending"] == "refunded_after_fail"
    assert wallets(h) == (FUNDS, FUNDS, 0)
    assert h.refused("ann", "POST", f"/tasks/{tid}/disputes", {}) == (409, "ILLEGAL_TRANSITION")


@pytest.mark.parametrize("mode", MODES)
def test_dispute_ruled_for_poster_refunds(h: Harness, mode: str) -> None:
    """The poster disputes a delivered result before the deadline; the admin refunds."""
    tid = h.post(mode)
    deliver(h, tid)
    h.ok("pat", "POST", f"/tasks/{tid}/disputes", {"reason": "Plagiarised."})
    view = h.ok("root", "POST", f"/tasks/{tid}/ruling", {"pay_agent": False})
    assert view["ending"] == "refunded_by_ruling"
    assert wallets(h) == (FUNDS, FUNDS, 0)


@pytest.mark.parametrize("mode", MODES)
def test_escalation_ruled_for_poster_refunds(h: Harness, mode: str) -> None:
    """An admin who rules on an escalated task before 14 days stops the agent collecting."""
    tid = h.post(mode)
    deliver(h, tid)
    h.later(1)
    h.ok("pat", "POST", f"/tasks/{tid}/reclaim")
    assert h.ok("root", "POST", f"/tasks/{tid}/ruling", {"pay_agent": False})["ending"] == (
        "refunded_by_ruling"
    )
    h.later(14)
    assert h.refused("ann", "POST", f"/tasks/{tid}/collect") == (409, "ILLEGAL_TRANSITION")
    assert wallets(h) == (FUNDS, FUNDS, 0)


# --- rounds, attempts, late disputes ----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_three_rounds_then_max_attempts(h: Harness, mode: str) -> None:
    """Each round is judged from scratch; a fourth submission is MAX_ATTEMPTS_REACHED."""
    tid = h.post(mode)
    deliver(h, tid, BAD)
    judge(h, tid, mode, False)
    for _ in range(2):
        resubmit(h, tid, BAD)
        view = judge(h, tid, mode, False)
    assert view["attempts"] == 3 and len(view["verdicts"]) == 3
    assert h.refused("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD}) == (
        409,
        "MAX_ATTEMPTS_REACHED",
    )
    record = h.ok("ann", "GET", "/agents/ann")
    assert (record["reputation"], record["disputes"]) == (70, 3)


@pytest.mark.parametrize("mode", MODES)
def test_second_round_can_pass(h: Harness, mode: str) -> None:
    """After a fail the agent submits again and a pass pays."""
    tid = h.post(mode)
    deliver(h, tid, BAD)
    judge(h, tid, mode, False)
    resubmit(h, tid, GOOD)
    assert judge(h, tid, mode, True)["ending"] == "paid_on_pass"


def test_agent_disputes_within_three_days_after_deadline(h: Harness) -> None:
    """After the deadline only the agent may dispute, within 3 days of the failed verdict."""
    tid = h.post("manual")
    deliver(h, tid)
    h.advance(hours=23)
    judge(h, tid, "manual", False)
    h.later(1)
    assert h.ok("ann", "POST", f"/tasks/{tid}/disputes", {})["status"] == "disputed"
    h.ok("root", "POST", f"/tasks/{tid}/ruling", {"pay_agent": False})


def test_auto_task_not_finalized_stays_unjudged(h: Harness) -> None:
    """Nothing but finalize runs the auto check: a submitted auto task waits, unjudged."""
    tid = h.post("auto")
    deliver(h, tid)
    h.later(0.9)
    view = h.ok("pat", "GET", f"/tasks/{tid}")
    assert view["status"] == "submitted" and view["verdicts"] == []
    assert h.refused("pat", "POST", f"/tasks/{tid}/finalize") == (403, "ROLE_REQUIRED")
    assert h.refused("bob", "POST", f"/tasks/{tid}/finalize") == (403, "NOT_TASK_AGENT")
