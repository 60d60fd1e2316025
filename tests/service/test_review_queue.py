"""Each verifier's review queue (revision 0051) is always the submissions awaiting its
judgment — the tasks awaiting verification, for their named verifier and each panel seat that
has not voted, where its worker did not give up — whatever verdicts, votes, claims, failures,
resubmissions and rulings happen; and a claim hands a verifier only what its queue holds."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import inspect, text

from adjudge.market import Status, Task
from adjudge.store import ConcurrentUpdate, Store, idempotency, leases, records
from support.audit import reset
from support.harness import Harness, make_harness
from support.migrations import downgrade
from support.statements import statements

VERIFIERS = ("vera", "vic", "ann")
RESULT = "The summary: revenue rose 4% while costs fell."

_task = st.integers(0, 2)
_who = st.sampled_from(VERIFIERS)
_step = st.one_of(
    st.tuples(st.just("post"), st.sampled_from(("named", "panel"))),
    st.tuples(st.just("vote"), _task, _who, st.booleans()),
    st.tuples(st.just("claim"), _who),
    st.tuples(st.just("fail"), _task, _who),
    st.tuples(st.just("resubmit"), _task),
    st.tuples(st.just("rule"), _task, st.booleans()),
)


def _harness(store: Store) -> Harness:
    reset(store)
    h = make_harness(store)
    for name in ("vic", "ann"):
        h.ok(name, "PATCH", "/accounts/me", {"verifier_opt_in": True})
    return h


def _apply(h: Harness, tasks: list[str], step: tuple[Any, ...]) -> None:
    kind = step[0]
    if kind == "post":
        body: dict[str, Any] = {"brief": "Summarise the report."}
        if step[1] == "panel":
            body |= {"verifier": None, "verifiers": list(VERIFIERS), "quorum": 2}
        tid = h.post("agent", **body)
        h.ok("bob", "POST", f"/tasks/{tid}/accept")
        h.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": RESULT})
        tasks.append(tid)
        return
    if kind == "claim":
        jobs = h.ok(step[1], "POST", "/reviews/claim", {"limit": 5})["jobs"]
        with h.app.store.read() as tx:
            waiting = {(t, a) for t, v, a, _ in leases.recount(tx) if v == step[1]}
        assert {(j["task_id"], j["attempt"]) for j in jobs} <= waiting
        return
    if step[1] >= len(tasks):
        return
    tid = tasks[step[1]]
    if kind == "vote":
        seen = h.ok(step[2], "GET", f"/tasks/{tid}")  # a verifier not on it sees no result
        if seen["status"] == "awaiting_verification" and seen.get("submissions"):
            h.call(step[2], "POST", f"/tasks/{tid}/verdict", h.signed(step[2], tid, step[3]))
    elif kind == "fail":
        attempt = h.ok("pat", "GET", f"/tasks/{tid}")["attempts"]
        for _ in range(5):  # enough failures to give it up, each of a claim, naming its lease
            claimed = h.call(step[2], "POST", "/reviews/claim", {"limit": 50})
            jobs = claimed.json()["jobs"] if claimed.status_code == 200 else []
            token = next((j["lease_token"] for j in jobs if j["task_id"] == tid), "none")
            body = {"error": "no reply", "lease_token": token}
            h.call(step[2], "POST", f"/reviews/{tid}/{attempt}/failed", body)
    elif kind == "resubmit":
        h.call("bob", "POST", f"/tasks/{tid}/submissions", {"result": RESULT + " Again."})
    elif kind == "rule":
        h.call("root", "POST", f"/tasks/{tid}/ruling", {"pay_agent": step[2]})


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(_step, min_size=1, max_size=12))
def test_the_review_queue_is_what_awaits_each_verifier(
    sqlite_store: Store, steps: list[tuple[Any, ...]]
) -> None:
    """After each step of any sequence, the queue kept as tasks change equals its recount
    from the tasks, seats, votes and leases themselves."""
    h = _harness(sqlite_store)
    tasks: list[str] = []
    for step in steps:
        _apply(h, tasks, step)
        with sqlite_store.read() as tx:
            assert leases.queued(tx) == leases.recount(tx), step


def test_a_panel_on_each_database(store: Store) -> None:
    """On each database: a panel's submission queued for its three verifiers; one vote and
    one worker giving up take theirs off; a claim of the third hands it out; the deciding
    vote empties the queue; a named verifier's task queued again on a new submission."""
    h = _harness(store)
    tasks: list[str] = []

    def queue() -> set[tuple[str, str, int]]:
        with store.read() as tx:
            kept = leases.queued(tx)
            assert kept == leases.recount(tx)
        return {(t, v, a) for t, v, a, _ in kept}

    _apply(h, tasks, ("post", "panel"))
    [panel] = tasks
    assert queue() == {(panel, v, 1) for v in VERIFIERS}
    _apply(h, tasks, ("vote", 0, "vera", True))
    _apply(h, tasks, ("fail", 0, "vic"))
    assert queue() == {(panel, "ann", 1)}
    jobs = h.ok("ann", "POST", "/reviews/claim", {"limit": 5})["jobs"]
    assert [(j["task_id"], j["attempt"]) for j in jobs] == [(panel, 1)]
    _apply(h, tasks, ("vote", 0, "ann", False))  # a split: to an admin
    assert queue() == set()
    _apply(h, tasks, ("post", "named"))
    named = tasks[1]
    assert queue() == {(named, "vera", 1)}
    _apply(h, tasks, ("vote", 1, "vera", False))
    assert queue() == set()
    _apply(h, tasks, ("resubmit", 1))
    assert queue() == {(named, "vera", 2)}


def test_a_new_submission_still_awaiting_is_queued_anew(sqlite_store: Store) -> None:
    """A task that goes from one submission awaiting verification straight to another (no
    path of the lifecycle does it today) is queued for the new one, not left at the old."""
    h = _harness(sqlite_store)
    tasks: list[str] = []
    _apply(h, tasks, ("post", "named"))
    with sqlite_store.write() as tx:
        stored = records.task(tx, tasks[0])
        assert stored is not None
        later = stored.task.submitted_at + timedelta(minutes=1)  # type: ignore[operator]
        again = replace(stored.task, attempts=stored.task.attempts + 1, submitted_at=later)
        records.update_task(tx, stored, again)
    with sqlite_store.read() as tx:
        assert leases.queued(tx) == {(tasks[0], "vera", 2, later)} == leases.recount(tx)


def test_migration_0051_queues_what_awaits_now(store: Store) -> None:
    """On each database: the queue made by 0051 from the tasks awaiting verification equals
    its recount (a panel's seat that voted and a worker that gave up left out), and a
    downgrade drops it cleanly."""
    h = _harness(store)
    tasks: list[str] = []
    for step in (
        ("post", "panel"),
        ("post", "named"),
        ("post", "panel"),
        ("vote", 0, "vic", True),
        ("fail", 2, "ann"),
    ):
        _apply(h, tasks, step)
    with store.read() as tx:
        before = leases.queued(tx)
    assert len(before) == 2 + 1 + 2
    downgrade(store, "0050")
    store.migrate()
    with store.read() as tx:
        assert leases.queued(tx) == before == leases.recount(tx)


def test_a_lost_submit_race_is_a_concurrent_update(store: Store) -> None:
    """PostgreSQL, two submits of one task at once on two processes: the loser read the task
    before the winner committed; its queue rows meet the winner's, yet it ends as the lost
    race it is (a ConcurrentUpdate: the unit reads again and refuses cleanly), not a storage
    failure, and the winner's rows stay."""
    if store.dialect != "postgresql":
        pytest.skip("SQLite has one writer at a time: no second submit can race the first")
    h = _harness(store)
    tid = h.post("agent", brief="Summarise the report.")
    h.ok("bob", "POST", f"/tasks/{tid}/accept")

    def submitted(stored: records.StoredTask, minutes: int) -> Task:
        t = stored.task
        at = t.posted_at + timedelta(minutes=minutes)
        return replace(
            t, status=Status.AWAITING_VERIFICATION, attempts=t.attempts + 1, submitted_at=at
        )

    with pytest.raises(ConcurrentUpdate), store.write() as loser:
        late = records.task(loser, tid)
        assert late is not None
        with store.write() as winner:
            first = records.task(winner, tid)
            assert first is not None
            records.update_task(winner, first, submitted(first, 1))
        records.update_task(loser, late, submitted(late, 2))
        loser.send()
    with store.read() as tx:
        assert {(t, v, a) for t, v, a, _ in leases.queued(tx)} == {(tid, "vera", 1)}


def test_a_claim_reads_its_jobs_texts_after_its_write(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim's write takes the leases only: the brief, the criteria and the result its jobs
    carry (up to 300,000 characters a job, 50 jobs a claim) are read after it commits, never
    on the thread that commits every account's writes, and the jobs are what they were. A claim
    sent again with its Idempotency-Key reads them again the same way: what its key stores is
    the leases, not the texts."""
    h = _harness(store)
    brief = "Summarise the report. " * 400
    result = RESULT * 200
    tid = h.post("agent", brief=brief, criteria={"acceptance": "Name the revenue."})
    h.ok("bob", "POST", f"/tasks/{tid}/accept")
    h.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": result})
    commits = h.app.unit.commits
    assert commits is not None
    where: list[bool] = []
    real = records.submission

    def noted(tx: Any, task_id: str, attempt: int) -> Any:
        where.append(commits.here())
        return real(tx, task_id, attempt)

    monkeypatch.setattr(records, "submission", noted)
    with statements(store.engine, "review_queue") as sent:
        [job] = h.app.reviews.claim(h.account("vera"), limit=50, key="poll-1").value["jobs"]
    assert where == [False]
    assert sent and not any(re.search(r"\btasks\.(brief|criteria)\b", sql) for sql in sent)
    assert (job["task_id"], job["attempt"], job["brief"], job["result"]) == (tid, 1, brief, result)
    assert job["acceptance"] == "Name the revenue."
    assert job["result_digest"] == h.ok("pat", "GET", f"/tasks/{tid}")["result_digest"]
    replayed = h.app.reviews.claim(h.account("vera"), limit=50, key="poll-1")
    assert replayed.replayed and replayed.value == {"jobs": [job]} and where == [False, False]
    with store.read() as tx:
        seen = idempotency.recalled(tx, "vera", "poll-1")
    assert seen is not None and job["lease_token"] in json.dumps(seen[1])
    assert brief[:40] not in json.dumps(seen[1]) and RESULT not in json.dumps(seen[1])
    assert h.app.reviews.claim(h.account("vera"), limit=50).value == {"jobs": []}  # leased


def _waiting(h: Harness, result: str = RESULT) -> str:
    """A submission waiting for vera, the task's named verifier."""
    tid = h.post("agent", brief="Summarise the report.")
    h.ok("bob", "POST", f"/tasks/{tid}/accept")
    h.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": result})
    return tid


def _lease_row(store: Store, tid: str) -> dict[str, Any] | None:
    with store.read() as tx:
        return leases.lease(tx, tid, 1, "vera")


def test_a_stale_workers_failure_report_ends_no_other_workers_lease(store: Store) -> None:
    """On each database: vera's worker A leases a submission and stalls past its lease; worker
    B claims it again, with a lease token of its own. A's failure report, naming A's lease, is
    refused (409 LEASE_NOT_HELD) and changes nothing: B's lease holds, no third claim takes the
    submission, no failure is counted. B's report counts once, also when sent again with its
    Idempotency-Key, and ends the lease: its token then names no lease in force (before, any
    report ended whatever lease was in force and counted, so a stale worker freed a live lease
    for a second judgment, and stale reports gave a submission up without five failures)."""
    h = _harness(store)
    tid = _waiting(h)
    [a] = h.ok("vera", "POST", "/reviews/claim", {"lease_seconds": 60})["jobs"]
    h.later(61 / 86_400)  # A's lease has run out
    [b] = h.ok("vera", "POST", "/reviews/claim", {"lease_seconds": 60})["jobs"]
    assert a["lease_token"] != b["lease_token"] and (a["task_id"], b["task_id"]) == (tid, tid)
    held = _lease_row(store, tid)
    stale = {"error": "timed out", "lease_token": a["lease_token"]}
    assert h.refused("vera", "POST", f"/reviews/{tid}/1/failed", stale) == (409, "LEASE_NOT_HELD")
    assert _lease_row(store, tid) == held
    assert held is not None and held["tries"] == 0
    assert h.ok("vera", "POST", "/reviews/claim", {})["jobs"] == []  # B still holds it
    live = {"error": "model down", "lease_token": b["lease_token"]}
    first = h.call("vera", "POST", f"/reviews/{tid}/1/failed", live, Idempotency_Key="b-1")
    again = h.call("vera", "POST", f"/reviews/{tid}/1/failed", live, Idempotency_Key="b-1")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    assert first.json()["lease"]["tries"] == 1
    assert h.refused("vera", "POST", f"/reviews/{tid}/1/failed", live) == (409, "LEASE_NOT_HELD")
    assert _lease_row(store, tid)["tries"] == 1  # type: ignore[index]
    [c] = h.ok("vera", "POST", "/reviews/claim", {})["jobs"]  # the lease ended with B's report
    assert c["lease_token"] not in (a["lease_token"], b["lease_token"])


def test_a_failure_report_without_its_lease_token_is_refused(sqlite_store: Store) -> None:
    """A report that names no lease (a client from before lease tokens) is refused with a code
    of its own (400 LEASE_TOKEN_REQUIRED) and changes nothing: the lease holds and no failure is
    counted (before, it ended the lease in force, whoever held it)."""
    h = _harness(sqlite_store)
    tid = _waiting(h)
    [job] = h.ok("vera", "POST", "/reviews/claim", {})["jobs"]
    held = _lease_row(sqlite_store, tid)
    r = h.call("vera", "POST", f"/reviews/{tid}/1/failed", {"error": "model down"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "LEASE_TOKEN_REQUIRED")
    assert "lease_token" in r.json()["error"]["message"]
    assert _lease_row(sqlite_store, tid) == held
    assert h.ok("vera", "POST", "/reviews/claim", {})["jobs"] == []
    body = {"error": "model down", "lease_token": job["lease_token"]}
    assert h.ok("vera", "POST", f"/reviews/{tid}/1/failed", body)["lease"]["tries"] == 1


def test_a_claim_sent_again_with_its_key_is_answered_with_the_same_leases(store: Store) -> None:
    """On each database: a claim whose answer was lost, sent again with its Idempotency-Key, is
    answered with the same jobs (the same leases, tokens and times, the texts read again) and
    leases nothing more, though more work waits now; the key with another request is
    IDEMPOTENCY_KEY_REUSED; a new key leases what waits. A claim that leased nothing stores no
    answer: sent again, it is decided anew (before, the claim read no key: each resend leased
    more, and the jobs of the lost answer stayed leased and unseen for the lease's length)."""
    h = _harness(store)
    nothing = h.call("vera", "POST", "/reviews/claim", {}, Idempotency_Key="poll-0")
    assert nothing.json() == {"jobs": []}
    first = _waiting(h)
    sent = h.call("vera", "POST", "/reviews/claim", {"limit": 5}, Idempotency_Key="poll-1")
    jobs = sent.json()["jobs"]
    assert [j["task_id"] for j in jobs] == [first] and "idempotent-replayed" not in sent.headers
    second = _waiting(h, RESULT + " Twice.")
    again = h.call("vera", "POST", "/reviews/claim", {"limit": 5}, Idempotency_Key="poll-1")
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json()["jobs"] == jobs
    other = h.call("vera", "POST", "/reviews/claim", {"limit": 4}, Idempotency_Key="poll-1")
    assert (other.status_code, other.json()["error"]["code"]) == (409, "IDEMPOTENCY_KEY_REUSED")
    anew = h.call("vera", "POST", "/reviews/claim", {}, Idempotency_Key="poll-0")
    assert [j["task_id"] for j in anew.json()["jobs"]] == [second]
    assert "idempotent-replayed" not in anew.headers
    assert h.ok("vera", "POST", "/reviews/claim", {}, Idempotency_Key="poll-2") == {"jobs": []}
    body = {"error": "model down", "lease_token": jobs[0]["lease_token"]}
    assert h.ok("vera", "POST", f"/reviews/{first}/1/failed", body)["lease"]["tries"] == 1


def _leases(store: Store) -> dict[str, dict[str, Any]]:
    """Every lease row by task (vera's), its columns as stored."""
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT * FROM review_leases")).mappings().all()
    return {row["task_id"]: dict(row) for row in rows}


def test_leases_taken_before_0059_are_named_by_no_report(store: Store) -> None:
    """On each database, leases in every state downgraded to 0058 (no token column) and
    migrated again: a lease in force, one run out, one its report ended, one given up. The
    token column is added empty (nullable, no default: every old lease holds no token) and
    every other column of every lease is as it was; no report names any of them — not the
    tokens their claims handed out before, nor an empty or a made-up one — and each refusal
    changes nothing. The run-out and the ended leases are claimed at once under fresh tokens,
    the given-up one never, the one in force once it runs out, and that claim's report counts.
    0059 downgrades keeping each lease's tries. (A migration that filled the new column with
    anything a report could send would let it end and count on leases no worker holds.)"""
    h = _harness(store)
    vera = h.account("vera")
    given_up = _waiting(h)
    for _ in range(5):
        [job] = h.ok("vera", "POST", "/reviews/claim", {})["jobs"]
        body = {"error": "model down", "lease_token": job["lease_token"]}
        h.ok("vera", "POST", f"/reviews/{given_up}/1/failed", body)
    ran_out = _waiting(h, RESULT + " 2")
    [short] = h.ok("vera", "POST", "/reviews/claim", {"lease_seconds": 1})["jobs"]
    in_force = _waiting(h, RESULT + " 3")
    [held] = h.ok("vera", "POST", "/reviews/claim", {"lease_seconds": 60})["jobs"]
    ended = _waiting(h, RESULT + " 4")
    [done] = h.ok("vera", "POST", "/reviews/claim", {"lease_seconds": 60})["jobs"]
    body = {"error": "timed out", "lease_token": done["lease_token"]}
    h.ok("vera", "POST", f"/reviews/{ended}/1/failed", body)
    assert [j["task_id"] for j in (short, held, done)] == [ran_out, in_force, ended]
    old_tokens = [job["lease_token"], short["lease_token"], held["lease_token"]]
    old_tokens.append(done["lease_token"])
    h.later(2 / 86_400)  # the one-second lease has run out
    downgrade(store, "0058")
    before = _leases(store)
    assert set(before) == {given_up, ran_out, in_force, ended}
    assert all("token" not in row for row in before.values())
    store.migrate()
    with store.engine.connect() as conn:
        [column] = [c for c in inspect(conn).get_columns("review_leases") if c["name"] == "token"]
    assert column["nullable"] and column.get("default") is None
    after = _leases(store)
    assert {t: row.pop("token") for t, row in after.items()} == dict.fromkeys(before)
    assert after == before
    for tid in before:
        for token in [*old_tokens, "", "None", "null", "0", tid]:
            body = {"error": "model down", "lease_token": token}
            code = h.refused("vera", "POST", f"/reviews/{tid}/1/failed", body)
            assert code in ((409, "LEASE_NOT_HELD"), (409, "REVIEW_NOT_AWAITED")), (tid, token)
    assert {t: row.pop("token") for t, row in _leases(store).items()} == dict.fromkeys(before)
    taken = h.app.reviews.claim(vera, limit=10).value["jobs"]
    assert sorted(j["task_id"] for j in taken) == sorted([ran_out, ended])
    fresh = _leases(store)
    assert {fresh[j["task_id"]]["token"] for j in taken} == {j["lease_token"] for j in taken}
    assert not {j["lease_token"] for j in taken} & set(old_tokens)
    assert fresh[in_force]["token"] is None and fresh[given_up]["token"] is None
    h.later(61 / 86_400)
    [again] = h.app.reviews.claim(vera, limit=10).value["jobs"]  # the given-up one stays given up
    assert again["task_id"] == in_force and again["lease_token"] not in old_tokens
    body = {"error": "model down", "lease_token": again["lease_token"]}
    assert h.ok("vera", "POST", f"/reviews/{in_force}/1/failed", body)["lease"]["tries"] == 1
    downgrade(store, "0058")
    kept = {t: row["tries"] for t, row in _leases(store).items()}
    assert kept == {given_up: 5, ran_out: 0, in_force: 1, ended: 1}
    store.migrate()


def _blocked_on_a_lock(store: Store, timeout: float = 10.0) -> bool:
    """Whether a session of this database waits on a row lock (within ``timeout``)."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        with store.engine.connect() as conn:
            waiting = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
            ).scalar_one()
        if waiting:
            return True
        time.sleep(0.01)
    return False


def test_a_report_racing_a_claim_counts_under_the_lease_in_force_only(store: Store) -> None:
    """PostgreSQL, a stale worker's report and another worker's claim at once on two
    connections: the report's transaction read the lease as its own; the claim has taken the
    lease under a new token and not committed yet when the report writes, so the report waits
    on the lease's row, and is decided when the claim commits, against the row as the claim
    left it: its update matches no token, it counts nothing, and the claim's lease stands with
    its token. (A report that read the lease, then wrote it by its key, would read the old
    token, wait, and end the claim's live lease and count a failure.)"""
    if store.dialect != "postgresql":
        pytest.skip("SQLite has one writer at a time: no claim can commit inside a report")
    h = _harness(store)
    tid = _waiting(h)
    [a] = h.ok("vera", "POST", "/reviews/claim", {"lease_seconds": 1})["jobs"]
    h.later(2 / 86_400)
    now = h.clock.now()
    counted: list[bool | None] = []

    def report() -> None:
        with store.write() as tx:
            assert leases.lease(tx, tid, 1, "vera")["token"] == a["lease_token"]  # type: ignore[index]
            counted.append(
                leases.failed(
                    tx, tid, 1, "vera", token=a["lease_token"], error="late", now=now, max_tries=5
                )
            )

    with store.write() as claim:
        [taken] = leases.claim(claim, "vera", now=now, lease=timedelta(minutes=5), limit=5)
        stale = threading.Thread(target=report)
        stale.start()
        assert _blocked_on_a_lock(store)  # the report waits on the row the claim holds
    stale.join(30)
    assert counted == [None]
    row = _lease_row(store, tid)
    assert row is not None and (row["token"], row["tries"], row["last_error"]) == (
        taken.token,
        0,
        None,
    )


def _claims_at_once(store: Store, workers: int, now: datetime) -> list[leases.Taken]:
    """What ``workers`` claims of vera's, started at once, each in a transaction of its own
    held open a moment after its claim, took."""
    ready = threading.Barrier(workers)
    taken: list[list[leases.Taken]] = [[] for _ in range(workers)]
    failures: list[BaseException] = []

    def claim(i: int) -> None:
        try:
            ready.wait(10)
            with store.write() as tx:
                taken[i] = leases.claim(tx, "vera", now=now, lease=timedelta(minutes=5), limit=6)
                time.sleep(0.05)  # the others claim while this one holds its rows
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    return [got for each in taken for got in each]


def test_claims_at_once_never_share_a_job(store: Store) -> None:
    """PostgreSQL, six workers of one verifier claiming at once, each in a transaction of its
    own held open a moment, over 24 waiting submissions, twice (the second time every lease
    has run out, so each claim re-takes existing lease rows): no submission is handed to two
    claims, each lease row holds the token of the one claim that took it, and every
    submission whose lease is in force was handed out by one claim (a claim that read a lease
    as free and wrote it without checking again, or took rows without locking them, hands one
    submission to two workers, each judging it)."""
    if store.dialect != "postgresql":
        pytest.skip("SQLite has one writer at a time: no two claims run at once")
    h = _harness(store)
    tids = {_waiting(h, f"{RESULT} {i}") for i in range(24)}
    start = h.clock.now()
    seen: set[str] = set()
    for rounds in range(2):
        now = start + timedelta(minutes=6 * rounds)  # the second time, every lease ran out
        handed = [(got.stored.task.id, got.token) for got in _claims_at_once(store, 6, now)]
        ids = [tid for tid, _ in handed]
        assert len(ids) == len(set(ids)), "a submission was handed to two claims"
        assert set(ids) <= tids and len(ids) >= 6
        assert not {token for _, token in handed} & seen
        seen |= {token for _, token in handed}
        with store.read() as tx:
            rows = {tid: leases.lease(tx, tid, 1, "vera") for tid in tids}
        live = {t for t, row in rows.items() if row is not None and row["locked_until"] > now}
        assert live == set(ids)
        assert {t: rows[t]["token"] for t in ids} == dict(handed)  # type: ignore[index]


@pytest.mark.parametrize("kind", ["named", "panel"])
def test_a_judged_job_is_not_reported_failed(store: Store, kind: str) -> None:
    """On each database: vera claims a submission (the named verifier's, or her panel seat's),
    posts her verdict, and then reports the job failed with its lease token, still the lease in
    force: the report is refused (409 REVIEW_NOT_AWAITED), sent again with a key too, and
    counts nothing: no try, no error, the lease row as it was (before, it counted a failure
    after the verdict, which moved the submission toward being given up, and ended the lease)."""
    h = _harness(store)
    tasks: list[str] = []
    _apply(h, tasks, ("post", kind))
    [tid] = tasks
    [job] = h.ok("vera", "POST", "/reviews/claim", {})["jobs"]
    h.ok("vera", "POST", f"/tasks/{tid}/verdict", h.signed("vera", tid, False))
    held = _lease_row(store, tid)
    assert held is not None and held["token"] == job["lease_token"]
    body = {"error": "model down", "lease_token": job["lease_token"]}
    refused = (409, "REVIEW_NOT_AWAITED")
    assert h.refused("vera", "POST", f"/reviews/{tid}/1/failed", body) == refused
    r = h.call("vera", "POST", f"/reviews/{tid}/1/failed", body, Idempotency_Key="f-1")
    assert (r.status_code, r.json()["error"]["code"]) == refused
    assert "verdict" in r.json()["error"]["message"]
    assert _lease_row(store, tid) == held
    assert h.ok("vera", "POST", "/reviews/claim", {})["jobs"] == []


def test_a_claim_sent_again_answers_its_leases_in_force_only(store: Store) -> None:
    """On each database: a claim whose answer was lost, sent again with its Idempotency-Key,
    answers as jobs only its leases still in force: one a report ended is named under
    ``lapsed`` (task and attempt, no token), and after its leases ran out (another worker of the
    verifier may hold its jobs now) it answers no job, every lease lapsed, leasing nothing,
    every time it is sent; the lease another claim took since holds, and a claim under a new
    key takes the rest. Before, the resend answered the old leases and tokens as live: the
    worker judged jobs another worker held, a second model call and review of one
    submission."""
    h = _harness(store)
    one, two = _waiting(h), _waiting(h, RESULT + " Twice.")
    claim = {"limit": 5, "lease_seconds": 60}
    jobs = h.ok("vera", "POST", "/reviews/claim", claim, Idempotency_Key="poll-1")["jobs"]
    assert [j["task_id"] for j in jobs] == [one, two]
    body = {"error": "model down", "lease_token": jobs[0]["lease_token"]}
    h.ok("vera", "POST", f"/reviews/{one}/1/failed", body)
    again = h.call("vera", "POST", "/reviews/claim", claim, Idempotency_Key="poll-1")
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == {"jobs": jobs[1:], "lapsed": [{"task_id": one, "attempt": 1}]}
    h.later(61 / 86_400)  # every lease of poll-1 has run out
    [other] = h.ok("vera", "POST", "/reviews/claim", {"limit": 1}, Idempotency_Key="poll-2")["jobs"]
    assert other["task_id"] == one
    for _ in range(2):
        late = h.call("vera", "POST", "/reviews/claim", claim, Idempotency_Key="poll-1")
        assert late.status_code == 200 and late.headers["idempotent-replayed"] == "true"
        lapsed = [{"task_id": one, "attempt": 1}, {"task_id": two, "attempt": 1}]
        assert late.json() == {"jobs": [], "lapsed": lapsed}
    assert _lease_row(store, one)["token"] == other["lease_token"]  # type: ignore[index]
    assert _lease_row(store, two)["token"] == jobs[1]["lease_token"]  # type: ignore[index]
    [anew] = h.ok("vera", "POST", "/reviews/claim", claim, Idempotency_Key="poll-3")["jobs"]
    assert anew["task_id"] == two and anew["lease_token"] != jobs[1]["lease_token"]


def test_a_claim_sent_again_after_its_job_was_judged_answers_it_lapsed(store: Store) -> None:
    """On each database: a claim's answer is lost, and the verifier posts its verdict on the
    job meanwhile (by hand, its lease still in force): the claim sent again with its key names
    the job under ``lapsed``, not as a job to judge again (before, it answered the job, and the
    worker called its model on work already judged, its verdict then refused)."""
    h = _harness(store)
    tid = _waiting(h)
    [job] = h.ok("vera", "POST", "/reviews/claim", {}, Idempotency_Key="poll-1")["jobs"]
    h.ok("vera", "POST", f"/tasks/{tid}/verdict", h.signed("vera", tid, False))
    again = h.ok("vera", "POST", "/reviews/claim", {}, Idempotency_Key="poll-1")
    assert again == {"jobs": [], "lapsed": [{"task_id": tid, "attempt": 1}]}
    assert _lease_row(store, tid)["token"] == job["lease_token"]  # type: ignore[index]
