"""Judging whose work has no bound, in worker processes killed at a time limit.

A provider's contract and policy are programs the gateway runs on its answers; where they have
no bound on their work (:mod:`adjudge.calls.bounds`: a backtracking pattern, a ``$ref``, a
copying JMESPath expression, or simply an answer too large for the bound), a crafted answer
could hold the service's event loop, or its memory, for as long as it likes. Such an answer is
judged here instead: in a pool of worker processes (pebble, which kills a worker whose task
passes its time limit and starts another), each limited in address space, so the worst an
answer can do is spend its own time.

An answer that is not judged within :attr:`Isolation.seconds`, or whose worker runs out of
memory or dies, raises :class:`JudgingFailed`: the gateway ends that call as its own failure
(voided and refunded, no strike), never as the provider's.

Fair shares: a job has an owner (the provider whose answer it is, the caller whose arguments,
the reporter whose report), and one owner's jobs hold at most all workers but one at a time
(all of them when the pool has one), counted together whether they wait on the event loop or
on a thread. No more jobs than workers are handed to the pool, so none waits inside it where
shares do not count: another owner's job finds a worker within one time limit of the jobs
running, or gives up after ``queue_seconds``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import multiprocessing
import resource
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from adjudge.calls import Contract, Policy, judging
from adjudge.calls.contract import ShapeCheck
from adjudge.calls.judging import JudgingJob
from adjudge.calls.verify import CallResult

__all__ = ["Isolation", "JudgingFailed"]

log = logging.getLogger(__name__)
#: How often a job waiting on the event loop looks for a free worker again.
_POLL_SECONDS = 0.005
_J = TypeVar("_J")
_R = TypeVar("_R")


class JudgingFailed(Exception):
    """The answer could not be judged apart (time limit, memory, a worker that died, a full
    pool); ``message`` says which, for the call's record."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _worker_started(most_bytes: int) -> None:
    """Each worker, as it starts: its address space limited, and a stop that stops it.

    pebble stops a worker past its time with SIGTERM and a Python handler of its own, then
    SIGKILL three seconds later; a pattern match holds the interpreter the whole time, so the
    handler would never run and every stop would take those three seconds. The worker holds
    nothing to clean up, so SIGTERM ends it at once."""
    resource.setrlimit(resource.RLIMIT_AS, (most_bytes, most_bytes))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def _failures(seconds: float) -> Iterator[None]:
    """A worker's failure said as :class:`JudgingFailed`."""
    try:
        yield
    except concurrent.futures.TimeoutError:
        raise JudgingFailed(
            f"judging the answer took longer than {seconds:g} s and was stopped"
        ) from None
    except (ProcessExpired, MemoryError) as exc:
        raise JudgingFailed(
            f"judging the answer ran out of its memory or its process ended ({exc})"
        ) from None
    except concurrent.futures.process.BrokenProcessPool as exc:
        raise JudgingFailed(f"the judging workers broke ({exc})") from None


def _stopped(pool: ProcessPool) -> None:
    pool.stop()  # type: ignore[no-untyped-call]  # untyped in pebble
    pool.join()


class Isolation:
    """The pool of judging workers, started on first use (``close`` stops it)."""

    def __init__(
        self,
        *,
        workers: int = 2,
        seconds: float = 2.0,
        memory_bytes: int = 1 << 31,
        queue_seconds: float = 10.0,
    ) -> None:
        if workers < 1 or not seconds > 0 or not queue_seconds > 0 or memory_bytes < 1 << 26:
            raise ValueError("workers, seconds, queue_seconds and memory_bytes must be positive")
        self.workers = workers
        self.seconds = seconds
        self.memory_bytes = memory_bytes
        self.queue_seconds = queue_seconds
        self._lock = threading.Lock()
        self._pool: ProcessPool | None = None
        #: The jobs handed to the pool, in all and by owner, on both paths (loop and threads).
        self._turns = threading.Condition()
        self._total = 0
        self._running: dict[str, int] = {}

    def _started(self) -> ProcessPool:
        with self._lock:
            if self._pool is None:
                # forkserver: a worker is forked from a clean process, never from the service's
                # own (its threads hold locks a fork would copy).
                self._pool = ProcessPool(
                    max_workers=self.workers,
                    initializer=_worker_started,
                    initargs=(self.memory_bytes,),
                    context=multiprocessing.get_context("forkserver"),
                )
            return self._pool

    async def run(self, owner: str, work: Callable[[_J], _R], job: _J) -> _R:
        """``work(job)`` in a worker, within ``seconds`` once it runs; ``owner`` (whose answer
        or arguments it is) waits for its share of the workers at most ``queue_seconds``.
        ``work`` is a pure function of the core, its job and answer plain data."""
        deadline = time.monotonic() + self.queue_seconds
        while not self._admitted(owner):  # rare: every worker or the owner's share is busy
            if time.monotonic() >= deadline:
                raise self._busy()
            await asyncio.sleep(_POLL_SECONDS)
        try:
            future = self._scheduled(work, job)
            with _failures(self.seconds):
                done: _R = await asyncio.wrap_future(future)
                return done
        finally:
            self._leave(owner)

    def run_blocking(self, owner: str, work: Callable[[_J], _R], job: _J) -> _R:
        """:meth:`run` for a caller on a thread of its own (it waits there)."""
        with self._turns:
            if not self._turns.wait_for(lambda: self._admit(owner), self.queue_seconds):
                raise self._busy()
        try:
            future = self._scheduled(work, job)
            with _failures(self.seconds):
                found: _R = future.result()
                return found
        finally:
            self._leave(owner)

    async def judge(
        self, owner: str, job: JudgingJob, policy: Policy | None
    ) -> tuple[CallResult, ShapeCheck | None]:
        """``job`` judged in a worker, its result given back ``policy`` (the worker's leaves
        it out: the sender holds the same one)."""
        result, shape = await self.run(owner, judging.judge, job)
        return replace(result, policy=policy), shape

    def judge_blocking(
        self,
        owner: str,
        job: JudgingJob,
        contract: Contract,
        policy: Policy | None,
        *,
        here: bool,
    ) -> tuple[CallResult, ShapeCheck | None]:
        """:meth:`judge` for a caller on a thread of its own, or ``job`` judged ``here`` (its
        work bounded, ``calls.verify.judged_here``) under ``contract`` and ``policy``."""
        if here:
            return judging.judged_with(contract, policy, job)
        result, shape = self.run_blocking(owner, judging.judge, job)
        return replace(result, policy=policy), shape

    def _admitted(self, owner: str) -> bool:
        with self._turns:
            return self._admit(owner)

    def _admit(self, owner: str) -> bool:
        """Take a worker for ``owner`` if one is free and its share allows (lock held).

        Never more jobs than workers are handed over, so a job never waits behind others
        inside the pool, where no owner's share would count."""
        held = self._running.get(owner, 0)
        if self._total >= self.workers or held >= self._share_size():
            return False
        self._running[owner] = held + 1
        self._total += 1
        return True

    def _leave(self, owner: str) -> None:
        with self._turns:
            self._total -= 1
            self._running[owner] -= 1
            if not self._running[owner]:
                del self._running[owner]  # shares never pile up
            self._turns.notify_all()

    def _share_size(self) -> int:
        return max(1, self.workers - 1)

    def _busy(self) -> JudgingFailed:
        return JudgingFailed(
            f"every judging worker this party may use stayed busy for {self.queue_seconds:g} s"
        )

    def _scheduled(self, work: Callable[[_J], _R], job: _J) -> Any:
        """The job's future; a pool that broke (its manager failed, or every worker died at
        start) is replaced by the next job's, so one failure does not stop judging for good."""
        pool = self._started()
        try:
            future = pool.schedule(work, args=(job,), timeout=self.seconds)
        except (RuntimeError, concurrent.futures.process.BrokenProcessPool) as exc:
            self._drop(pool)
            raise JudgingFailed(f"the judging workers could not start ({exc})") from None
        future.add_done_callback(lambda done: self._broke(pool, done))
        return future

    def _broke(self, pool: ProcessPool, done: Any) -> None:
        if not done.cancelled() and isinstance(
            done.exception(), concurrent.futures.process.BrokenProcessPool
        ):
            self._drop(pool)

    def _drop(self, pool: ProcessPool) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        log.warning("the judging workers broke; the next answer judged apart starts others")
        threading.Thread(target=_stopped, args=(pool,), daemon=True).start()

    def close(self) -> None:
        """Stop the workers (a task still running is killed)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            _stopped(pool)
