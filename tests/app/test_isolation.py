"""The judging workers: a job runs in another process and answers; one past its time, or its
memory, is stopped and said as JudgingFailed; one owner's jobs leave a worker to the others; a
pool that broke is replaced by the next job's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from adjudge.app.isolation import Isolation, JudgingFailed


@pytest.fixture
def isolation() -> Iterator[Isolation]:
    made = Isolation(workers=2, seconds=0.5, queue_seconds=0.3)
    try:
        yield made
    finally:
        made.close()


def test_a_job_runs_apart_and_answers(isolation: Isolation) -> None:
    assert isolation.run_blocking("a", abs, -3) == 3


def test_a_job_past_its_time_is_stopped(isolation: Isolation) -> None:
    with pytest.raises(JudgingFailed, match=r"longer than 0\.5 s"):
        isolation.run_blocking("a", time.sleep, 30)
    assert isolation.run_blocking("a", abs, -4) == 4  # its worker was replaced


def test_a_job_past_its_memory_is_stopped(isolation: Isolation) -> None:
    isolation.memory_bytes = 256 << 20
    with pytest.raises(JudgingFailed, match="memory"):
        isolation.run_blocking("a", bytearray, 1 << 30)


def test_one_owner_leaves_a_worker_to_the_others(isolation: Isolation) -> None:
    """With two workers, an owner holds one: its second job waits (and gives up after its
    queue time) while another owner's runs at once."""
    isolation.seconds = 5.0
    started = threading.Event()

    def hold() -> None:
        started.set()
        isolation.run_blocking("flooder", time.sleep, 1.5)

    holder = threading.Thread(target=hold)
    holder.start()
    started.wait()
    time.sleep(0.2)  # the flooder's first job is running
    try:
        with pytest.raises(JudgingFailed, match="stayed busy"):
            isolation.run_blocking("flooder", abs, -1)
        assert isolation.run_blocking("other", abs, -2) == 2
    finally:
        holder.join()


def test_a_pool_that_broke_is_replaced(isolation: Isolation) -> None:
    """Workers that cannot start (here: a limit their start refuses) break the pool;
    the job is said to have failed, and the next job starts a pool of its own."""
    isolation.memory_bytes = "no size"  # type: ignore[assignment]  # every worker's start fails
    with pytest.raises(JudgingFailed):
        isolation.run_blocking("a", abs, -5)
    isolation.memory_bytes = 1 << 31
    deadline = time.monotonic() + 30
    while True:  # the broken pool is dropped once its failure is seen
        try:
            assert isolation.run_blocking("a", abs, -6) == 6
            break
        except JudgingFailed:
            assert time.monotonic() < deadline
            time.sleep(0.2)


def test_an_owner_on_the_loop_and_on_threads_holds_one_share(isolation: Isolation) -> None:
    """The same owner's jobs count together on both paths: with two workers, its job on a
    thread and its job on the event loop cannot hold both, so another owner's runs at once."""
    import asyncio  # noqa: PLC0415

    isolation.seconds = 5.0
    isolation.queue_seconds = 5.0
    isolation.run_blocking("warm", abs, -1)
    holder = threading.Thread(target=isolation.run_blocking, args=("p", time.sleep, 1.5))
    holder.start()
    time.sleep(0.2)

    async def victim() -> float:
        held = asyncio.ensure_future(isolation.run("p", time.sleep, 1.5))  # waits its turn
        await asyncio.sleep(0.1)
        started = time.perf_counter()
        assert await isolation.run("victim", abs, -2) == 2
        waited = time.perf_counter() - started
        await held
        return waited

    try:
        assert asyncio.run(victim()) < 1.0  # the owner's jobs hold 1.5 s
    finally:
        holder.join()
