"""The match pool's fair shares: one owner's flood cannot hold every worker or jump the round.

The scheduling tests run the pool over stand-in workers so the order of grants is exact; the
last ones run real workers and a real flood of patterns that run to the limit.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from adjudge.autocheck import _sandbox, jsregex

_pids = itertools.count(1)


class _Stand:
    """A worker that never starts a process: enough for the pool's bookkeeping."""

    def __init__(self) -> None:
        self.process = type("P", (), {"pid": next(_pids)})()

    def alive(self) -> bool:
        return True

    def kill(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sandbox, "_Worker", _Stand)


def _waiting(pool: _sandbox._Pool, count: int) -> None:
    """Wait until ``count`` callers queue in ``pool``."""
    deadline = time.monotonic() + 5
    while sum(len(q) for q in pool.waiting.values()) < count:
        assert time.monotonic() < deadline, "the callers never queued"
        time.sleep(0.001)


class _Caller(threading.Thread):
    """Takes a worker as ``owner``, notes it in ``order``, holds it until told to let go."""

    def __init__(self, pool: _sandbox._Pool, owner: str, name: str, order: list[str]) -> None:
        super().__init__(daemon=True)
        self.pool, self.owner, self.label, self.order = pool, owner, name, order
        self.let_go = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            turn = self.pool.acquire(self.owner)
        except BaseException as exc:
            self.error = exc
            return
        self.order.append(self.label)
        self.let_go.wait(10)
        self.pool.release(turn, turn.worker)


def _until(order: list[str], count: int) -> None:
    deadline = time.monotonic() + 5
    while len(order) < count:
        assert time.monotonic() < deadline, f"only {order} were served"
        time.sleep(0.001)


@pytest.mark.usefixtures("stand_ins")
def test_a_waiting_owner_is_served_before_a_flooder_is_served_again() -> None:
    """One worker, a flooder holding it with two more queued, then another owner: the next
    worker goes to the other owner, then the round comes back to the flooder."""
    pool = _sandbox._Pool(1)
    order: list[str] = []
    first = _Caller(pool, "flood", "flood-1", order)
    first.start()
    _until(order, 1)
    callers = [_Caller(pool, "flood", f"flood-{n}", order) for n in (2, 3)]
    callers.append(_Caller(pool, "ann", "ann-1", order))
    for n, caller in enumerate(callers, 1):
        caller.start()
        _waiting(pool, n)
    for n, caller in enumerate([first, callers[2], callers[0], callers[1]], 2):
        caller.let_go.set()
        _until(order, min(n, 4))
    assert order == ["flood-1", "ann-1", "flood-2", "flood-3"]
    for caller in callers:
        caller.join(5)
    assert (pool.held, pool.waiting, pool.used, pool.running) == ({}, {}, {}, 1)


class _Clock:
    """Time that passes only when a test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.usefixtures("stand_ins")
def test_three_owners_take_turns() -> None:
    """With every owner queued several deep and every turn as long, grants go round the
    owners, not by arrival."""
    clock = _Clock()
    pool = _sandbox._Pool(1, clock=clock)
    order: list[str] = []
    holder = _Caller(pool, "x", "x-0", order)
    holder.start()
    _until(order, 1)
    queued = [_Caller(pool, o, f"{o}-{n}", order) for o in "abc" for n in (1, 2)]
    for n, caller in enumerate(queued, 1):
        caller.start()
        _waiting(pool, n)
    clock.now += 1
    holder.let_go.set()
    by_label = {c.label: c for c in queued}
    for n in range(2, 8):
        _until(order, n)
        clock.now += 1
        by_label[order[-1]].let_go.set()
    assert [label[0] for label in order[1:]] == list("abcabc")


@pytest.mark.usefixtures("stand_ins")
def test_time_not_turns_decides_who_is_next() -> None:
    """An owner whose turns are long waits behind owners whose turns were short, however many
    turns those took: shares are of worker time."""
    clock = _Clock()
    pool = _sandbox._Pool(1, clock=clock)
    order: list[str] = []
    slow = _Caller(pool, "slow", "slow-1", order)
    slow.start()
    _until(order, 1)
    queued = [_Caller(pool, "slow", "slow-2", order)]
    queued += [_Caller(pool, "ann", f"ann-{n}", order) for n in (1, 2, 3)]
    for n, caller in enumerate(queued, 1):
        caller.start()
        _waiting(pool, n)
    clock.now += 100  # the slow owner's turn ran to the limit
    slow.let_go.set()
    by_label = {c.label: c for c in queued}
    for n in range(2, 6):
        _until(order, n)
        clock.now += 1
        by_label[order[-1]].let_go.set()
    assert order == ["slow-1", "ann-1", "ann-2", "ann-3", "slow-2"]


@pytest.mark.usefixtures("stand_ins")
def test_one_owner_holds_at_most_all_workers_but_one() -> None:
    """With two workers an owner holds one; its next caller waits though a worker is free, and
    another owner takes that worker at once."""
    pool = _sandbox._Pool(2)
    assert pool.share == 1
    order: list[str] = []
    first, second = (_Caller(pool, "flood", f"flood-{n}", order) for n in (1, 2))
    first.start()
    _until(order, 1)
    second.start()
    _waiting(pool, 1)
    assert order == ["flood-1"] and pool.running == 1  # a worker is free, and stays free
    other = _Caller(pool, "ann", "ann-1", order)
    other.start()
    _until(order, 2)
    assert order == ["flood-1", "ann-1"]
    first.let_go.set()
    _until(order, 3)
    for caller in (second, other):
        caller.let_go.set()
        caller.join(5)
    assert order[2] == "flood-2"


@pytest.mark.usefixtures("stand_ins")
def test_an_owner_over_its_share_gets_pool_busy_and_leaves_no_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Waiting past QUEUE_SECONDS is PoolBusy; the abandoned turn leaves the queue."""
    monkeypatch.setattr(_sandbox, "QUEUE_SECONDS", 0.05)
    pool = _sandbox._Pool(2)
    turn = pool.acquire("flood")
    with pytest.raises(_sandbox.PoolBusy):
        pool.acquire("flood")
    assert pool.waiting == {} and pool.held == {"flood": 1}
    pool.release(turn, turn.worker)
    assert (pool.held, pool.used, pool.idle) == ({}, {}, [turn.worker])


def test_a_single_worker_pool_lets_its_owner_have_it() -> None:
    """With one worker, the share is that worker (there is nothing to keep back)."""
    assert _sandbox._Pool(1).share == 1
    assert _sandbox._Pool(4).share == 3


def test_the_default_pool_has_at_least_two_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-worker pool could only alternate owners, so the default never goes below two; the
    environment is not read (``ADJUDGE_REGEX_WORKERS`` is a setting the edge passes in)."""
    monkeypatch.setenv("ADJUDGE_REGEX_WORKERS", "1")
    monkeypatch.setattr(_sandbox.os, "cpu_count", lambda: 1)
    assert _sandbox._pool_size() == 2
    monkeypatch.setattr(_sandbox.os, "cpu_count", lambda: 8)
    assert _sandbox._pool_size() == 7


def test_the_edge_sizes_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """``configure_pool(n)`` replaces the pool with one of ``n`` workers; None or the same size
    keeps it; fewer than one is refused."""
    before = _sandbox._Pool(3)
    monkeypatch.setattr(_sandbox, "_pool", before)
    jsregex.configure_pool(None)
    jsregex.configure_pool(3)
    assert _sandbox._pool is before and jsregex.pool_size() == 3
    jsregex.configure_pool(1)
    assert _sandbox._pool is not before and jsregex.pool_size() == 1
    assert _sandbox._pool.share == 1
    with pytest.raises(ValueError):
        jsregex.configure_pool(0)


def test_owned_by_names_the_owner_of_the_block() -> None:
    """The context variable holds the owner inside the block only."""
    assert _sandbox.regex_owner.get() == ""
    with jsregex.owned_by("ann"):
        assert _sandbox.regex_owner.get() == "ann"
        with jsregex.owned_by("bob"):
            assert _sandbox.regex_owner.get() == "bob"
        assert _sandbox.regex_owner.get() == "ann"
    assert _sandbox.regex_owner.get() == ""


# Real workers.

_SLOW = ("(a|a)+$", "a" * 40 + "b")


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[_sandbox._Pool]:
    fresh = _sandbox._Pool(2)
    monkeypatch.setattr(_sandbox, "_pool", fresh)
    yield fresh
    fresh.shutdown()


def test_a_flood_leaves_a_worker_for_everyone_else(pool: _sandbox._Pool) -> None:
    """Three threads of one account run patterns to the limit; another account's checks all
    answer, and the flooder never holds more than its one worker."""
    stop = threading.Event()
    timeouts: list[int] = []

    def flood() -> None:
        with jsregex.owned_by("flood"):
            while not stop.is_set():
                with pytest.raises(jsregex.PatternTimeout):
                    jsregex.test(*_SLOW)
                timeouts.append(1)

    flooders = [threading.Thread(target=flood, daemon=True) for _ in range(3)]
    for thread in flooders:
        thread.start()
    while not timeouts:
        time.sleep(0.01)
    held = []
    with jsregex.owned_by("ann"):
        for n in range(30):
            assert jsregex.test(f"^x+{n}$", f"xx{n}")
            assert not jsregex.test(f"^x+{n}$", f"xx{n + 1}")
            held.append(pool.held.get("flood", 0))
    stop.set()
    for thread in flooders:
        thread.join(10)
    assert max(held) <= 1
    assert len(timeouts) >= 3


def test_the_owner_of_a_timeout_pays_for_its_replacement(pool: _sandbox._Pool) -> None:
    """When a match runs out, its worker is replaced before the call returns: the next caller
    finds a fresh worker idle instead of starting one."""
    jsregex.test("a+$", "a")
    before = _sandbox.worker_pid()
    with pytest.raises(jsregex.PatternTimeout):
        jsregex.test(*_SLOW)
    after = _sandbox.worker_pid()
    assert after is not None and after != before
    assert pool.running == 1 and len(pool.idle) == 1
