"""The trust perimeter: no road from retried, malformed, oversized or hostile input to money
moving, to a secret leaking, or to the service failing for everyone else."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import pytest
from fastapi import FastAPI
from fastapi.dependencies.utils import get_flat_params
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel, BeforeValidator, SkipValidation

from adjudge.service import MAX_BODY_BYTES, deps, errors
from adjudge.store import Store, records
from support.harness import FUNDS, Harness, make_harness
from support.noting import note_writes

GOOD = "A long enough result."
BASE = {"title": "t", "reward": "2000000", "deadline_hours": 24}


def _raw(h: Harness, who: str | None, path: str, body: bytes, **headers: str) -> Any:
    h2 = {"Content-Type": "application/json", **headers}
    if who is not None:
        h2["Authorization"] = f"Bearer {h.keys[who]}"
    return h.client.post("/api/v1" + path, content=body, headers=h2)


# --- idempotency everywhere -----------------------------------------------------------------


def test_ten_concurrent_retries_of_one_deposit_credit_it_once(store: Store) -> None:
    """Ten retries of one 100 deposit, at once, with one Idempotency-Key: one credit of 100; the
    same key for another amount is IDEMPOTENCY_KEY_REUSED and credits nothing."""
    h = make_harness(store)
    codes: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(10)

    def retry() -> None:
        client = TestClient(h.client.app)
        barrier.wait()
        r = client.post(
            "/api/v1/accounts/pat/deposits",
            json={"amount": "100"},
            headers={"Authorization": f"Bearer {h.keys['root']}", "Idempotency-Key": "dep-1"},
        )
        with lock:
            codes.append(r.status_code)

    threads = [threading.Thread(target=retry) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes == [200] * 10
    assert h.balance("wallet:pat") == FUNDS + 100
    r = h.call("root", "POST", "/accounts/pat/deposits", {"amount": "500"}, Idempotency_Key="dep-1")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "IDEMPOTENCY_KEY_REUSED")
    assert h.balance("wallet:pat") == FUNDS + 100


def test_a_retried_account_creation_returns_the_same_key_to_its_caller_only(h: Harness) -> None:
    """The one-time API key survives a retry: the replay carries it; the database holds neither
    the key nor the Idempotency-Key in the clear; another admin's same key is not a replay."""
    h.keys["ops"] = h.app.accounts.create(None, "ops", ["admin"]).value["api_key"]
    body = {"id": "zoe", "roles": ["agent"]}
    first = h.call("root", "POST", "/accounts", body, Idempotency_Key="mk-zoe")
    again = h.call("root", "POST", "/accounts", body, Idempotency_Key="mk-zoe")
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["api_key"] == first.json()["api_key"]
    key = h.keys["zoe"] = first.json()["api_key"]
    assert h.ok("zoe", "GET", "/accounts/me")["id"] == "zoe"
    other = h.call("ops", "POST", "/accounts", body, Idempotency_Key="mk-zoe")
    assert (other.status_code, other.json()["error"]["code"]) == (409, "ACCOUNT_EXISTS")
    with h.app.store.read() as tx:
        rows = tx.conn.exec_driver_sql("SELECT key, body FROM idempotency").fetchall()
    dump = json.dumps([list(map(str, r)) for r in rows])
    assert key not in dump and "mk-zoe" not in dump
    # A lost key is recovered by issuing a new one; the old one stops working.
    new = h.ok("root", "POST", "/accounts/zoe/api-key")["api_key"]
    assert new != key
    h.app.accounts._keys.clear()
    h.keys["zoe"] = key
    assert h.refused("zoe", "GET", "/accounts/me") == (401, "UNAUTHORIZED")
    h.keys["zoe"] = new
    assert h.ok("zoe", "GET", "/accounts/me")["id"] == "zoe"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/accounts/me", None),
        ("/tasks/{tid}/accept", None),
        ("/tasks/{tid}/cancel", None),
    ],
)
def test_every_state_change_replays_under_its_key(h: Harness, path: str, body: Any) -> None:
    """A state change retried with its key answers the stored answer and changes nothing."""
    tid = h.post("manual")
    if path == "/accounts/me":
        first = h.client.patch(
            "/api/v1/accounts/me",
            json={"verifier_opt_in": False},
            headers={"Authorization": f"Bearer {h.keys['vera']}", "Idempotency-Key": "o"},
        )
        again = h.client.patch(
            "/api/v1/accounts/me",
            json={"verifier_opt_in": False},
            headers={"Authorization": f"Bearer {h.keys['vera']}", "Idempotency-Key": "o"},
        )
    else:
        who = "ann" if "accept" in path else "pat"
        first = h.call(who, "POST", path.format(tid=tid), body, Idempotency_Key="s")
        again = h.call(who, "POST", path.format(tid=tid), body, Idempotency_Key="s")
    assert first.status_code == again.status_code < 300
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"


# --- strict I-JSON at the edge --------------------------------------------------------------

BAD_BODIES = {
    "lone-surrogate-value": b'{"title":"t","reward":"1","deadline_hours":24,"mode":"auto",'
    b'"criteria":{"contains_keywords":["\\ud800"],"min_length":5}}',
    "lone-surrogate-key": b'{"title":"t","reward":"1","deadline_hours":24,"mode":"auto",'
    b'"criteria":{"\\udc00":1,"min_length":5}}',
    "nan": b'{"title":"t","reward":"1","deadline_hours":24,"mode":"auto",'
    b'"criteria":{"min_length":5,"pass_threshold":NaN}}',
    "infinity": b'{"title":"t","reward":"1","deadline_hours":Infinity}',
    "overflowing-float": b'{"title":"t","reward":"1","deadline_hours":1e999}',
    "duplicate-key": b'{"title":"t","reward":"1","reward":"2","deadline_hours":24}',
    "nul": b'{"title":"t\\u0000","reward":"1","deadline_hours":24}',
    "huge-integer": b'{"title":"t","reward":9007199254740993,"deadline_hours":24}',
    "4300-digits": b'{"title":"t","reward":' + b"9" * 4300 + b',"deadline_hours":24}',
    "not-utf8": b'{"title":"\xff","reward":"1","deadline_hours":24}',
    "deep": b'{"title":"t","reward":"1","deadline_hours":24,"criteria":{"x":'
    + b"[" * 500
    + b"]" * 500
    + b"}}",
    "truncated": b'{"title":"t","reward":',
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_wire_input_is_strict_ijson(store: Store, case: str) -> None:
    """A body that is not I-JSON is 400 INVALID_JSON before anything is written, and the task
    list keeps working for everyone."""
    h = make_harness(store)
    before = h.ledger()
    r = _raw(h, "pat", "/tasks", BAD_BODIES[case])
    assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_JSON"), r.text
    assert "I-JSON" in r.json()["error"]["message"]
    assert h.ledger() == before
    for who in ("pat", "ann", "root"):
        assert h.ok(who, "GET", "/tasks")["tasks"] == []


def test_a_surrogate_pair_and_unicode_are_fine(h: Harness) -> None:
    """Only lone surrogates are refused: an escaped pair is one character, like any other."""
    body = {**BASE, "title": "caf\u00e9 \U0001f600", "mode": "manual"}
    raw = json.dumps(body).encode()  # ensure_ascii: the emoji as an escaped surrogate pair
    assert b"\\ud83d\\ude00" in raw
    r = _raw(h, "pat", "/tasks", raw)
    assert r.status_code == 201 and r.json()["title"] == "caf\u00e9 \U0001f600"


def test_a_bad_stored_row_never_takes_a_listing_down(sqlite_store: Store) -> None:
    """Rows written before the edge was strict (criteria holding NaN and a lone surrogate, as
    SQLite's JSON text kept them) or damaged by hand (an unknown status): a listing skips what
    it cannot read and shows every other task, for every account; reading the bad task itself
    is a clear refusal, not a crash."""
    h = make_harness(sqlite_store)
    good = h.post("manual")
    legacy = h.post("manual")
    damaged = h.post("manual")
    raw = sqlite_store.engine.raw_connection()
    try:
        db = raw.driver_connection
        db.execute(  # type: ignore[union-attr]
            "UPDATE tasks SET criteria = ? WHERE id = ?",
            ('{"min_length": NaN, "contains_keywords": ["\\ud800"]}', legacy),
        )
        db.execute("UPDATE tasks SET status = 'no-such-status' WHERE id = ?", (damaged,))  # type: ignore[union-attr]
        raw.commit()
    finally:
        raw.close()
    for who in ("pat", "ann", "root"):
        listed = [t["id"] for t in h.ok(who, "GET", "/tasks")["tasks"]]
        assert sorted(listed) == sorted([good, legacy])
    assert h.refused("pat", "GET", f"/tasks/{legacy}") == (500, "RECORD_UNREADABLE")
    assert h.ok("pat", "GET", f"/tasks/{good}")["id"] == good


# --- sizes ----------------------------------------------------------------------------------


def test_an_oversized_body_is_refused_before_parsing_and_before_auth(h: Harness) -> None:
    """Over the cap: 413 whoever sends it, without a key too; the service keeps serving."""
    huge = b'{"result":"' + b"a" * (MAX_BODY_BYTES + 1) + b'"}'
    for who in (None, "ann"):
        r = _raw(h, who, "/tasks/task_x/submissions", huge)
        assert (r.status_code, r.json()["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")
    assert h.client.get("/api/v1/health").status_code == 200


def test_a_compressed_body_is_refused_saying_so(h: Harness) -> None:
    """A body sent with a Content-Encoding (gzip, or any but identity) is ``415
    CONTENT_ENCODING_UNSUPPORTED`` saying to send it uncompressed, never inflated and never
    read as its compressed bytes (before: ``400 INVALID_JSON``, "not UTF-8", for gzip, and a
    plain body labelled gzip taken as if unlabelled), with its request id as every refusal;
    identity is read as ever, and a request with no body is served whatever it says."""
    import gzip  # noqa: PLC0415

    body = json.dumps({"result": "A summary of the report."}).encode()
    for encoding, content in (("gzip", gzip.compress(body)), ("br", body), ("GZIP", body)):
        r = _raw(h, "ann", "/tasks/task_x/submissions", content, **{"Content-Encoding": encoding})
        assert r.status_code == 415, r.text
        error = r.json()["error"]
        assert error["code"] == "CONTENT_ENCODING_UNSUPPORTED"
        assert "uncompressed" in error["message"]
        assert error["request_id"] == r.headers["x-request-id"]  # as every refusal
    r = _raw(h, "ann", "/tasks/task_x/submissions", body, **{"Content-Encoding": "identity"})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "TASK_NOT_FOUND")
    r = h.client.get("/api/v1/health", headers={"Content-Encoding": "gzip"})  # no body: served
    assert r.status_code == 200, r.text


def test_criteria_are_capped_and_never_listed(h: Harness) -> None:
    """Criteria past the total size cap are refused; listings carry no criteria or brief."""
    huge = {"min_length": 5, "rubric": [{"criterion": "c" * 300_000}]}
    body = {**BASE, "mode": "agent", "verifier": "vera", "brief": "b", "criteria": huge}
    assert h.refused("pat", "POST", "/tasks", body) == (400, "CRITERIA_OVER_LIMIT")
    tid = h.post("auto", criteria={"min_length": 10, "expected_answer": "Paris"})
    listed = h.ok("ann", "GET", "/tasks")["tasks"]
    assert [t["id"] for t in listed] == [tid]
    assert "criteria" not in listed[0] and "brief" not in listed[0]


def test_every_list_is_paginated_by_cursor(h: Harness) -> None:
    """A listing walks every task once, newest first, a page at a time; a bad cursor is a
    clear refusal, and limits are bounded."""
    ids = set()
    for i in range(7):
        ids.add(h.post("manual", title=f"task {i}"))
        h.advance(seconds=1)
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = h.client.get(
            "/api/v1/tasks", params=params, headers={"Authorization": f"Bearer {h.keys['pat']}"}
        ).json()
        seen += [t["id"] for t in page["tasks"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == 7 and set(seen) == ids
    titles = [h.ok("pat", "GET", f"/tasks/{t}")["title"] for t in seen]
    assert titles == [f"task {i}" for i in reversed(range(7))]
    assert h.refused("pat", "GET", "/tasks?cursor=nonsense") == (400, "CURSOR_INVALID")
    assert h.refused("pat", "GET", "/tasks?limit=100000") == (422, "INVALID_REQUEST")
    assert h.refused("pat", "GET", "/tasks?status=bogus") == (422, "INVALID_REQUEST")


# --- the dry run is no oracle -----------------------------------------------------------------


def test_the_dry_run_never_runs_the_hidden_answer(h: Harness) -> None:
    """The right and the wrong answer dry-run alike; the response says what did not run."""
    h.app.tasks.checker = h.app.checker = _real_checker()
    tid = h.post("auto", criteria={"expected_answer": "Paris", "min_length": 1})
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    right = h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": "The answer is Paris."})
    wrong = h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": "The answer is Lyonx."})
    for out in (right, wrong):
        assert out["rules_not_run"] == ["expected_answer"] and "expected_answer" in out["note"]
        assert all(item["name"] != "expected_answer" for item in out["detail"]["breakdown"])
    assert (right["score"], right["passed"]) == (wrong["score"], wrong["passed"])
    # A short hidden answer still waives the content floor, as in the real check.
    short = h.post("auto", criteria={"expected_answer": "42"})
    h.ok("ann", "POST", f"/tasks/{short}/accept")
    out = h.ok("ann", "POST", f"/tasks/{short}/dry-run", {"result": "42"})
    assert not any("too short" in r for r in out["reasons"]), out


def test_the_dry_run_is_rationed_and_only_for_the_holder(h: Harness) -> None:
    """20 an hour per task; then 429 with Retry-After; the poster, other agents and a
    cancelled task's non-parties get nothing."""
    tid = h.post("auto")
    assert h.refused("bob", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD}) == (
        403,
        "NOT_TASK_AGENT",
    )
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    for _ in range(20):
        h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
    r = h.call("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
    assert (r.status_code, r.json()["error"]["code"]) == (429, "DRY_RUN_QUOTA_EXCEEDED")
    assert 0 < int(r.headers["Retry-After"]) <= 3601
    h.advance(hours=1)
    h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
    assert h.refused("pat", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD}) == (
        403,
        "NOT_TASK_AGENT",
    )
    private = h.post("auto", private=True)
    h.ok("pat", "POST", f"/tasks/{private}/cancel")
    assert h.ok("bob", "GET", f"/tasks/{private}")["criteria"] is None
    assert h.refused("bob", "POST", f"/tasks/{private}/dry-run", {"result": GOOD}) == (
        403,
        "NOT_TASK_AGENT",
    )


def _task_reads(h: Harness, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """From now on, for each read of a task, whether it ran on the committing thread."""
    commits = h.app.unit.commits
    assert commits is not None
    where: list[bool] = []
    real = records.task

    def noted(tx: Any, task_id: str) -> Any:
        where.append(commits.here())
        return real(tx, task_id)

    monkeypatch.setattr(records, "task", noted)
    return where


def test_a_dry_run_reads_its_task_before_its_write(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its write counts the quota alone: the task (criteria up to 256 KiB, the brief) is read
    and who may dry-run it decided before, never on the thread that commits every account's
    writes — for a dry run refused past the quota, or to another agent, as for one that runs."""
    criteria = {"min_length": 10, **{f"note_{i}": "x" * 2000 for i in range(100)}}
    tid = h.post("auto", criteria=criteria, lenient_criteria=True)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    where = _task_reads(h, monkeypatch)
    for _ in range(20):
        h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
    r = h.call("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
    assert (r.status_code, r.json()["error"]["code"]) == (429, "DRY_RUN_QUOTA_EXCEEDED")
    assert h.refused("bob", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD}) == (
        403,
        "NOT_TASK_AGENT",
    )
    assert len(where) >= 22 and not any(where)


def test_a_refused_step_is_refused_before_its_write(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step the market refuses (a stranger's dispute or collect, an early reclaim, a second
    accept) is refused on a read, never in a write: anyone may send one to any task, and in the
    write each read and decoded the whole task (its criteria up to 256 KiB) on the thread that
    commits every account's writes. A step that passes is written, and a key's stored answer is
    replayed, not refused, once the task has moved on."""
    criteria = {"min_length": 10, **{f"note_{i}": "x" * 2000 for i in range(100)}}
    tid = h.post("auto", criteria=criteria, lenient_criteria=True)
    accepted = h.call("ann", "POST", f"/tasks/{tid}/accept", Idempotency_Key="take-1")
    assert accepted.status_code == 200
    events: list[str] = []
    note_writes(h.app, events)
    where = _task_reads(h, monkeypatch)
    refused = [
        h.refused("bob", "POST", f"/tasks/{tid}/disputes", {"reason": "mine"}),
        h.refused("bob", "POST", f"/tasks/{tid}/collect"),
        h.refused("pat", "POST", f"/tasks/{tid}/reclaim"),
        h.refused("ann", "POST", f"/tasks/{tid}/accept"),
    ]
    assert refused == [
        (403, "NOT_A_PARTY"),
        (403, "NOT_TASK_AGENT"),
        (409, "DEADLINE_NOT_REACHED"),
        (409, "ILLEGAL_TRANSITION"),
    ]
    assert events == [] and where and not any(where)
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    assert events == ["write"]
    again = h.call("ann", "POST", f"/tasks/{tid}/accept", Idempotency_Key="take-1")
    assert (again.status_code, again.json()) == (200, accepted.json())


def test_an_accounts_posts_are_bounded_an_hour(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """A post cancelled returns its escrow, yet keeps its brief, a receipt and ledger lines: an
    account may post a bounded number of tasks an hour (here two, cancelled ones counted); the
    next is ``429 POSTS_QUOTA_EXCEEDED`` with the seconds to wait, nothing posted; a replay or
    a refused post is not counted; the next hour, or an admin, may post again."""
    from adjudge.app import tasks as app_tasks  # noqa: PLC0415

    monkeypatch.setattr(app_tasks, "POST_QUOTA", 2)
    body = {**BASE, "brief": "Write a summary.", "mode": "manual"}
    broke = {**body, "reward": str(FUNDS + 1)}
    assert h.refused("pat", "POST", "/tasks", broke) == (409, "INSUFFICIENT_FUNDS")
    first = h.call("pat", "POST", "/tasks", body, Idempotency_Key="p1")
    assert first.status_code == 201
    h.ok("pat", "POST", f"/tasks/{first.json()['id']}/cancel")
    again = h.call("pat", "POST", "/tasks", body, Idempotency_Key="p1")
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    h.ok("pat", "POST", "/tasks", body)
    mine = h.ok("pat", "GET", "/tasks?mine=true")["tasks"]
    refused = h.call("pat", "POST", "/tasks", body)
    assert (refused.status_code, refused.json()["error"]["code"]) == (429, "POSTS_QUOTA_EXCEEDED")
    assert 0 < int(refused.headers["Retry-After"]) <= 3601
    assert h.ok("pat", "GET", "/tasks?mine=true")["tasks"] == mine
    made = h.ok("root", "POST", "/accounts", {"id": "ada", "roles": ["admin", "poster"]})
    h.keys["ada"] = made["api_key"]
    h.ok("root", "POST", "/accounts/ada/deposits", {"amount": "10000000"})
    for _ in range(3):
        h.ok("ada", "POST", "/tasks", body)
    h.advance(minutes=61)
    h.ok("pat", "POST", "/tasks", body)


def _real_checker() -> Any:
    from adjudge.app.wiring import AutoCheck  # noqa: PLC0415

    return AutoCheck()


# --- posting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("criteria", "field", "hint"),
    [
        ({"contains_keyword": ["a"], "min_length": 5}, "contains_keyword", "contains_keywords"),
        ({"forbiden_phrases": ["a"], "min_length": 5}, "forbiden_phrases", "forbidden_phrases"),
        ({"min_lenght": 5}, "min_lenght", "min_length"),
        ({"rubric": [{"criterion": "c", "keyword": ["x"]}]}, "keyword", "keywords"),
        ({"expected_schema": {"type": "object", "requried": ["a"]}}, "requried", "required"),
    ],
)
def test_typod_criteria_are_refused_with_the_closest_field(
    h: Harness, criteria: dict[str, Any], field: str, hint: str
) -> None:
    """A misspelled field would check nothing: posting names it and the field meant, unless
    the poster opts in to lenient criteria."""
    body = {**BASE, "mode": "auto", "criteria": criteria}
    r = h.call("pat", "POST", "/tasks", body)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "CRITERIA_UNKNOWN_FIELD")
    message = r.json()["error"]["message"]
    assert f"{field}`" in message and f"Did you mean `{hint}`?" in message
    assert h.balance("wallet:pat") == FUNDS
    lenient = {**body, "lenient_criteria": True, "criteria": {**criteria, "min_length": 5}}
    assert h.ok("pat", "POST", "/tasks", lenient)["criteria"] == lenient["criteria"]


def test_an_ambiguous_repeat_is_refused_at_posting(h: Harness) -> None:
    """(a|aa)+$ passes the reference's scan but backtracks exponentially: posting refuses it."""
    h.app.tasks.checker = _real_checker()
    body = {**BASE, "mode": "auto", "criteria": {"regex_pattern": "(a|aa)+$"}}
    r = h.call("pat", "POST", "/tasks", body)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "REGEX_PATTERN_UNUSABLE")
    assert "exponential" in r.json()["error"]["message"]
    fine = {**BASE, "mode": "auto", "criteria": {"regex_pattern": "^(foo|bar)+$"}}
    assert h.call("pat", "POST", "/tasks", fine).status_code == 201


@pytest.mark.parametrize(
    "pattern", [".*.*.*.*.*.*=.*", r"\d*\d*\d*\d*\d*\d*\d*x", "a*a*a*a*a*a*a*a*a*b"]
)
def test_a_polynomial_run_is_refused_at_posting(h: Harness, pattern: str) -> None:
    """Repeats that share characters in a row pass the reference's scan and run to the 100 ms
    limit on a crafted text: posting refuses them, naming the run; ordinary patterns pass."""
    h.app.tasks.checker = _real_checker()
    body = {**BASE, "mode": "auto", "criteria": {"regex_pattern": pattern}}
    r = h.call("pat", "POST", "/tasks", body)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "REGEX_PATTERN_UNUSABLE")
    assert "polynomial" in r.json()["error"]["message"]
    for fine in (r"^\d+-\d+$", ".*foo.*", r"\w+@\w+\.\w+"):
        ok = {**BASE, "mode": "auto", "criteria": {"regex_pattern": fine}}
        assert h.call("pat", "POST", "/tasks", ok).status_code == 201


def test_one_hour_is_a_valid_deadline(h: Harness) -> None:
    """deadline_hours: 1 is the documented minimum, measured from the moment of posting."""
    assert h.ok("pat", "POST", "/tasks", {**BASE, "deadline_hours": 1})["status"] == "funded"


@pytest.mark.parametrize("amount", ["²", "٣", "１", "9" * 4300, "1e3", " 5", "0x10", "", "-0"])
def test_odd_amounts_are_refused_not_crashed(h: Harness, amount: str) -> None:
    """Superscripts, other scripts' digits, 4,300 digits, exponents: INVALID_AMOUNT, no 500."""
    assert h.refused("root", "POST", "/accounts/pat/deposits", {"amount": amount}) == (
        400,
        "INVALID_AMOUNT",
    )
    assert h.refused("pat", "POST", "/tasks", {**BASE, "reward": amount}) == (400, "INVALID_REWARD")


@pytest.mark.parametrize("amount", [True, False, 2000000.0, 1e6, None, [5], {"minor": 5}])
def test_an_amount_is_digits_or_an_integer_never_a_boolean_or_a_number_with_a_point(
    h: Harness, amount: Any
) -> None:
    """A JSON boolean or a number written with a point is no amount: refused with the amount's
    code, and nothing moves (``true`` had posted a task of 1 minor unit, and deposited one)."""
    assert h.refused("root", "POST", "/accounts/pat/deposits", {"amount": amount}) == (
        400,
        "INVALID_AMOUNT",
    )
    assert h.refused("pat", "POST", "/tasks", {**BASE, "reward": amount}) == (400, "INVALID_REWARD")
    assert h.balance("wallet:pat") == FUNDS
    assert h.ok("pat", "GET", "/tasks?mine=true")["tasks"] == []


def _lax_scalars(annotation: Any, where: str) -> list[str]:
    """The booleans and numbers of a body's type that the schema would coerce: a lax ``bool``
    reads ``1`` and ``"yes"`` as true, a lax ``int`` reads ``true`` as 1 and ``2.0`` as 2."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [
            lax
            for name, field in annotation.model_fields.items()
            for lax in _lax_scalars(
                Annotated[(field.annotation, *field.metadata)]
                if field.metadata
                else field.annotation,
                f"{annotation.__name__}.{name}",
            )
        ]
    if get_origin(annotation) is Annotated:
        base, *marks = get_args(annotation)
        if any(getattr(m, "strict", False) or isinstance(m, SkipValidation) for m in marks):
            return []
        return _lax_scalars(base, where)
    if annotation in (bool, int, float):
        return [where]
    return [lax for arg in get_args(annotation) for lax in _lax_scalars(arg, where)]


def test_every_body_reads_its_booleans_and_numbers_strictly(h: Harness) -> None:
    """No route's body takes a boolean or a number the schema would coerce from another JSON
    type: a verdict, a review or a ruling of ``1`` or ``"yes"`` is no decision."""
    app = h.client.app
    assert isinstance(app, FastAPI)
    bodies = {
        param.field_info.annotation
        for route in app.routes
        if isinstance(route, APIRoute)
        for param in route.dependant.body_params
    }
    assert len(bodies) > 20, bodies
    assert [lax for body in bodies for lax in _lax_scalars(body, body.__name__)] == []


#: What a number or a switch in a query or a path is read by: digits, and true or false.
_WIRE_READERS = (deps.whole_number, deps.true_or_false)


def _lax_in_the_address(field: Any, where: str) -> list[str]:
    """``where`` if ``field`` (a query or path parameter) is a boolean or a number read by the
    schema's lax reading of text: ``yes``, ``on`` and ``1`` are true to it, ``5.0`` and ``5_0``
    are integers."""
    kinds = {field.field_info.annotation, *get_args(field.field_info.annotation)}
    if not kinds & {bool, int, float}:
        return []
    read = [m for m in field.field_info.metadata if isinstance(m, BeforeValidator)]
    return [] if any(m.func in _WIRE_READERS for m in read) else [where]


def test_every_query_and_path_reads_its_booleans_and_numbers_strictly(h: Harness) -> None:
    """No route's query, path or header takes a boolean or a number in any other spelling than
    ``true``/``false`` and digits: ``?totals=yes`` or ``?limit=5.0`` is refused, not guessed."""
    app = h.client.app
    assert isinstance(app, FastAPI)
    found = [
        (route, param)
        for route in app.routes
        if isinstance(route, APIRoute)
        for param in get_flat_params(route.dependant)  # its dependencies' too, and headers
    ]
    assert len({r.path for r, _ in found if "GET" in r.methods}) > 20, found
    lax = [
        lax
        for route, param in found
        for lax in _lax_in_the_address(
            param, f"{'/'.join(sorted(route.methods))} {route.path} {param.name}"
        )
    ]
    assert lax == [], "read laxly:\n" + "\n".join(lax)


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/tasks?limit=5.0", "query.limit: "),
        ("/tasks?limit=5_0", "query.limit: "),
        ("/tasks?limit=%205", "query.limit: "),
        ("/tasks?mine=yes", "query.mine: "),
        ("/tasks?mine=1", "query.mine: "),
        ("/tasks?mine=True", "query.mine: "),
        ("/ledger/lines?totals=on", "query.totals: "),
        ("/ledger?recount=yes", "query.recount: "),
        ("/gateway/calls?limit=1e1", "query.limit: "),
    ],
)
def test_a_query_number_or_switch_in_another_spelling_is_refused(
    h: Harness, path: str, said: str
) -> None:
    """A query's integer is digits and its switch ``true`` or ``false``: any other spelling is
    422 INVALID_REQUEST naming the parameter and what to write (``mine=yes`` was read as true,
    ``limit=5.0`` and ``limit=5_0`` as 5 and 50)."""
    r = h.call("root", "GET", path)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "INVALID_REQUEST" and error["message"].startswith(said), error
    assert "write " in error["message"], error
    assert h.ok("pat", "GET", "/tasks?mine=true&limit=5")["tasks"] == []


@pytest.mark.parametrize("passed", [1, "true", "yes"])
def test_a_review_sent_as_another_type_than_a_boolean_pays_nothing(h: Harness, passed: Any) -> None:
    """A poster's review whose ``passed`` is not a JSON boolean is refused and the escrow stays
    (the schema read ``1`` and ``"yes"`` as an approval, which pays the agent)."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    review = {"passed": passed, "reasons": ["ok"]}
    assert h.refused("pat", "POST", f"/tasks/{tid}/review", review) == (422, "INVALID_REQUEST")
    assert h.ok("pat", "GET", f"/tasks/{tid}")["status"] == "submitted"
    assert h.balance("wallet:ann") == FUNDS
    late = {**BASE, "deadline_hours": True}
    assert h.refused("pat", "POST", "/tasks", late) == (422, "INVALID_REQUEST")


_AS_UNIX_TIME: dict[str, Callable[[int], Any]] = {
    "seconds": lambda unix: unix,
    "seconds with a point": float,
    "milliseconds": lambda unix: unix * 1000,
    "seconds as text": str,
    "fractional seconds as text": lambda unix: f"{unix}.5",
    "milliseconds as text": lambda unix: str(unix * 1000),
}


@pytest.mark.parametrize("form", sorted(_AS_UNIX_TIME))
def test_a_deadline_is_iso_text_never_a_number_read_as_unix_time(h: Harness, form: str) -> None:
    """A ``deadline`` that is a JSON number, or a string of digits, is refused and nothing is
    funded (the schema read it as Unix seconds, and one above 2e10 as milliseconds); the same
    moment as ISO 8601 text posts."""
    moment = (h.app.clock.now() + timedelta(days=2)).replace(microsecond=0)
    body = {
        "title": "t",
        "reward": "2000000",
        "deadline": _AS_UNIX_TIME[form](int(moment.timestamp())),
    }
    assert h.refused("pat", "POST", "/tasks", body) == (422, "INVALID_REQUEST")
    assert h.balance("wallet:pat") == FUNDS
    assert h.ok("pat", "GET", "/tasks?mine=true")["tasks"] == []
    posted = h.ok("pat", "POST", "/tasks", {**body, "deadline": moment.isoformat()})
    assert posted["deadline"] == moment.isoformat()


# --- escrow cannot be locked for free ---------------------------------------------------------


def test_the_poster_releases_an_agent_that_delivers_nothing(h: Harness) -> None:
    """An agent holding a task without delivering can be released after 24 hours: the task is
    open again, the agent cannot retake it, and the poster may then cancel for a full refund
    whose receipt names the ending."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    assert h.refused("pat", "POST", f"/tasks/{tid}/cancel")[1] == "ILLEGAL_TRANSITION"
    assert h.refused("pat", "POST", f"/tasks/{tid}/release") == (409, "RELEASE_TOO_EARLY")
    h.advance(hours=24)
    assert h.refused("bob", "POST", f"/tasks/{tid}/release") == (403, "ROLE_REQUIRED")
    released = h.ok("pat", "POST", f"/tasks/{tid}/release")
    assert released["status"] == "funded" and released["agent"] is None
    assert released["released"] == ["ann"]
    assert h.refused("ann", "POST", f"/tasks/{tid}/accept") == (403, "RELEASED_FROM_TASK")
    done = h.ok("pat", "POST", f"/tasks/{tid}/cancel")
    assert done["ending"] == "refunded_on_cancel"
    assert h.balance("wallet:pat") == FUNDS
    refund = next(e for e in done["ledger"] if e["memo"] == "refund")
    assert refund["receipt_id"] in done["receipts"]
    receipt = h.ok("pat", "GET", f"/receipts/{refund['receipt_id']}")["receipt"]
    assert receipt["statement"]["policyDecision"]["ending"] == "refunded_on_cancel"


def test_a_delivered_task_cannot_be_released(h: Harness) -> None:
    """Once the agent delivered, the poster judges instead: release is refused."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    h.advance(hours=25)
    assert h.refused("pat", "POST", f"/tasks/{tid}/release")[1] == "ILLEGAL_TRANSITION"


# --- disputes are kept ----------------------------------------------------------------------


def test_disputes_are_stored_and_shown_to_the_parties_and_the_admin(h: Harness) -> None:
    """Who disputed, when, about which round, and why: on the task for its parties and the
    admin who rules; others see none of it."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": False, "reasons": ["No table."]})
    h.ok("ann", "POST", f"/tasks/{tid}/disputes", {"reason": "The table <b>is</b> there."})
    expected = {
        "attempt": 1,
        "by": "ann",
        "reason": "The table <b>is</b> there.",
        "at": h.clock.now().isoformat(),
    }
    for who in ("pat", "ann", "root"):
        assert h.ok(who, "GET", f"/tasks/{tid}")["disputes"] == [expected]
    assert "disputes" not in h.ok("bob", "GET", f"/tasks/{tid}")


def test_a_verifier_admin_cannot_rule_on_its_own_verdict(h: Harness) -> None:
    """An admin who is the task's named verifier is a party to it: CONFLICT_OF_INTEREST."""
    from adjudge.receipts import SigningKey  # noqa: PLC0415

    h.signers["vad"] = SigningKey.generate()
    h.keys["vad"] = h.app.accounts.create(
        None,
        "vad",
        ["admin", "verifier"],
        opt_in=True,
        verifier_public_key=h.signers["vad"].public_key.to_base64(),
    ).value["api_key"]
    tid = h.post("agent", verifier="vad")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    h.verdict("vad", tid, False, ["No."])
    h.ok("ann", "POST", f"/tasks/{tid}/disputes", {"reason": "Wrong."})
    ruling = {"pay_agent": False, "note": "I was right."}
    assert h.refused("vad", "POST", f"/tasks/{tid}/ruling", ruling) == (
        403,
        "CONFLICT_OF_INTEREST",
    )
    assert h.ok("root", "POST", f"/tasks/{tid}/ruling", ruling)["status"] == "cancelled"


# --- files and headers ----------------------------------------------------------------------


def test_the_sqlite_file_is_private(tmp_path: Path) -> None:
    """A new SQLite database is readable and writable by its owner only."""
    path = tmp_path / "fresh.db"
    store = Store(f"sqlite:///{path}")
    store.migrate()
    store.dispose()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_security_headers(h: Harness) -> None:
    """The UI gets a strict content security policy; every answer no sniffing, no framing."""
    ui = h.client.get("/ui/")
    assert ui.status_code == 200
    policy = ui.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
    for r in (ui, h.client.get("/api/v1/health")):
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"


def test_no_answer_of_an_account_is_kept_by_a_browser(h: Harness) -> None:
    """Every API answer (a refusal too) says no-store, so a browser's cache never gives one
    account's answers to the next person at the computer; the console's own files may be kept,
    and a route's own caching (the published keys) stands."""
    for r in (
        h.call("pat", "GET", "/accounts/me"),
        h.call("pat", "GET", "/tasks"),
        h.call(None, "GET", "/tasks"),
        h.client.get("/health"),
    ):
        assert r.headers["cache-control"] == "no-store", r.request.url
    assert "no-store" not in h.client.get("/ui/").headers.get("cache-control", "")
    keys = h.client.get("/.well-known/assay-request-keys.json")
    assert keys.status_code == 200 and "max-age" in keys.headers["cache-control"]


def test_the_schema_documents_the_answers(h: Harness) -> None:
    """Every operation documents 422 (and the other refusals) with the error shape the
    service actually answers."""
    schema = h.client.get("/openapi.json").json()
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            responses = op["responses"]
            for status in ("400", "401", "422", "503"):
                ref = responses[status]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), (method, path, status)
    # The shape referred to is in the document, and it is what a refusal carries.
    schemas = schema["components"]["schemas"]
    assert schemas["ErrorBody"]["required"] == ["error"]
    detail = schemas["ErrorBody"]["properties"]["error"]["$ref"].rsplit("/", 1)[1]
    refused = h.client.get("/api/v1/tasks").json()["error"]
    fields = ["code", "message", "request_id"]
    assert sorted(schemas[detail]["required"]) == sorted(refused) == fields


def test_refusals_by_reference_read_as_a_response_model_would() -> None:
    """The refusals are documented by reference (FastAPI builds nothing for them per route);
    the document says what it said when each was a response model, byte for byte."""

    def documented(responses: dict[int | str, dict[str, Any]]) -> bytes:
        api = FastAPI()
        api.post("/a/{x}", responses=responses)(lambda x, body: None)
        return json.dumps(errors.document_refusals(api.openapi())).encode()

    as_models: dict[int | str, dict[str, Any]] = {
        status: {"model": errors.ErrorBody, "description": "A refusal (see `error.code`)."}
        for status in errors.DOCUMENTED
    }
    assert documented(errors.RESPONSES) == documented(as_models)


def test_nul_in_a_path_is_a_clear_refusal(h: Harness) -> None:
    """A NUL in a path parameter never reaches the database."""
    assert h.refused("pat", "GET", "/tasks/a%00b") == (400, "INVALID_REQUEST")
    assert h.refused("pat", "POST", "/tasks/a%00b/accept") == (400, "INVALID_REQUEST")


def test_a_catastrophic_pattern_times_out_apart_and_never_passes(sqlite_store: Store) -> None:
    """A task whose pattern backtracks catastrophically (posted before the screen existed):
    its checks run apart in the worker pool and stop at the limit — the dry run and the verdict
    say so, the verdict is a FAIL, and the service keeps answering."""

    from adjudge.app import settlement  # noqa: PLC0415
    from adjudge.market import Context, Draft, post  # noqa: PLC0415

    h = make_harness(sqlite_store, real_checker=True)

    class Admits:
        def admissibility(self, criteria: Any, mode: str) -> list[Any]:
            return []

        def check(self, result: str, criteria: Any) -> Any:
            raise AssertionError("not used")

    now = h.clock.now()
    draft = Draft("pat", 1000, now + timedelta(days=1), "auto", {"regex_pattern": "(a|aa)+$"})
    out = post("task_catastrophic", draft, Context(now=now, checker=Admits()))
    with sqlite_store.write() as tx:
        settlement.post(tx, out, title="legacy", brief="", at=now)
    tid = out.task.id
    assert h.app.tasks.needs_slow_check(tid)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    attack = "a" * 34 + "!"
    dry = h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": attack})
    assert dry["passed"] is False and any("timed out" in r for r in dry["reasons"])
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": attack})
    done = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert done["status"] == "failed"
    assert any("timed out" in r for r in done["verification_result"]["reasons"])
    assert h.client.get("/api/v1/health").status_code == 200


def test_criteria_that_cannot_fail_are_refused_at_posting(h: Harness) -> None:
    """A keyword of a single space, a pattern that matches anything: refused with the field
    named, because the poster would pay for work nothing checked."""
    h.app.tasks.checker = _real_checker()
    for criteria in ({"contains_keywords": [" "], "min_length": 5}, {"regex_pattern": ".*"}):
        r = h.call("pat", "POST", "/tasks", {**BASE, "mode": "auto", "criteria": criteria})
        assert (r.status_code, r.json()["error"]["code"]) == (400, "CRITERIA_UNFALSIFIABLE")
        assert next(iter(criteria)) in r.json()["error"]["message"]
    assert h.balance("wallet:pat") == FUNDS


def test_an_accounts_dry_runs_and_lints_at_once_are_bounded(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hour's quota says nothing of how many arrive together (eight dry runs of a large
    result at once held every request thread): an account may have two dry runs and lints
    running at once, a third is 429 ``CHECKS_AT_ONCE_EXCEEDED`` at once, and another account
    and the same one afterwards are served."""
    tid = h.post("auto")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    real = h.app.tasks.checker.check
    inside, release = threading.Semaphore(0), threading.Event()

    def slow(*args: Any, **kwargs: Any) -> Any:
        inside.release()
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(h.app.tasks.checker, "check", slow)
    ann = h.app.accounts.authenticate(h.keys["ann"])
    held = [threading.Thread(target=h.app.tasks.dry_run, args=(ann, tid, GOOD)) for _ in range(2)]
    for thread in held:
        thread.start()
    assert inside.acquire(timeout=30) and inside.acquire(timeout=30)
    try:
        r = h.call("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
        assert (r.status_code, r.json()["error"]["code"]) == (429, "CHECKS_AT_ONCE_EXCEEDED")
        assert r.headers["Retry-After"] == "1"
        r = h.call("ann", "POST", "/criteria/lint", {"criteria": {"min_length": 5}})
        assert (r.status_code, r.json()["error"]["code"]) == (429, "CHECKS_AT_ONCE_EXCEEDED")
        assert h.ok("bob", "POST", "/criteria/lint", {"criteria": {"min_length": 5}})
    finally:
        release.set()
        for thread in held:
            thread.join()
    monkeypatch.undo()
    h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
