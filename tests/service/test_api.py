"""The HTTP API's contract: refusals and their statuses, visibility, idempotency, races."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from adjudge import Error
from adjudge.app import App
from adjudge.store import Store
from support.harness import FUNDS, Harness, make_harness

GOOD = "A long enough result."


BASE = {"title": "t", "reward": "2000000", "deadline_hours": 24}
AGENT = {**BASE, "mode": "agent", "brief": "Summarise the attached report."}


@pytest.mark.parametrize(
    ("who", "body", "expected"),
    [
        ("pat", {**BASE, "mode": "oracle"}, (400, "VERIFICATION_MODE_UNSUPPORTED")),
        ("pat", {**BASE, "mode": "auto"}, (400, "AUTO_CRITERIA_REQUIRED")),
        (
            "pat",
            {**BASE, "mode": "auto", "criteria": {"regex_pattern": "(a+)+$"}},
            (400, "REGEX_PATTERN_UNUSABLE"),
        ),
        ("pat", AGENT, (400, "VERIFIER_REQUIRED")),
        ("pat", {**AGENT, "verifier": "vic"}, (409, "VERIFIER_NOT_OPTED_IN")),
        ("pat", {**AGENT, "verifier": "bob"}, (409, "VERIFIER_NOT_OPTED_IN")),
        ("pat", {**BASE, "reward": "0"}, (400, "INVALID_REWARD")),
        ("pat", {**BASE, "reward": "1.5"}, (400, "INVALID_REWARD")),
        ("pat", {**BASE, "reward": "-3"}, (400, "INVALID_REWARD")),
        ("pat", {**BASE, "reward": str(FUNDS + 1)}, (409, "INSUFFICIENT_FUNDS")),
        ("pat", {**BASE, "deadline_hours": 0.5}, (400, "INVALID_DEADLINE")),
        ("pat", {**BASE, "deadline_hours": 24 * 91}, (400, "INVALID_DEADLINE")),
        ("pat", {"title": "t", "reward": "1"}, (400, "INVALID_DEADLINE")),
        ("pat", {"reward": "1", "deadline_hours": 2}, (422, "INVALID_REQUEST")),
        ("ann", BASE, (403, "ROLE_REQUIRED")),
        (None, BASE, (401, "UNAUTHORIZED")),
    ],
)
def test_posting_refusals(
    h: Harness, who: str | None, body: Any, expected: tuple[int, str]
) -> None:
    """Posting refuses bad drafts with the spec's codes and moves no money."""
    assert h.refused(who, "POST", "/tasks", body) == expected
    assert h.balance("wallet:pat") == FUNDS


def test_default_mode_is_manual(h: Harness) -> None:
    """The API's default mode when none is sent is manual."""
    tid = h.ok("pat", "POST", "/tasks", BASE)["id"]
    assert h.ok("pat", "GET", f"/tasks/{tid}")["mode"] == "manual"


def test_not_found_and_bad_requests(h: Harness) -> None:
    """Unknown things are 404, bodies that fit no schema 422, wrong methods 405, bad keys 401."""
    assert h.refused("pat", "GET", "/tasks/task_nope") == (404, "TASK_NOT_FOUND")
    assert h.refused("pat", "GET", "/receipts/rcpt_nope") == (404, "RECEIPT_NOT_FOUND")
    assert h.refused("pat", "GET", "/agents/nobody") == (404, "ACCOUNT_NOT_FOUND")
    assert h.refused("pat", "GET", "/no/such/route") == (404, "NOT_FOUND")
    assert h.refused("pat", "DELETE", "/tasks") == (405, "METHOD_NOT_ALLOWED")
    tid = h.post("manual")
    assert h.refused("ann", "POST", f"/tasks/{tid}/submissions", {"nope": 1}) == (
        422,
        "INVALID_REQUEST",
    )
    r = h.client.get("/api/v1/tasks", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "UNAUTHORIZED"


def test_verifier_rules_over_http(h: Harness) -> None:
    """The verifier cannot take the task (403 IS_VERIFIER); nobody judges their own work."""
    tid = h.post("agent")
    assert h.refused("vera", "POST", f"/tasks/{tid}/accept") == (403, "IS_VERIFIER")
    assert h.refused("pat", "POST", f"/tasks/{tid}/accept") == (403, "ROLE_REQUIRED")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    verdict = {"passed": True}
    assert h.refused("ann", "POST", f"/tasks/{tid}/verdict", verdict) == (409, "SELF_VERIFICATION")
    assert h.refused("vic", "POST", f"/tasks/{tid}/verdict", verdict) == (403, "NOT_TASK_VERIFIER")
    assert h.refused("pat", "POST", f"/tasks/{tid}/review", verdict) == (409, "NOT_MANUAL_MODE")
    many = h.signed("vera", tid, False, ["r"] * 11)
    assert h.refused("vera", "POST", f"/tasks/{tid}/verdict", many) == (400, "TOO_MANY_REASONS")
    assert h.ok("vera", "GET", "/verifiers")["verifiers"][0]["id"] == "vera"


def test_manual_review_only_while_submitted_with_20_reasons(h: Harness) -> None:
    """Only the poster reviews, only while submitted, with at most 20 reasons."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    assert h.refused("pat", "POST", f"/tasks/{tid}/review", {"passed": True}) == (
        409,
        "ILLEGAL_TRANSITION",
    )
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    too_many = {"passed": False, "reasons": ["r"] * 21}
    assert h.refused("pat", "POST", f"/tasks/{tid}/review", too_many) == (400, "TOO_MANY_REASONS")
    view = h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": False, "reasons": ["r"] * 20})
    assert view["verification_result"]["reasons"] == ["r"] * 20


def test_a_review_naming_an_earlier_submission_judges_nothing(h: Harness) -> None:
    """A review bound to the submission the poster read (``attempt``, ``result_digest``) is
    refused once the agent has submitted again (``409 SUBMISSION_CHANGED``), and nothing
    moves; naming the latest, it judges it; naming nothing, it judges the latest as before."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    read = h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": False, "reasons": ["thin"]})
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD + " Again."})
    before = h.balance("wallet:ann")
    stale = [
        {"passed": True, "attempt": 1},
        {"passed": True, "result_digest": read["result_digest"]},
        {"passed": True, "attempt": 2, "result_digest": read["result_digest"]},
    ]
    for body in stale:
        r = h.call("pat", "POST", f"/tasks/{tid}/review", body)
        assert (r.status_code, r.json()["error"]["code"]) == (409, "SUBMISSION_CHANGED")
        assert "attempt 2" in r.json()["error"]["message"]
    assert h.balance("wallet:ann") == before
    latest = h.ok("pat", "GET", f"/tasks/{tid}")
    assert latest["status"] == "submitted"
    bound = {"passed": True, "attempt": 2, "result_digest": latest["result_digest"]}
    assert h.ok("pat", "POST", f"/tasks/{tid}/review", bound)["status"] == "completed"
    assert h.balance("wallet:ann") > before


def test_private_task_shows_others_only_passed_and_score(h: Harness) -> None:
    """On a private task others see only passed and score; its parties see everything."""
    tid = h.post("auto", private=True, criteria={"min_length": 10, "expected_answer": "42"})
    assert "expected_answer" not in h.ok("ann", "GET", f"/tasks/{tid}")["criteria"]
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    mine = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert mine["verification_result"]["reasons"] and mine["submissions"][0]["result"] == GOOD
    theirs = h.ok("bob", "GET", f"/tasks/{tid}")
    assert theirs["verification_result"] == {
        "attempt": 1,
        "kind": "verdict",
        "passed": True,
        "score": 100,
    }
    assert theirs["brief"] is None and "submissions" not in theirs
    assert h.refused("bob", "GET", f"/tasks/{tid}/receipts") == (403, "NOT_A_PARTY")
    poster = h.ok("pat", "GET", f"/tasks/{tid}")
    assert poster["criteria"]["expected_answer"] == "42"
    public = h.post("auto")
    h.ok("ann", "POST", f"/tasks/{public}/accept")
    h.ok("ann", "POST", f"/tasks/{public}/submissions", {"result": GOOD})
    h.ok("ann", "POST", f"/tasks/{public}/finalize")
    assert h.ok("bob", "GET", f"/tasks/{public}")["verification_result"]["reasons"]


def test_dry_run_uses_no_attempt(h: Harness) -> None:
    """A dry run checks a draft against the criteria without using an attempt or reputation."""
    tid = h.post("auto")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    for _ in range(5):
        out = h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": "FAIL"})
        assert out == {**out, "dry_run": True, "passed": False}
    assert h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})["passed"] is True
    view = h.ok("ann", "GET", f"/tasks/{tid}")
    assert view["attempts"] == 0 and view["status"] == "assigned"
    assert h.ok("ann", "GET", "/agents/ann")["reputation"] == 100
    assert h.refused("bob", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD}) == (
        403,
        "NOT_TASK_AGENT",
    )
    manual = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{manual}/accept")
    assert h.refused("ann", "POST", f"/tasks/{manual}/dry-run", {"result": GOOD}) == (
        409,
        "NO_CRITERIA",
    )


def test_list_and_filter_tasks(h: Harness) -> None:
    """Listing filters by status, mode and the caller's own tasks."""
    a = h.post("auto")
    m = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{a}/accept")
    ids = lambda **q: [  # noqa: E731
        t["id"]
        for t in h.client.get("/api/v1/tasks", params=q, headers=_auth(h, "ann")).json()["tasks"]
    ]
    assert set(ids()) == {a, m}
    assert ids(mode="manual") == [m]
    assert ids(status="assigned") == [a]
    assert ids(mine="true") == [a]


def _auth(h: Harness, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {h.keys[who]}"}


def test_accounts_admin_and_opt_in(h: Harness) -> None:
    """Admins create accounts and record deposits; a verifier opts in and out."""
    made = h.ok("root", "POST", "/accounts", {"id": "zed", "roles": ["agent"]})
    assert made["account"]["reputation"] == 100 and made["api_key"].startswith("adj_")
    r = h.client.get("/api/v1/accounts/me", headers={"Authorization": f"Bearer {made['api_key']}"})
    assert r.json()["id"] == "zed" and r.json()["balance"] == "0"
    assert h.refused("root", "POST", "/accounts", {"id": "zed", "roles": ["agent"]}) == (
        409,
        "ACCOUNT_EXISTS",
    )
    assert h.refused("root", "POST", "/accounts", {"id": "Z Z", "roles": ["agent"]}) == (
        422,
        "INVALID_REQUEST",
    )
    assert h.refused("pat", "POST", "/accounts", {"id": "y", "roles": ["agent"]}) == (
        403,
        "ROLE_REQUIRED",
    )
    assert h.ok("root", "POST", "/accounts/zed/deposits", {"amount": "5"})["balance"] == "5"
    assert h.ok("vic", "PATCH", "/accounts/me", {"verifier_opt_in": True})["verifier_opt_in"]
    assert {v["id"] for v in h.ok("pat", "GET", "/verifiers")["verifiers"]} == {"vera", "vic"}


def test_the_verifiers_list_comes_a_page_at_a_time(h: Harness) -> None:
    """By id, ``limit`` at a time, ``next_cursor`` continuing and null on the last page; a
    cursor no listing gave and a limit out of bounds are refused."""
    h.ok("vic", "PATCH", "/accounts/me", {"verifier_opt_in": True})
    first = h.ok("pat", "GET", "/verifiers?limit=1")
    assert [v["id"] for v in first["verifiers"]] == ["vera"] and first["next_cursor"]
    second = h.ok("pat", "GET", f"/verifiers?limit=1&cursor={first['next_cursor']}")
    assert [v["id"] for v in second["verifiers"]] == ["vic"] and second["next_cursor"] is None
    assert h.ok("pat", "GET", "/verifiers")["next_cursor"] is None
    assert h.refused("pat", "GET", "/verifiers?cursor=nope") == (400, "CURSOR_INVALID")
    for limit in (0, 201):
        assert h.refused("pat", "GET", f"/verifiers?limit={limit}")[1] == "INVALID_REQUEST"


# --- idempotency and races ----------------------------------------------------------------------


def test_idempotent_post_funds_once(h: Harness) -> None:
    """A retried post with the same Idempotency-Key returns the same task and pays once."""
    body = {**BASE, "mode": "manual"}
    first = h.call("pat", "POST", "/tasks", body, Idempotency_Key="post-1")
    again = h.call("pat", "POST", "/tasks", body, Idempotency_Key="post-1")
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json() and again.headers["Idempotent-Replayed"] == "true"
    assert h.balance("wallet:pat") == FUNDS - 2_000_000
    other = h.call("pat", "POST", "/tasks", {**body, "reward": "3"}, Idempotency_Key="post-1")
    assert other.status_code == 409 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert h.call("ann", "GET", "/tasks").json()["tasks"][0]["id"] == first.json()["id"]
    assert len(h.call("ann", "GET", "/tasks").json()["tasks"]) == 1


def test_idempotent_review_pays_once(h: Harness) -> None:
    """A retried approval replays the answer; the agent is paid once."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    for _ in range(3):
        r = h.call("pat", "POST", f"/tasks/{tid}/review", {"passed": True}, Idempotency_Key="r1")
        assert r.status_code == 200 and r.json()["ending"] == "paid_on_pass"
    assert h.balance("wallet:ann") == FUNDS + 1_800_000
    # Without a key a retry is a new request, refused because the task is already paid.
    assert h.refused("pat", "POST", f"/tasks/{tid}/review", {"passed": True}) == (
        409,
        "ILLEGAL_TRANSITION",
    )


def test_idempotency_keys_are_per_account(h: Harness) -> None:
    """Two accounts may use the same key without seeing each other's answers."""
    tid = h.post("manual")
    r1 = h.call("ann", "POST", f"/tasks/{tid}/accept", Idempotency_Key="k")
    r2 = h.call("bob", "POST", f"/tasks/{tid}/accept", Idempotency_Key="k")
    assert r1.status_code == 200 and r2.status_code == 409


def _race(n: int, fn: Any) -> list[Any]:
    barrier = threading.Barrier(n)
    out: list[Any] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait()
        try:
            value: Any = fn()
        except Error as exc:
            value = exc.code
        with lock:
            out.append(value)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_concurrent_finalizes_yield_one_verdict(store: Store) -> None:
    """Eight finalizes of one submission at once: one verdict, one payout, seven refusals."""
    h = make_harness(store)
    tid = h.post("auto")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    ann = h.account("ann")
    results = _race(8, lambda: h.app.tasks.finalize(ann, tid).value["status"])
    assert sorted(map(str, results)).count("ILLEGAL_TRANSITION") == 7
    view = h.ok("pat", "GET", f"/tasks/{tid}")
    assert len(view["verdicts"]) == 1 and len(view["receipts"]) == 1
    assert h.balance("wallet:ann") == FUNDS + 1_800_000


def test_concurrent_retries_with_one_key_pay_once(store: Store) -> None:
    """Eight concurrent retries of one approval with one key: all succeed, one payout."""
    h = make_harness(store)
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    pat = h.account("pat")
    results = _race(
        8, lambda: h.app.tasks.review(pat, tid, passed=True, reasons=(), key="same").value["status"]
    )
    assert results == ["completed"] * 8
    assert h.balance("wallet:ann") == FUNDS + 1_800_000
    assert len(h.ok("pat", "GET", f"/tasks/{tid}")["verdicts"]) == 1


def test_two_services_on_one_database_pay_once(store: Store) -> None:
    """Two services with their own connection pools (as two processes) race on every task."""
    h = make_harness(store)
    other = App(Store(store.url), clock=h.clock, checker=h.app.checker)
    tids = [h.post("auto") for _ in range(4)]
    for tid in tids:
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    ann = h.account("ann")
    for tid in tids:
        apps = iter([h.app, other] * 4)
        results = _race(8, lambda m=apps, t=tid: next(m).tasks.finalize(ann, t).value["status"])
        assert sorted(map(str, results)) == ["ILLEGAL_TRANSITION"] * 7 + ["completed"]
    other.store.dispose()
    assert h.balance("wallet:ann") == FUNDS + 4 * 1_800_000
    assert h.ok("root", "GET", "/receipts/head")["count"] == 4


def test_deposits_cannot_overflow_the_ledger(h: Harness) -> None:
    """Deposits stop at the most money the 64-bit ledger holds; nothing overflows."""
    big = str(2**63 - 1)
    assert h.refused("root", "POST", "/accounts/pat/deposits", {"amount": big}) == (
        400,
        "INVALID_AMOUNT",
    )
    assert h.balance("wallet:pat") == FUNDS
