"""Where a reveal's screens of the revealed criteria and its auto check run, and a finalize's
check: before the write, on the caller's thread (never on the thread that commits every
account's writes), as the poster's (the agent's) regex work; the write answers the market from
them, and a task changed meanwhile is prepared again rather than checked in the write."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from adjudge.app import Account, App
from adjudge.app import tasks as app_tasks
from adjudge.autocheck import _sandbox
from adjudge.errors import Error
from adjudge.market import CheckOutcome, seal
from adjudge.store import Store
from support.fakes import FakeChecker, FakeClock
from support.noting import note_writes, where
from support.posting import parties, post_auto

ANSWER = {"expected_answer": "42"}
SALT = "a-poster-chosen-salt-of-some-length"
PUBLIC = {"min_length": 5}
REVEAL = {"criteria": ANSWER, "salt": SALT}
JUDGED = {**PUBLIC, **ANSWER}
UNUSABLE = {"expected_answer": "unusable"}


class Noting(FakeChecker):
    """The fake checker, noting each screen and check: the thread, whether a unit of work was
    committing, and whose regex work it was."""

    def __init__(self, app: App, events: list[str]) -> None:
        self.app, self.events = app, events
        self.seen: list[tuple[str, bool, bool, str]] = []

    def _note(self, what: str) -> None:
        self.seen.append((what, *where(self.app)))
        self.events.append(what)

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """As the fake's, and an answer ``unusable`` stands for criteria the screens refuse."""
        self._note("screen")
        if criteria.get("expected_answer") == UNUSABLE["expected_answer"]:
            return [Error("No result could fail it.", code="CRITERIA_UNFALSIFIABLE")]
        return super().admissibility(criteria, mode)

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        self._note("check")
        return super().check(result, criteria, withhold=withhold)


@dataclass
class World:
    app: App
    pat: Account
    ann: Account
    checker: Noting
    events: list[str] = field(default_factory=list)

    def delivered(
        self, result: str, *, finalize: bool = True, sealed: Mapping[str, Any] = ANSWER
    ) -> str:
        """A sealed auto task of pat's (``sealed`` under :data:`SALT`), taken by ann, with
        ``result`` submitted (and its finalize waiting for the reveal); the events noted so
        far forgotten."""
        task = post_auto(self.app, self.pat, PUBLIC, seal=seal.commit(sealed, SALT))
        tid = str(task.value["id"])
        self.app.tasks.accept(self.ann, tid)
        self.app.tasks.submit(self.ann, tid, result)
        if finalize:
            waiting = self.app.tasks.finalize(self.ann, tid).value
            assert waiting["status"] == "awaiting_verification"
        self.events.clear()
        self.checker.seen.clear()
        return tid


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    app = App(store, clock=FakeClock())
    signed = parties(app)
    events: list[str] = []
    checker = Noting(app, events)
    app.tasks.checker = checker
    note_writes(app, events)
    yield World(app, signed["pat"], signed["ann"], checker, events)
    app.close()


def test_the_screens_and_the_check_run_before_the_write_as_the_posters_work(
    world: World,
) -> None:
    """A reveal the agent waits for: one screen and one check, on the caller's thread, before
    the write and outside any unit of work, as pat's regex work; the verdict is theirs."""
    tid = world.delivered("The answer is 42.")
    done = world.app.tasks.reveal(world.pat, tid, REVEAL).value
    assert done["status"] == "completed" and done["ending"] == "paid_on_pass"
    assert world.events == ["screen", "check", "write"]
    assert world.checker.seen == [("screen", True, False, "pat"), ("check", True, False, "pat")]
    [verdict] = done["verdicts"]
    expected = FakeChecker().check("The answer is 42.", JUDGED)
    assert (verdict["passed"], verdict["score"]) == (expected.passed, expected.score)
    assert _sandbox.regex_owner.get() == ""


def test_a_reveal_before_the_finalize_screens_only_and_the_finalize_checks(
    world: World,
) -> None:
    """Revealed while the submission waits for the finalize: screened before the write and not
    checked; the agent's finalize checks it then, as its own work."""
    tid = world.delivered("The answer is 42.", finalize=False)
    opened = world.app.tasks.reveal(world.pat, tid, REVEAL).value
    assert opened["status"] == "submitted" and opened["seal"]["revealed"] is True
    assert world.events == ["screen", "write"]
    assert world.checker.seen == [("screen", True, False, "pat")]
    world.checker.seen.clear()
    done = world.app.tasks.finalize(world.ann, tid).value
    assert done["status"] == "completed"
    assert [(what, owner) for what, _, _, owner in world.checker.seen] == [("check", "ann")]


def test_a_refused_reveal_escalates_in_its_write_from_the_screens_before_it(
    world: World,
) -> None:
    """Revealed criteria the screens refuse are screened once, before the write and as pat's
    work, and the write escalates the task with SEAL_MISMATCH (by its key, the same again,
    screening nothing more); a reveal that does not open the seal asks the checker nothing."""
    tid = world.delivered("The answer is 42.", sealed=UNUSABLE)
    for _ in range(2):
        with pytest.raises(Error) as refused:
            world.app.tasks.reveal(world.pat, tid, {"criteria": UNUSABLE, "salt": SALT}, key="r")
        assert refused.value.code == "SEAL_MISMATCH"
    assert world.events == ["screen", "write", "write"]
    assert world.checker.seen == [("screen", True, False, "pat")]
    view = world.app.tasks.get(world.pat, tid)
    assert view["status"] == "escalated" and "CRITERIA_UNFALSIFIABLE" in view["seal"]["broken"]
    off = world.delivered("The answer is 42.")
    with pytest.raises(Error) as broken:
        world.app.tasks.reveal(
            world.pat, off, {"criteria": {"expected_answer": "43"}, "salt": SALT}
        )
    assert broken.value.code == "SEAL_MISMATCH" and world.events == ["write"]


def test_a_finalize_between_the_read_and_the_write_is_checked_before_the_write_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent finalizes after the reveal was prepared on its task as submitted: the write,
    asked for a check nobody ran, writes nothing, and the reveal is prepared again on the task
    as it now is, the check before the write; nothing is screened or checked in a write."""
    tid = world.delivered("The answer is 42.", finalize=False)
    real_opening = world.app.tasks._opening
    finalized: list[str] = []

    def opening_then_finalize(*args: Any, **kw: Any) -> Any:
        prepared = real_opening(*args, **kw)
        if not finalized:
            finalized.append(world.app.tasks.finalize(world.ann, tid).value["status"])
        return prepared

    monkeypatch.setattr(world.app.tasks, "_opening", opening_then_finalize)
    done = world.app.tasks.reveal(world.pat, tid, REVEAL).value
    assert finalized == ["awaiting_verification"]
    assert done["status"] == "completed" and len(done["verdicts"]) == 1
    assert world.events == ["screen", "write", "write", "screen", "check", "write"]
    assert world.checker.seen == [("screen", True, False, "pat")] * 2 + [
        ("check", True, False, "pat")
    ]


def test_a_task_that_keeps_changing_is_refused_with_nothing_written(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reveal whose write finds its task changed every time it was prepared gives up after a
    few tries with CONCURRENT_UPDATE: nothing revealed, nothing judged."""
    tid = world.delivered("The answer is 42.")

    class Changed(app_tasks._Prepared):
        def check(self, *args: Any, **kw: Any) -> CheckOutcome:
            raise app_tasks._Stale

    monkeypatch.setattr(app_tasks, "_Prepared", Changed)
    with pytest.raises(Error) as refused:
        world.app.tasks.reveal(world.pat, tid, REVEAL)
    assert refused.value.code == "CONCURRENT_UPDATE"
    assert world.events.count("write") == app_tasks.REVEAL_TRIES
    view = world.app.tasks.get(world.pat, tid)
    assert view["status"] == "awaiting_verification" and view["seal"]["revealed"] is False


def test_a_reveal_between_a_finalizes_read_and_its_write_is_checked_before_the_write(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The poster reveals after the agent's finalize read its task as sealed (nothing to check
    yet): the finalize's write, asked for a check nobody ran, writes nothing, and the finalize
    is checked again on the task as it now is, before its write, as ann's work (before, the
    write checked it on the thread that commits every account's writes: a pattern there may
    run 100 ms)."""
    tid = world.delivered("The answer is 42.", finalize=False)
    real_precheck = world.app.tasks._precheck
    revealed: list[str] = []

    def precheck_then_reveal(*args: Any, **kw: Any) -> Any:
        prepared = real_precheck(*args, **kw)
        if not revealed:
            revealed.append(world.app.tasks.reveal(world.pat, tid, REVEAL).value["status"])
        return prepared

    monkeypatch.setattr(world.app.tasks, "_precheck", precheck_then_reveal)
    done = world.app.tasks.finalize(world.ann, tid).value
    assert revealed == ["submitted"]
    assert done["status"] == "completed" and len(done["verdicts"]) == 1
    assert world.events == ["screen", "write", "write", "check", "write"]
    assert world.checker.seen == [("screen", True, False, "pat"), ("check", True, False, "ann")]
