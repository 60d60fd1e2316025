"""Where posting's screens of the criteria run: once, before the write, on the caller's thread
(never on the thread that commits every account's writes), and as the poster's regex work; the
write refuses with their answer in the market's order of refusals."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from adjudge.app import Account, App
from adjudge.errors import Error
from adjudge.market.seal import admissible_form
from adjudge.store import Store
from support.fakes import FakeChecker, FakeClock
from support.noting import note_writes, where
from support.posting import parties, post_auto


class Screens(FakeChecker):
    """The fake checker, noting each screen: the thread, whether a unit of work was open, and
    whose regex work it was."""

    def __init__(self, app: App, events: list[str]) -> None:
        self.app, self.events = app, events
        self.seen: list[tuple[bool, bool, str]] = []
        self.criteria: list[Mapping[str, Any]] = []

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        self.seen.append(where(self.app))
        self.events.append("screen")
        self.criteria.append(criteria)
        return super().admissibility(criteria, mode)


@pytest.fixture
def world(store: Store) -> Iterator[tuple[App, Account, Screens, list[str]]]:
    app = App(store, clock=FakeClock())
    pat = parties(app)["pat"]
    events: list[str] = []
    screens = Screens(app, events)
    app.tasks.checker = screens
    note_writes(app, events)
    yield app, pat, screens, events
    app.close()


def test_the_screens_run_once_before_the_write_as_the_posters_work(
    world: tuple[App, Account, Screens, list[str]],
) -> None:
    """One screen, on the caller's thread, before the write and outside any unit of work; the
    market's own question inside the write is answered from it."""
    app, pat, screens, events = world
    posted = post_auto(app, pat, {"min_length": 5})
    assert posted.value["status"] == "funded"
    assert events == ["screen", "write"]
    assert screens.seen == [(True, False, pat.id)]


def test_a_screens_refusal_is_raised_by_the_write_in_the_markets_order(
    world: tuple[App, Account, Screens, list[str]],
) -> None:
    """A refused pattern is refused with the screen's code, screened once and stores nothing;
    a refusal the market makes before asking the checker still comes first."""
    app, pat, _, events = world
    with pytest.raises(Error) as refused:
        post_auto(app, pat, {"regex_pattern": "(a+)+$"})
    assert refused.value.code == "REGEX_PATTERN_UNUSABLE"
    assert events.count("screen") == 1 and events.index("screen") < events.index("write")
    with pytest.raises(Error) as first:
        post_auto(app, pat, {"regex_pattern": "(a+)+$"}, take_window_hours=48)
    assert first.value.code == "INVALID_TAKE_WINDOW"
    assert app.tasks.find(pat, mine=True)["tasks"] == []


def test_a_sealed_post_is_screened_with_its_stand_in_answer(
    world: tuple[App, Account, Screens, list[str]],
) -> None:
    """A sealed task's public criteria are screened as the market reads them (with the
    sealed answer's stand-in), so the write does not screen them again."""
    app, pat, screens, events = world
    seal = "sha256:" + "0" * 64
    post_auto(app, pat, {"min_length": 5}, seal=seal)
    assert events == ["screen", "write"]
    assert screens.criteria == [admissible_form({"min_length": 5})]
