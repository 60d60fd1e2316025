"""Takes in the pure lifecycle: the take window, lapses, and whose held takes each event moves."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge import Error
from adjudge.market import (
    Accept,
    Cancel,
    Context,
    Dispute,
    Draft,
    Ending,
    Event,
    Lapse,
    Outcome,
    Reclaim,
    Release,
    Review,
    Status,
    Submit,
    TakeEnded,
    TakeHeld,
    TakeLapsed,
    Task,
    holder,
    lapses_at,
    post,
    step,
)
from support.fakes import FakeChecker

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GOOD = "A long enough result."
HOUR = timedelta(hours=1)


def ctx(at: datetime = T0, limit: int = 5) -> Context:
    return Context(now=at, checker=FakeChecker(), take_limit=limit)


def posted(window: int | None = 6, days: int = 2) -> Task:
    draft = Draft("P", 2_000_000, T0 + timedelta(days=days), take_window_hours=window)
    return post("t1", draft, ctx()).task


def refused(task: Task, event: Event, at: datetime) -> str:
    with pytest.raises(Error) as err:
        step(task, event, ctx(at))
    return err.value.code


def takes(out: Outcome) -> list[object]:
    return [e for e in out.effects if isinstance(e, TakeHeld | TakeEnded | TakeLapsed)]


# --- posting ----------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [0, -1, 2161, True, 1.5, "6"])
def test_a_take_window_is_whole_hours_within_bounds(window: object) -> None:
    """Zero, negative, over 2160, a bool, a fraction or a string: INVALID_TAKE_WINDOW."""
    draft = Draft("P", 1, T0 + timedelta(days=90), take_window_hours=window)  # type: ignore[arg-type]
    with pytest.raises(Error) as err:
        post("t1", draft, ctx())
    assert err.value.code == "INVALID_TAKE_WINDOW"


def test_a_take_window_must_end_before_the_deadline() -> None:
    """A window as long as the time to the deadline could never lapse, so it is refused; one
    hour shorter is accepted, and 1 and 2160 hours are both within bounds."""
    with pytest.raises(Error) as err:
        post("t1", Draft("P", 1, T0 + 24 * HOUR, take_window_hours=24), ctx())
    assert err.value.code == "INVALID_TAKE_WINDOW" and "24 hours" in err.value.message
    assert post("t1", Draft("P", 1, T0 + 24 * HOUR, take_window_hours=23), ctx()).task
    assert post("t", Draft("P", 1, T0 + 2 * HOUR, take_window_hours=1), ctx()).task
    far = T0 + timedelta(days=90)
    assert post("t", Draft("P", 1, far, take_window_hours=2159), ctx()).task.take_window_hours


def test_no_window_is_todays_behaviour() -> None:
    """Without a window the take counts until the deadline and never reopens the task."""
    task = step(posted(None), Accept("A"), ctx()).task
    assert task.take_ends_at == task.deadline and lapses_at(task) is None
    with pytest.raises(Error) as err:
        step(task, Lapse(), ctx(T0 + timedelta(days=1)))
    assert err.value.code == "LAPSE_NOT_DUE"


# --- the take and its lapse -------------------------------------------------------------------


def test_a_take_is_held_until_its_first_submission() -> None:
    """Accepting holds a take (with the limit in force); the first submission ends it, and a
    resubmission after a failed round holds none."""
    out = step(posted(), Accept("A"), ctx(limit=3))
    assert takes(out) == [TakeHeld("A", "t1", 3)]
    assert out.task.take_ends_at == T0 + 6 * HOUR == lapses_at(out.task)
    submitted = step(out.task, Submit("A", GOOD), ctx(T0 + HOUR))
    assert takes(submitted) == [TakeEnded("A", "t1")]
    assert submitted.task.take_ends_at is None and holder(submitted.task) is None
    failed = step(submitted.task, Review("P", False, stored_result=GOOD), ctx(T0 + 2 * HOUR))
    again = step(failed.task, Submit("A", GOOD), ctx(T0 + 10 * HOUR))
    assert not takes(failed) and not takes(again) and again.task.attempts == 2


def test_a_lapse_reopens_the_task_and_moves_no_money() -> None:
    """At the end of the window with nothing submitted, the task is funded again, the lapse is
    recorded with the window's end, the take stops counting, and no money moves."""
    taken = step(posted(), Accept("A"), ctx(T0 + HOUR)).task
    assert refused(taken, Lapse(), T0 + 7 * HOUR - timedelta(seconds=1)) == "LAPSE_NOT_DUE"
    out = step(taken, Lapse(), ctx(T0 + 9 * HOUR))
    assert out.task.status is Status.FUNDED and out.task.agent is None
    assert out.task.accepted_at is None and out.task.take_ends_at is None
    assert out.task.lapsed == ("A",) and out.task.attempts == 0
    assert takes(out) == [TakeLapsed("t1", "A", T0 + HOUR, T0 + 7 * HOUR), TakeEnded("A", "t1")]
    assert not out.transfers and out.task.ending is None


def test_a_lapsed_agent_cannot_submit_or_take_it_again() -> None:
    """After the window the agent's submission is refused (TAKE_LAPSED), whether or not the
    lapse was applied yet; it cannot take the task back; another agent can, with a new window."""
    taken = step(posted(), Accept("A"), ctx()).task
    late = T0 + 6 * HOUR
    assert refused(taken, Submit("A", GOOD), late) == "TAKE_LAPSED"
    lapsed = step(taken, Lapse(), ctx(late)).task
    assert refused(lapsed, Submit("A", GOOD), late) == "TAKE_LAPSED"
    assert refused(lapsed, Accept("A"), late) == "TAKE_LAPSED"
    retaken = step(lapsed, Accept("B"), ctx(late + HOUR))
    assert takes(retaken) == [TakeHeld("B", "t1", 5)]
    assert retaken.task.take_ends_at == late + 7 * HOUR


def test_a_due_lapse_is_applied_before_any_event() -> None:
    """Another agent taking a task whose window ended gets it in the same step: the lapse is
    recorded first, the old take ends and the new one starts."""
    taken = step(posted(), Accept("A"), ctx()).task
    out = step(taken, Accept("B"), ctx(T0 + 8 * HOUR))
    assert out.task.agent == "B" and out.task.lapsed == ("A",)
    assert takes(out) == [
        TakeLapsed("t1", "A", T0, T0 + 6 * HOUR),
        TakeEnded("A", "t1"),
        TakeHeld("B", "t1", 5),
    ]


def test_the_poster_still_reclaims_only_after_the_deadline() -> None:
    """A window changes nothing about reclaiming: refused before the deadline, during the take
    and after its lapse; after a lapse the open task may be cancelled, as after a release."""
    taken = step(posted(), Accept("A"), ctx()).task
    assert refused(taken, Reclaim("P"), T0 + HOUR) == "DEADLINE_NOT_REACHED"
    lapsed = step(taken, Lapse(), ctx(T0 + 6 * HOUR)).task
    assert refused(lapsed, Reclaim("P"), T0 + 7 * HOUR) == "DEADLINE_NOT_REACHED"
    cancelled = step(lapsed, Cancel("P"), ctx(T0 + 7 * HOUR))
    assert cancelled.task.ending is Ending.REFUNDED_ON_CANCEL


def test_the_deadline_before_the_window_ends_the_count_not_the_take() -> None:
    """A take whose window would end after the deadline never lapses: at the deadline it stops
    counting, the task stays assigned, and reclaiming refunds it as undelivered."""
    task = posted(window=20, days=1)
    taken = step(task, Accept("A"), ctx(T0 + 10 * HOUR)).task
    assert taken.take_ends_at == task.deadline and lapses_at(taken) is None
    end = step(taken, Lapse(), ctx(task.deadline))
    assert end.task.status is Status.ASSIGNED and end.task.agent == "A"
    assert takes(end) == [TakeEnded("A", "t1")] and end.task.lapsed == ()
    out = step(end.task, Reclaim("P"), ctx(task.deadline + HOUR))
    assert out.task.ending is Ending.REFUNDED_UNDELIVERED and not takes(out)


def test_reclaim_and_release_end_a_held_take() -> None:
    """A reclaim after the deadline, or a release, ends a take still counted, once."""
    taken = step(posted(None, days=1), Accept("A"), ctx()).task
    out = step(taken, Reclaim("P"), ctx(T0 + timedelta(days=1)))
    assert out.task.ending is Ending.REFUNDED_UNDELIVERED
    assert takes(out) == [TakeEnded("A", "t1")]
    held = step(posted(None), Accept("A"), ctx()).task
    released = step(held, Release("P"), ctx(T0 + 24 * HOUR))
    assert released.task.status is Status.FUNDED and takes(released) == [TakeEnded("A", "t1")]


def test_disputes_need_a_delivery_so_a_lapse_leaves_none() -> None:
    """A lapse happens only before any delivery, when a dispute is refused anyway."""
    taken = step(posted(), Accept("A"), ctx()).task
    assert refused(taken, Dispute("P"), T0 + HOUR) == "ILLEGAL_TRANSITION"
    assert refused(taken, Dispute("A"), T0 + 6 * HOUR) == "NOT_A_PARTY"


# --- the count follows the tasks --------------------------------------------------------------

AGENTS = st.sampled_from(["A", "B", "C"])
EVENTS: st.SearchStrategy[Event] = st.one_of(
    st.builds(Accept, AGENTS),
    st.builds(Submit, AGENTS, st.just(GOOD)),
    st.builds(Review, st.just("P"), st.booleans(), stored_result=st.just(GOOD)),
    st.builds(Release, st.just("P")),
    st.builds(Reclaim, st.just("P")),
    st.builds(Cancel, st.just("P")),
    st.just(Lapse()),
)


@settings(max_examples=300, deadline=None)
@given(
    windows=st.lists(st.one_of(st.none(), st.integers(1, 40)), min_size=1, max_size=4),
    steps=st.lists(st.tuples(EVENTS, st.integers(0, 3), st.integers(0, 12 * 3600)), max_size=50),
)
def test_the_held_takes_the_effects_count_equal_a_recount(
    windows: list[int | None], steps: list[tuple[Event, int, int]]
) -> None:
    """Over any events and times, adding up TakeHeld and TakeEnded gives, for every agent, the
    tasks it holds undelivered; nobody ever holds a take of a task it does not hold."""
    now = T0
    tasks = [
        post(f"t{i}", Draft("P", 1, T0 + timedelta(days=2), take_window_hours=w), ctx()).task
        for i, w in enumerate(windows)
    ]
    counted: Counter[str] = Counter()
    for event, pick, dt in steps:
        now += timedelta(seconds=dt)
        idx = pick % len(tasks)
        try:
            out = step(tasks[idx], event, ctx(now))
        except Error:
            continue
        for e in out.effects:
            if isinstance(e, TakeHeld):
                counted[e.agent] += 1
            elif isinstance(e, TakeEnded):
                counted[e.agent] -= 1
        tasks[idx] = out.task
        recount = Counter(a for a in map(holder, tasks) if a is not None)
        assert +counted == recount and all(n >= 0 for n in counted.values())
        for t in tasks:
            if holder(t) is not None:
                assert t.status is Status.ASSIGNED and t.attempts == 0
                assert t.take_ends_at is not None and t.take_ends_at <= t.deadline
            if t.status is not Status.ASSIGNED:
                assert t.take_ends_at is None
