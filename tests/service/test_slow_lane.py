"""The slow lane: checks that need the regex pool run apart, and one account's flood of them
queues behind itself instead of in front of every other account."""

from __future__ import annotations

import asyncio
import threading
from functools import partial

import anyio
import pytest

from adjudge.errors import Error
from adjudge.service import deps


def test_one_account_cannot_take_every_slow_turn() -> None:
    """Eight slow checks of one account: only its share runs, the rest wait without a thread,
    another account's check goes straight through, and nothing is left behind."""
    lock = threading.Lock()
    running = [0, 0]  # now, most at once
    gate = threading.Event()

    def slow() -> None:
        with lock:
            running[0] += 1
            running[1] = max(running)
        gate.wait(10)
        with lock:
            running[0] -= 1

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(partial(deps.checked, True, slow, "flood", wait=10))
            with anyio.fail_after(5):
                while running[0] < deps.owner_slow_checks():
                    await anyio.sleep(0.005)
            await anyio.sleep(0.05)  # room for more to start, if the lane let them
            assert running[0] == deps.owner_slow_checks() < 8
            with anyio.fail_after(5):
                assert await deps.checked(True, lambda: "answered", "ann", wait=10) == "answered"
            gate.set()
        assert running == [0, deps.owner_slow_checks()]
        assert deps._OWNERS[asyncio.get_running_loop()] == {}

    anyio.run(main)


def test_an_account_waiting_too_long_is_told_the_checker_is_busy() -> None:
    """Past the lane's wait the check is refused as CHECKER_UNAVAILABLE, judging nothing."""
    gate = threading.Event()

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(deps.owner_slow_checks()):
                group.start_soon(
                    partial(deps.checked, True, lambda: gate.wait(10), "flood", wait=0.05)
                )
            await anyio.sleep(0.02)
            with pytest.raises(Error) as info:
                await deps.checked(True, lambda: None, "flood", wait=0.05)
            assert info.value.code == "CHECKER_UNAVAILABLE"
            gate.set()
        assert deps._OWNERS[asyncio.get_running_loop()] == {}

    anyio.run(main)
