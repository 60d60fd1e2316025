"""A task listing, page after page, is exactly the tasks its filters keep, newest first (ties by
id): whatever the tasks' parties, panels and times, for every filter the listing takes, a
party's tasks (``mine``) merged from the newest page of each of its roles, and a filter its
index range does not lead with checked on a bounded walk of it."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.market import Mode, Status, Task
from adjudge.market.tasks import Seat
from adjudge.store import Store, Transaction, pages, records
from adjudge.store.pages import Page
from support.paging import every_page

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
PEOPLE = ("ann", "bob", "cy")
_runs = itertools.count()

#: A task: its poster, agent, named verifier, panel, status, and minutes after T0 (ties kept).
_task = st.tuples(
    st.sampled_from(PEOPLE[:2]),
    st.sampled_from((None, *PEOPLE)),
    st.sampled_from((None, *PEOPLE)),
    st.sets(st.sampled_from(PEOPLE), max_size=2),
    st.sampled_from((Status.FUNDED, Status.ASSIGNED, Status.COMPLETED)),
    st.integers(0, 6),
)
#: The filters of one listing: (status, poster, agent, the party whose tasks, text, mode).
_filters = st.tuples(
    st.sampled_from((None, Status.FUNDED.value, Status.COMPLETED.value)),
    st.sampled_from((None, *PEOPLE)),
    st.sampled_from((None, *PEOPLE)),
    st.sampled_from((None, *PEOPLE)),
    st.sampled_from((None, "odd")),
    st.sampled_from((None, Mode.AUTO.value, Mode.MANUAL.value)),
)


def _mode(n: int) -> Mode:
    """A task's mode by its place: every third auto, the rest manual."""
    return Mode.AUTO if n % 3 == 0 else Mode.MANUAL


def _made(store: Store, plans: list[tuple]) -> list[Task]:  # type: ignore[type-arg]
    run = next(_runs)
    made = []
    with store.write() as tx:
        tx.conn.execute(text("DELETE FROM task_seats"))
        tx.conn.execute(text("DELETE FROM tasks"))
        for name in PEOPLE:
            if records.account(tx, name) is None:
                records.create_account(tx, name, ["poster"], f"k-{name}", opt_in=True, at=T0)
        for n, (poster, agent, named, panel, status, minutes) in enumerate(plans):
            at = T0 + timedelta(minutes=minutes)
            task = Task(
                id=f"task_{run}_{n:03d}",
                poster=poster,
                mode=_mode(n),
                reward=1,
                posted_at=at,
                deadline=at + timedelta(days=1),
                criteria={},
            )
            panel_seats = tuple(Seat(v, None) for v in sorted(panel))
            task = replace(task, agent=agent, verifier=named, panel=panel_seats, status=status)
            title = f"{'odd' if n % 2 else 'even'} task"
            records.insert_task(tx, task, title=title, brief="")
            made.append(task)
    return made


def _listed(store: Store, filters: tuple, limit: int) -> list[str]:  # type: ignore[type-arg]
    status, poster, agent, party, words, mode = filters

    def read(tx: Transaction, cursor: str | None) -> Page:
        return records.tasks(
            tx,
            status=status,
            poster=poster,
            agent=agent,
            involving=party,
            text=words,
            mode=mode,
            limit=limit,
            cursor=cursor,
        )

    return [t.task.id for t in every_page(store, read, limit)]


def _wanted(made: list[Task], filters: tuple) -> list[str]:  # type: ignore[type-arg]
    status, poster, agent, party, words, mode = filters
    kept = [
        t
        for n, t in enumerate(made)
        if (status is None or t.status.value == status)
        and (poster is None or t.poster == poster)
        and (agent is None or t.agent == agent)
        and (words is None or n % 2 == 1)
        and (mode is None or _mode(n).value == mode)
        and (
            party is None
            or party in (t.poster, t.agent, t.verifier)
            or party in {s.verifier for s in t.panel}
        )
    ]
    ordered = sorted(kept, key=lambda t: t.id)
    ordered.sort(key=lambda t: t.posted_at, reverse=True)
    return [t.id for t in ordered]


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    plans=st.lists(_task, min_size=3, max_size=14),
    filters=st.lists(_filters, min_size=1, max_size=4),
    limit=st.integers(1, 4),
    walked=st.sampled_from((1, 2, 3, pages.SIFTED_ROWS)),
)
def test_every_listing_pages_exactly_the_tasks_its_filters_keep(
    sqlite_store: Store,
    plans: list[tuple],  # type: ignore[type-arg]
    filters: list[tuple],  # type: ignore[type-arg]
    limit: int,
    walked: int,
) -> None:
    """For any tasks and any filters, the pages of a listing together are the tasks the filters
    keep, newest first and ties by id, each once (a party's: as poster, agent, named verifier
    or panel seat, a task where it is several of them once), also with a page's walk of each
    index range cut to one to three tasks (2,000 in service: a listing filtered by what its
    range does not lead with, a mode, words, a status within a poster's or a party's tasks,
    then comes in short pages, some empty, each with the cursor to read on)."""
    made = _made(sqlite_store, plans)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pages, "SIFTED_ROWS", walked)
        for chosen in filters:
            assert _listed(sqlite_store, chosen, limit) == _wanted(made, chosen), chosen


def test_a_page_of_a_rare_mode_walks_a_bounded_range(sqlite_store: Store) -> None:
    """A page of auto tasks among 40 manual ones, the walk cut to 10 tasks: each page walks at
    most 10 (empty pages, each a cursor on) until the auto ones, which are all found."""
    plans = [("ann", None, None, set(), Status.FUNDED, 5)] * 42
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pages, "SIFTED_ROWS", 10)
        made = _made(sqlite_store, plans)
        with sqlite_store.write() as tx:  # only the two oldest auto, by id
            tx.conn.execute(text("UPDATE tasks SET mode = 'manual'"))
            for task in made[:2]:
                tx.conn.execute(
                    text("UPDATE tasks SET mode = 'auto' WHERE id = :id"), {"id": task.id}
                )
        for filters in [(None, None, None, None, None, "auto"), (None, "ann", *[None] * 3, "auto")]:
            sizes: list[int] = []
            cursor = None
            while True:
                with sqlite_store.read() as tx:
                    page = records.tasks(tx, poster=filters[1], mode="auto", limit=5, cursor=cursor)
                sizes.append(len(page.items))
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert sum(sizes) == 2 and len(sizes) == 5, (filters, sizes)  # 40 manual, 10 a walk


def test_a_partys_tasks_page_by_page_on_each_database(store: Store) -> None:
    """On each database: ann's tasks as poster, agent, named verifier and panel seat, some at
    one moment, a page of two at a time; and filtered by status and by text with them."""
    plans = [
        ("ann", None, None, set(), Status.FUNDED, 1),
        ("bob", "ann", None, set(), Status.ASSIGNED, 2),
        ("bob", None, "ann", set(), Status.COMPLETED, 2),
        ("cy", None, None, {"ann", "bob"}, Status.FUNDED, 2),
        ("bob", None, None, set(), Status.FUNDED, 3),
        ("ann", "bob", "ann", {"ann"}, Status.COMPLETED, 0),
        ("ann", None, None, set(), Status.FUNDED, 4),  # more of one role than a page holds
        ("ann", None, None, set(), Status.ASSIGNED, 5),
    ]
    made = _made(store, plans)
    for chosen in [
        (None, None, None, "ann", None, None),
        (Status.FUNDED.value, None, None, "ann", None, None),
        (None, None, None, "ann", "odd", None),
        (None, "bob", None, None, None, None),
        (None, None, None, None, None, Mode.AUTO.value),
        (Status.FUNDED.value, "ann", None, None, None, Mode.AUTO.value),
    ]:
        wanted = _wanted(made, chosen)
        assert wanted and _listed(store, chosen, 2) == wanted, chosen
