"""The console's filters over the API: tasks by poster, agent and title text; a provider's
calls by start date (a provider reads only its own calls)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adjudge.store import Store
from support.audit import audit
from support.harness import make_harness
from support.weather import PROVIDER, World, weather_world


def test_tasks_filter_by_poster_agent_and_title_text(sqlite_store: Store) -> None:
    """``poster``, ``agent`` and ``text`` narrow the listing; the text matches titles in any
    case, treats % and _ as themselves, and never matches a brief."""
    h = make_harness(sqlite_store)
    mine = h.post("manual", title="Summarise the 100% Report", brief="secret brief words")
    other = h.post("manual", title="Translate notes")
    h.ok("ann", "POST", f"/tasks/{other}/accept")

    def ids(query: str) -> list[str]:
        return [t["id"] for t in h.ok("bob", "GET", f"/tasks?{query}")["tasks"]]

    assert ids("text=report") == [mine]
    assert ids("text=100%25") == [mine]
    assert ids("text=1_0") == []
    assert ids("text=secret") == []
    assert ids("agent=ann") == [other]
    assert sorted(ids("poster=pat")) == sorted([other, mine])
    assert ids("poster=ann") == []


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    """The weather provider's world, its books audited after the test."""
    with weather_world(store) as w:
        yield w
    audit(store)


def test_calls_filter_by_day_and_a_provider_reads_only_its_own(world: World) -> None:
    """``since``/``until`` keep calls started in the range (a bare ``until`` date is through
    that day); the provider lists its calls, a stranger none of them."""
    h = world.h
    assert world.call({"city": "berlin", "days": 3}).status_code == 200
    h.later(days=2)
    assert world.call({"city": "paris", "days": 3}).status_code == 200
    every = h.ok("root", "GET", "/gateway/calls")["calls"]
    assert len(every) == 2
    first, second = every[1]["started_at"][:10], every[0]["started_at"][:10]
    assert [c["id"] for c in h.ok("root", "GET", f"/gateway/calls?since={second}")["calls"]] == [
        every[0]["id"]
    ]
    assert [c["id"] for c in h.ok("root", "GET", f"/gateway/calls?until={first}")["calls"]] == [
        every[1]["id"]
    ]
    assert h.refused("root", "GET", "/gateway/calls?since=soon") == (422, "INVALID_REQUEST")
    # Through the calendar's last day is no bound at all; an offset that moves a time past
    # the calendar's first day is refused, not a server error.
    assert len(h.ok("root", "GET", "/gateway/calls?until=9999-12-31")["calls"]) == 2
    assert h.refused("root", "GET", "/gateway/calls?until=0001-01-01T00:00%2B01:00") == (
        422,
        "INVALID_REQUEST",
    )
    assert len(h.ok(PROVIDER, "GET", "/gateway/calls")["calls"]) == 2
    assert h.ok("bob", "GET", "/gateway/calls")["calls"] == []
