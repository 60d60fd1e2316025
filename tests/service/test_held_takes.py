"""Escrow cannot be locked for free: the limit on held takes, take windows and their lapses."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, update

from adjudge import Error
from adjudge.app import Settings, maintenance
from adjudge.app.retries import retry_delay
from adjudge.errors import StateError
from adjudge.store import Store, schema, takes
from support.audit import audit, reset
from support.harness import ACCOUNTS, FUNDS, Harness, make_harness

GOOD = "A long enough result."


def _held(h: Harness, agent: str) -> int:
    with h.app.store.read() as tx:
        return takes.held(tx, agent)


def _task(h: Harness, who: str, tid: str) -> Any:
    return h.ok(who, "GET", f"/tasks/{tid}")


# --- the limit --------------------------------------------------------------------------------


def test_the_limit_refuses_the_take_after_it(h: Harness) -> None:
    """With the default limit of 5, an agent's sixth undelivered take is refused with
    TAKE_LIMIT_REACHED and a sentence naming the limit, and nothing changes; a submission frees
    a place, and other agents are not limited by it."""
    tids = [h.post("manual") for _ in range(6)]
    for tid in tids[:5]:
        assert h.ok("ann", "POST", f"/tasks/{tid}/accept")["status"] == "assigned"
    r = h.call("ann", "POST", f"/tasks/{tids[5]}/accept")
    assert r.status_code == 409 and r.json()["error"]["code"] == "TAKE_LIMIT_REACHED"
    assert "5 tasks taken and not yet submitted" in r.json()["error"]["message"]
    assert _task(h, "pat", tids[5])["status"] == "funded" and _held(h, "ann") == 5
    assert h.ok("bob", "POST", f"/tasks/{tids[5]}/accept")["agent"] == "bob"
    h.ok("ann", "POST", f"/tasks/{tids[0]}/submissions", {"result": GOOD})
    assert _held(h, "ann") == 4
    extra = h.post("manual")
    assert h.ok("ann", "POST", f"/tasks/{extra}/accept")["agent"] == "ann"
    audit(h.app.store)


def test_the_limit_is_the_operators_setting(sqlite_store: Store) -> None:
    """``Settings(take_limit=…)`` sets it (1 to 1000, else INVALID_TAKE_LIMIT)."""
    h = make_harness(sqlite_store, settings=Settings(take_limit=1))
    first, second = h.post("manual"), h.post("manual")
    h.ok("ann", "POST", f"/tasks/{first}/accept")
    assert h.refused("ann", "POST", f"/tasks/{second}/accept") == (409, "TAKE_LIMIT_REACHED")
    for bad in (0, 1001):
        try:
            Settings(take_limit=bad)
        except Error as exc:
            assert exc.code == "INVALID_TAKE_LIMIT"
        else:
            raise AssertionError(f"take_limit={bad} was accepted")


def _at_once(h: Harness, agent: str, tids: list[str]) -> list[tuple[int, str]]:
    """``agent`` takes each task at the same moment, one thread each: (status, code) each."""
    answers: list[tuple[int, str]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(tids))

    def take(tid: str) -> None:
        client = TestClient(h.client.app)
        barrier.wait()
        r = client.post(
            f"/api/v1/tasks/{tid}/accept", headers={"Authorization": f"Bearer {h.keys[agent]}"}
        )
        code = r.json()["error"]["code"] if r.status_code >= 400 else ""
        with lock:
            answers.append((r.status_code, code))

    threads = [threading.Thread(target=take, args=(tid,)) for tid in tids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def test_two_takes_at_once_at_the_limit_let_one_through(store: Store) -> None:
    """An agent one take short of its limit takes two tasks at the same moment, three times
    over: each time exactly one take applies and the other is TAKE_LIMIT_REACHED, and the
    counter never passes the limit (on SQLite and on PostgreSQL)."""
    h = make_harness(store, settings=Settings(take_limit=2))
    held = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{held}/accept")
    for _ in range(3):
        pair = [h.post("manual"), h.post("manual")]
        answers = _at_once(h, "ann", pair)
        assert sorted(answers) == [(200, ""), (409, "TAKE_LIMIT_REACHED")], answers
        assert _held(h, "ann") == 2
        won = next(t for t in pair if _task(h, "pat", t)["agent"] == "ann")
        h.ok("ann", "POST", f"/tasks/{won}/submissions", {"result": GOOD})
        assert _held(h, "ann") == 1
    audit(store, FUNDS * len(ACCOUNTS))


# --- the window and its lapse -----------------------------------------------------------------


def test_a_lapse_reopens_the_task_and_is_on_its_record(h: Harness) -> None:
    """A take with nothing submitted when its window ends lapses: the task is open again, its
    view shows the lapse (who, since when, when the window ended), the agent's place under the
    limit is back, it cannot submit or take the task again, and another agent can."""
    tid = h.post("manual", take_window_hours=6)
    posted = _task(h, "pat", tid)
    assert posted["take_window_hours"] == 6 and posted["take_lapses_at"] is None
    taken = h.ok("ann", "POST", f"/tasks/{tid}/accept")
    assert taken["take_lapses_at"] is not None and taken["take_lapses_at"] < taken["deadline"]
    h.advance(hours=5, minutes=59)
    assert _task(h, "ann", tid)["status"] == "assigned"
    h.advance(minutes=2)
    assert _held(h, "ann") == 1  # nothing applied yet: the read below does it
    view = _task(h, "bob", tid)
    assert view["status"] == "funded" and view["agent"] is None and view["take_lapses_at"] is None
    assert view["lapses"] == [
        {"agent": "ann", "taken_at": taken["accepted_at"], "at": taken["take_lapses_at"]}
    ]
    assert _held(h, "ann") == 0
    assert h.refused("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD}) == (
        403,
        "TAKE_LAPSED",
    )
    assert h.refused("ann", "POST", f"/tasks/{tid}/accept") == (403, "TAKE_LAPSED")
    again = h.ok("bob", "POST", f"/tasks/{tid}/accept")
    assert again["agent"] == "bob" and len(again["lapses"]) == 1
    done = h.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    assert done["status"] == "submitted" and done["take_lapses_at"] is None
    audit(h.app.store)


def test_a_submission_after_the_window_is_refused_before_any_sweep(h: Harness) -> None:
    """The window is exact: an agent submitting a second after it ends is refused, whether or
    not the lapse was applied yet, and the refusal writes nothing."""
    tid = h.post("auto", take_window_hours=2)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.advance(hours=2)
    assert h.refused("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD}) == (
        403,
        "TAKE_LAPSED",
    )
    assert h.refused("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})[1] == (
        "NOT_TASK_AGENT"
    )
    with h.app.store.read() as tx:
        assert tx.conn.exec_driver_sql("SELECT COUNT(*) FROM submissions").scalar() == 0


def test_the_sweep_lapses_takes_nobody_looks_at(h: Harness) -> None:
    """The service's sweep applies every take whose time is up, and only those: listings show
    the lapsed tasks open again; a take still in its window, or without one, is left alone."""
    short = [h.post("manual", take_window_hours=1) for _ in range(3)]
    long = h.post("manual", take_window_hours=12)
    plain = h.post("manual")
    for tid in (*short, long, plain):
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.advance(hours=1)
    assert h.app.tasks.lapse_due() == 3 and h.app.tasks.lapse_due() == 0
    listed = {t["id"]: t["status"] for t in h.ok("pat", "GET", "/tasks")["tasks"]}
    assert [listed[t] for t in short] == ["funded"] * 3
    assert listed[long] == listed[plain] == "assigned" and _held(h, "ann") == 2
    assert h.app.tasks.lapse_due(limit=1) == 0
    audit(h.app.store)


def test_the_sweeps_lapses_share_commits(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass's due lapses are queued at once, so they share the group commit's transactions
    (each waited for a commit of its own before: ten transactions for ten); a lapse that
    cannot apply now (its task reclaimed meanwhile, say) holds up none of the others, and is
    put back until its retry."""
    tids = [h.post("manual", take_window_hours=1) for _ in range(10)]
    for i, tid in enumerate(tids):
        agent = f"agent{i // 5}"
        if agent not in h.keys:
            h.keys[agent] = h.app.accounts.create(None, agent, ["agent"]).value["api_key"]
        h.ok(agent, "POST", f"/tasks/{tid}/accept")
    h.advance(hours=1)
    batches: list[int] = []
    commits = h.app.unit.commits
    assert commits is not None
    run = commits._commit

    def counted(batch: list[Any]) -> None:
        batches.append(len(batch))
        run(batch)

    lapse = h.app.tasks._lapse

    def refusing(tx: Any, task_id: str) -> Any:
        if task_id == tids[3]:
            raise StateError("not now", code="TEST_REFUSED")
        return lapse(tx, task_id)

    monkeypatch.setattr(commits, "_commit", counted)
    monkeypatch.setattr(h.app.tasks, "_lapse", refusing)
    assert h.app.tasks.lapse_due() == 9
    assert sum(batches) == 11 and len(batches) < 6, batches  # and the one failed put back
    listed = {t["id"]: t["status"] for t in h.ok("pat", "GET", "/tasks")["tasks"]}
    assert [listed[t] for t in tids] == ["funded"] * 3 + ["assigned"] + ["funded"] * 6
    monkeypatch.setattr(h.app.tasks, "_lapse", lapse)
    assert h.app.tasks.lapse_due() == 0  # put back until its retry
    h.advance(minutes=1)
    assert h.app.tasks.lapse_due() == 1  # the pass after its retry's delay
    audit(h.app.store)


def _sweep_state(h: Harness) -> dict[str, tuple[str, int | None, Any]]:
    """Each task's status, failed sweeps in a row and retry time, read from the rows (a read
    through the service would lapse a due take itself)."""
    t = schema.tasks.c
    with h.app.store.read() as tx:
        rows = tx.conn.execute(select(t.id, t.status, t.sweep_failures, t.sweep_retry_at))
        return {r.id: (r.status, r.sweep_failures, r.sweep_retry_at) for r in rows}


def test_takes_that_fail_to_lapse_hold_up_none_due_after_them(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On each database: 101 takes whose lapse fails on every pass (refused, or a fault of the
    row), all due before a healthy one. The upkeep's pass lapses the healthy one all the same,
    and puts each failing one back, logged, to be tried a minute later, then two; a pass before
    then tries none of them; one that no longer fails lapses when tried and is back in the due
    order (before, the sweep took the same 101 first on every pass, and the healthy take behind
    them never lapsed)."""
    h = make_harness(store, settings=Settings(take_limit=200))
    poisoned = [h.post("manual", take_window_hours=1, reward="10000") for _ in range(101)]
    for tid in poisoned:
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.advance(minutes=1)
    healthy = h.post("manual", take_window_hours=1)
    h.ok("bob", "POST", f"/tasks/{healthy}/accept")
    h.advance(hours=1, minutes=1)
    failing, tried = set(poisoned), []
    lapse = h.app.tasks._lapse

    def faulty(tx: Any, task_id: str) -> Any:
        if task_id in failing:
            tried.append(task_id)
            if len(tried) % 2:
                raise RuntimeError("a fault of this row")
            raise StateError("not now", code="TEST_REFUSED")
        return lapse(tx, task_id)

    monkeypatch.setattr(h.app.tasks, "_lapse", faulty)
    first = h.clock.now()
    done = maintenance.run_once(h.app)
    assert (done["lapsed"], done["failed"]) == (1, 0), done
    state = _sweep_state(h)
    assert state[healthy] == ("funded", None, None)
    retry = first + timedelta(minutes=1)
    assert {state[t] for t in poisoned} == {("assigned", 1, retry)}
    assert sorted(tried) == sorted(poisoned)
    tried.clear()
    assert maintenance.run_once(h.app)["lapsed"] == 0 and tried == []  # none due yet
    h.advance(minutes=1)
    failing.discard(poisoned[0])
    second = h.clock.now()
    done = maintenance.run_once(h.app)
    assert (done["lapsed"], done["failed"]) == (1, 0), done
    state = _sweep_state(h)
    assert state[poisoned[0]] == ("funded", None, None)
    retry = second + timedelta(minutes=2)
    assert {state[t] for t in poisoned[1:]} == {("assigned", 2, retry)}
    assert len(tried) == 100
    monkeypatch.setattr(h.app.tasks, "_lapse", lapse)
    h.advance(minutes=2)
    assert maintenance.run_once(h.app)["lapsed"] == 100
    assert {_sweep_state(h)[t] for t in poisoned} == {("funded", None, None)}
    audit(h.app.store)


def test_a_new_take_is_due_on_time_after_a_failed_sweep(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A take's lapse fails once (put back for a minute, out of the due order); then a read
    applies the lapse and another agent takes the task with a window of its own. That new
    take lapses when its window ends, in the first pass after (the failed sweep's mark was for
    the take before; kept, it hid the new take from the sweep until its retry came)."""
    tid = h.post("manual", take_window_hours=1)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.advance(hours=1, minutes=1)
    lapse = h.app.tasks._lapse

    def failing(tx: Any, task_id: str) -> Any:
        raise RuntimeError("a fault of this row")

    monkeypatch.setattr(h.app.tasks, "_lapse", failing)
    assert maintenance.run_once(h.app)["lapsed"] == 0
    assert _sweep_state(h)[tid][1] == 1
    monkeypatch.setattr(h.app.tasks, "_lapse", lapse)
    with h.app.store.write() as tx:  # a retry far off: only the due order can find the take
        tx.conn.execute(
            update(schema.tasks)
            .where(schema.tasks.c.id == tid)
            .values(sweep_retry_at=h.clock.now() + timedelta(hours=5))
        )
    assert _task(h, "pat", tid)["status"] == "funded"  # the read lapses ann's take
    h.ok("bob", "POST", f"/tasks/{tid}/accept")
    assert _sweep_state(h)[tid] == ("assigned", None, None)
    h.advance(hours=1, minutes=1)
    assert maintenance.run_once(h.app)["lapsed"] == 1
    assert _sweep_state(h)[tid][0] == "funded"


def test_the_retry_delay_grows_to_its_most() -> None:
    """A minute after the first failure, doubling with each in a row, an hour at most."""
    delays = [retry_delay(n) for n in (1, 2, 3, 6, 7, 100)]
    assert delays == [timedelta(minutes=m) for m in (1, 2, 4, 32, 60, 60)]


def test_no_money_moves_on_a_lapse(h: Harness) -> None:
    """A lapse moves nothing: the escrow still holds the whole reward, the task's ledger is its
    funding alone, no receipt is written, and every balance is as it was."""
    tid = h.post("manual", take_window_hours=3)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    before = h.ledger()
    receipts = h.ok("root", "GET", "/receipts/head")["count"]
    h.advance(hours=4)
    assert h.app.tasks.lapse_due() == 1
    assert h.ledger() == before and before[f"escrow:{tid}"] == "2000000"
    view = _task(h, "pat", tid)
    assert [e["memo"] for e in view["ledger"]] == ["fund", "fund"]  # the two legs of funding
    assert view["receipts"] == [] and h.ok("root", "GET", "/receipts/head")["count"] == receipts
    audit(h.app.store, FUNDS * len(ACCOUNTS))


def test_the_poster_still_cannot_reclaim_before_the_deadline(h: Harness) -> None:
    """A take window changes nothing about reclaiming: refused during the take and after its
    lapse until the deadline; at the deadline the whole reward comes back. (An open task, as
    after a lapse or a release, may be cancelled.)"""
    tid = h.post("manual", take_window_hours=4)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    assert h.refused("pat", "POST", f"/tasks/{tid}/reclaim") == (409, "DEADLINE_NOT_REACHED")
    h.advance(hours=5)
    assert h.refused("pat", "POST", f"/tasks/{tid}/reclaim") == (409, "DEADLINE_NOT_REACHED")
    assert _task(h, "pat", tid)["status"] == "funded"
    h.advance(hours=19)
    done = h.ok("pat", "POST", f"/tasks/{tid}/reclaim")
    assert done["ending"] == "refunded_unaccepted" and h.balance("wallet:pat") == FUNDS


def test_a_take_past_its_deadline_stops_counting(h: Harness) -> None:
    """A take never delivered by the deadline no longer holds a place under the limit (the
    agent can no longer submit), while the task stays assigned for the poster's reclaim, which
    refunds it as undelivered, as it always did."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.advance(hours=24)
    assert h.app.tasks.lapse_due() == 1 and _held(h, "ann") == 0
    view = _task(h, "pat", tid)
    assert view["status"] == "assigned" and view["agent"] == "ann" and view["lapses"] == []
    assert h.ok("pat", "POST", f"/tasks/{tid}/reclaim")["ending"] == "refunded_undelivered"
    audit(h.app.store)


@given(window=st.sampled_from([0, 2161, 24, -3, True, "6", 2.0]) | st.floats(1.1, 2.9))
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_bad_take_window_is_refused_and_posts_nothing(h: Harness, window: object) -> None:
    """A window that is not whole hours from 1 to 2160, shorter than the deadline, is refused
    (INVALID_TAKE_WINDOW, or INVALID_REQUEST for what is not a number) and funds nothing."""
    body = {"title": "t", "reward": "1", "deadline_hours": 24, "take_window_hours": window}
    before = h.ledger()
    status, code = h.refused("pat", "POST", "/tasks", body)
    assert (status, code) in {(400, "INVALID_TAKE_WINDOW"), (422, "INVALID_REQUEST")}
    assert h.ledger() == before


# --- the counter equals a recount -------------------------------------------------------------

AGENTS = ["ann", "bob", "vera"]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["post", "take", "submit", "lapse", "cancel", "release", "reclaim"]),
        st.integers(0, 99),
        st.sampled_from(AGENTS),
        st.sampled_from([0, 0, 1, 3, 13]),
    ),
    min_size=1,
    max_size=40,
)


def test_the_held_take_counter_equals_a_recount(sqlite_store: Store) -> None:
    """Random sequences of posts (with and without windows), takes, submissions, lapses (by the
    sweep, by a read, or by the next action), cancels, releases, reclaims and clock moves: after
    every step each agent's counter equals a count over the tasks, and never passes the limit."""
    store = sqlite_store

    @settings(max_examples=40, deadline=None)
    @given(steps=STEPS, windows=st.lists(st.sampled_from([None, 1, 2, 5]), min_size=40))
    def run(steps: list[tuple[str, int, str, int]], windows: list[int | None]) -> None:
        reset(store)
        h = make_harness(store, settings=Settings(take_limit=3))
        tasks = h.app.tasks
        who = {name: h.account(name) for name in ("pat", *AGENTS)}
        posted: list[str] = []
        for i, (action, pick, agent, hours) in enumerate(steps):
            h.advance(hours=hours)
            tid = posted[pick % len(posted)] if posted else None
            try:
                if action == "post" or tid is None:
                    made = tasks.post(
                        who["pat"],
                        title="t",
                        brief="",
                        reward=1000,
                        mode="manual",
                        criteria={},
                        deadline_hours=24,
                        take_window_hours=windows[i % len(windows)],
                    )
                    posted.append(made.value["id"])
                elif action == "take":
                    tasks.accept(who[agent], tid)
                elif action == "submit":
                    tasks.submit(who[agent], tid, GOOD)
                elif action == "lapse":
                    if pick % 2:
                        tasks.get(who["pat"], tid)
                    else:
                        tasks.lapse_due()
                else:
                    getattr(tasks, action)(who["pat"], tid)
            except Error:
                pass  # a refusal changes nothing; the audit below says so
            with store.read() as tx:
                counted = takes.counted(tx)
                assert counted == takes.recount(tx), (i, steps[: i + 1])
                assert all(0 < n <= 3 for n in counted.values())
        audit(store)

    run()
