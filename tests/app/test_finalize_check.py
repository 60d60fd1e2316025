"""Where a finalize's auto check runs: inside its one write when the check is known to be quick,
before the write (holding no lock) when the result is long, and nowhere on the service's first
try when the criteria need the regex worker pool — and the verdict is the same either way,
awaited on the event loop (the service's first try) or run on a thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from adjudge.app import Account, App
from adjudge.app.tasks import QUICK_CHECK_CHARS, SlowCheck
from adjudge.errors import NotFound
from adjudge.market.money import escrow_account, wallet_account
from adjudge.store import Store, Transaction
from support.fakes import FakeClock
from support.posting import REWARD, parties, post_auto

CRITERIA = {"min_length": 40, "contains_keywords": ["escrow"], "pass_threshold": 60}
GOOD = "An escrow holds the reward until the work is judged; a pass pays the agent."
BAD = "Nothing about the subject at all, only filler words to pass the length."


@dataclass
class World:
    app: App
    root: Account
    pat: Account
    ann: Account
    reads: list[str]

    def submitted(self, result: str, criteria: dict[str, Any] | None = None) -> str:
        """An auto task posted by pat, taken by ann, with ``result`` submitted."""
        task = post_auto(
            self.app,
            self.pat,
            criteria or CRITERIA,
            title="A summary",
            brief="Explain escrow.",
        )
        tid = str(task.value["id"])
        self.app.tasks.accept(self.ann, tid)
        self.app.tasks.submit(self.ann, tid, result)
        return tid

    def balance(self, account: str) -> int:
        return int(self.app.receipts.ledger(self.root)["balances"].get(account, "0"))


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    app = App(store, clock=FakeClock())
    signed = parties(app)
    reads: list[str] = []
    real_read = app.tasks.unit.read

    def counted(fn: Callable[[Transaction], Any], *, one_moment: bool = False) -> Any:
        reads.append(getattr(fn, "__qualname__", "?"))
        return real_read(fn, one_moment=one_moment)

    app.tasks.unit.read = counted  # type: ignore[method-assign]
    yield World(
        app,
        signed["root"],
        signed["pat"],
        signed["ann"],
        reads,
    )
    app.close()


def _first_try(world: World, tid: str) -> Any:
    """A finalize as the service makes it: the quick try on the loop, else the fast one."""
    quick = asyncio.run(world.app.tasks.finalize_here(world.ann, tid))
    return (quick or world.app.tasks.finalize(world.ann, tid, fast_only=True)).value


def test_a_quick_check_runs_in_the_write_with_no_read_before_it(world: World) -> None:
    """The service's first try of a short result under plain criteria: one transaction."""
    tid = world.submitted(GOOD)
    world.reads.clear()
    done = _first_try(world, tid)
    assert world.reads == []
    assert done["status"] == "completed"
    assert len(done["verdicts"]) == 1 and len(done["receipts"]) == 1
    assert world.balance(escrow_account(tid)) == 0
    assert world.balance(wallet_account("ann")) > 0


def test_a_long_result_is_checked_before_the_write(world: World) -> None:
    """A result past the quick length is checked holding no lock: the read comes first."""
    long = GOOD + " more" * ((QUICK_CHECK_CHARS - len(GOOD)) // 5 + 1)
    assert len(long) > QUICK_CHECK_CHARS
    tid = world.submitted(long)
    world.reads.clear()
    done = _first_try(world, tid)
    assert [r.rsplit(".", 1)[-1] for r in world.reads] == ["read"]  # the pre-check's read
    assert done["status"] == "completed" and len(done["receipts"]) == 1


def test_criteria_that_need_the_pool_write_nothing_on_the_first_try(world: World) -> None:
    """The quick try of criteria whose regex needs the worker pool answers None and the fast
    one ends in SlowCheck, with the task, its verdicts, receipts and money as they were; the
    slow lane's finalize judges it."""
    tid = world.submitted(GOOD, {**CRITERIA, "regex_pattern": "escrow.*agent"})
    before = world.app.tasks.get(world.ann, tid)
    assert asyncio.run(world.app.tasks.finalize_here(world.ann, tid)) is None
    with pytest.raises(SlowCheck):
        world.app.tasks.finalize(world.ann, tid, fast_only=True)
    after = world.app.tasks.get(world.ann, tid)
    assert after == before and after["status"] == "submitted"
    assert world.balance(escrow_account(tid)) == REWARD
    done = world.app.tasks.finalize(world.ann, tid).value
    assert done["status"] == "completed" and len(done["receipts"]) == 1


@pytest.mark.parametrize("result", [GOOD, BAD, GOOD + " " + "x" * QUICK_CHECK_CHARS])
def test_either_way_the_verdict_is_the_same(world: World, result: str) -> None:
    """The check in the write and the check before it judge one result alike."""
    answers = []
    for first_try in (True, False):
        tid = world.submitted(result)
        done = (
            _first_try(world, tid) if first_try else world.app.tasks.finalize(world.ann, tid).value
        )
        [verdict] = done["verdicts"]
        answers.append((done["status"], verdict["passed"], verdict["score"], verdict["reasons"]))
    assert answers[0] == answers[1]


def test_awaited_on_the_loop_a_quick_finalize_answers_and_replays_once(world: World) -> None:
    """The service's first try, awaited on its event loop: judged and paid once, replayed by
    its key; a check not known to be quick writes nothing there and answers None; a refusal
    with a key not stored is a refusal."""
    tid = world.submitted(GOOD)

    async def twice() -> tuple[Any, Any, int]:
        first = await world.app.tasks.finalize_here(world.ann, tid, key="k-1")
        paid = world.balance(wallet_account("ann"))
        again = await world.app.tasks.finalize_here(world.ann, tid, key="k-1")
        return first, again, paid

    first, again, paid = asyncio.run(twice())
    assert first is not None and again is not None
    assert (first.replayed, again.replayed) == (False, True)
    assert again.value == first.value and first.value["verification_result"]["passed"]
    assert world.balance(wallet_account("ann")) == paid > 0
    assert len(first.value["receipts"]) == 1

    long = world.submitted("escrow " * (QUICK_CHECK_CHARS // 7 + 1))
    before = world.app.tasks.get(world.ann, long)
    assert asyncio.run(world.app.tasks.finalize_here(world.ann, long, key="k-2")) is None
    assert world.app.tasks.get(world.ann, long) == before
    with pytest.raises(NotFound):
        asyncio.run(world.app.tasks.finalize_here(world.ann, "task_nowhere", key="k-3"))
