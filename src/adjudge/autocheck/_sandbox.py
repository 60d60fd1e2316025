"""A bounded match: regress runs in child processes that are killed when the time limit passes.

No Python regex engine can be interrupted from inside, and regress holds the GIL while it
matches, so the only way to really stop a catastrophic match is to run it in another process.
A bounded pool of workers (``_regexworker``) is started on demand and reused; a request goes
over one worker's stdin and the reply comes back on its stdout. When a reply does not come in
time, that worker alone is killed and replaced; the others go on serving.

The pool holds :data:`POOL_SIZE` workers: one fewer than the machine's CPUs (at least one), so
catastrophic patterns can busy at most that many cores and the service keeps one for everyone
else; ``ADJUDGE_REGEX_WORKERS`` overrides it. A caller that finds every worker busy waits for
one, at most :data:`QUEUE_SECONDS` (not counted in its match's limit): past that the pool is
saturated, which is the service's trouble, not the pattern's, so it is :class:`PoolBusy` (the
check broke), never a timeout verdict.

This module is the one place the auto check touches the operating system (child processes and
a monotonic clock): the spec's "100 ms limit" is a wall-clock rule and cannot be pure.

Thread safety: a worker serves one caller at a time, so concurrent callers never interleave on
a worker's pipes, and no lock is held while a match runs. Fork safety: a forked child forgets its
parent's workers (without killing them) and starts its own. POSIX only (``poll`` on pipes,
SIGALRM in the worker).
"""

from __future__ import annotations

import atexit
import math
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from adjudge.autocheck import _regexworker as protocol

_WORKER_SCRIPT = Path(__file__).with_name("_regexworker.py")
#: How long a fresh worker may take to import regress (not counted in any match's limit).
_START_SECONDS = 30.0
#: How long a caller waits for a free worker before the pool counts as saturated.
QUEUE_SECONDS = 5.0


def _pool_size() -> int:
    configured = os.environ.get("ADJUDGE_REGEX_WORKERS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return max(1, (os.cpu_count() or 2) - 1)


POOL_SIZE = _pool_size()


class MatchTimeout(Exception):
    """The match did not finish within its limit (the worker was killed), or the worker died."""


class WorkerStartError(RuntimeError):
    """The worker process could not start (regress not importable, no processes left).

    Not a verdict on any pattern: the check itself broke, so it is not turned into a timeout.
    """


class PoolBusy(WorkerStartError):
    """Every worker stayed busy for :data:`QUEUE_SECONDS`: the check could not run now."""


class MatchRefused(Exception):
    """The worker's regress refused the pattern (the caller compiled it first, so: a bug)."""


class _Worker:
    """One running worker process and the parent's ends of its pipes."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # the process that owns this worker (see _after_fork)
        self.process = subprocess.Popen(
            [sys.executable, "-P", str(_WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.request_fd = self.process.stdin.fileno()
        self.reply_fd = self.process.stdout.fileno()
        self.poll = select.poll()
        self.poll.register(self.reply_fd, select.POLLIN)
        if self._reply(time.monotonic() + _START_SECONDS) != protocol.READY:
            self.kill()
            raise WorkerStartError(
                "the regex match worker did not start; its error output says why"
            )

    def find(self, pattern: bytes, text: bytes, limit: float) -> bool:
        """Whether ``pattern`` matches ``text``; raises MatchTimeout past ``limit`` seconds."""
        request = protocol.HEADER.pack(limit, len(pattern), len(text)) + pattern + text
        deadline = time.monotonic() + limit
        view = memoryview(request)
        while view:
            view = view[os.write(self.request_fd, view) :]
        reply = self._reply(deadline)
        if reply == protocol.MATCH:
            return True
        if reply == protocol.NO_MATCH:
            return False
        if reply == protocol.REFUSED:
            raise MatchRefused("regress refused a pattern it had compiled before")
        raise MatchTimeout("the match did not finish in time")

    def _reply(self, deadline: float) -> bytes:
        """One reply byte, or b"" when the deadline passed or the worker died."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b""
            if self.poll.poll(math.ceil(remaining * 1000)):
                return os.read(self.reply_fd, 1)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """End the worker now and reap it."""
        self.process.kill()
        self.close()
        self.process.wait()

    def close(self) -> None:
        """Close the parent's pipe ends; a worker that is still running then exits by itself."""
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class _Pool:
    """At most ``size`` workers; each serves one caller at a time."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pid = os.getpid()
        self.idle: list[_Worker] = []  # a stack: the worker used last is used next
        self.running = 0  # workers started and not yet killed (idle or busy)
        self.cond = threading.Condition()

    def acquire(self) -> _Worker:
        """A free worker, started if the pool has room; PoolBusy after QUEUE_SECONDS."""
        deadline = time.monotonic() + QUEUE_SECONDS
        with self.cond:
            while True:
                while self.idle:
                    worker = self.idle.pop()
                    if worker.alive():
                        return worker
                    worker.kill()  # died while idle (killed from outside)
                    self.running -= 1
                if self.running < self.size:
                    self.running += 1
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.cond.wait(remaining):
                    raise PoolBusy(
                        f"all {self.size} regex workers stayed busy for {QUEUE_SECONDS:g} s"
                    )
        try:
            return _Worker()  # started outside the lock: others keep being served
        except BaseException:
            self.release(None)
            raise

    def release(self, worker: _Worker | None) -> None:
        """Give a worker back (None: it was killed, or never started)."""
        with self.cond:
            if worker is not None and worker.alive():
                self.idle.append(worker)
            else:
                self.running -= 1
            self.cond.notify()

    def forget(self) -> None:
        """After fork: drop the parent's workers without killing them."""
        for worker in self.idle:
            worker.close()
        self.idle = []
        self.running = 0
        self.pid = os.getpid()
        self.cond = threading.Condition()

    def shutdown(self) -> None:
        """Kill the idle workers (busy ones die with their closed pipes)."""
        with self.cond:
            idle, self.idle = self.idle, []
            self.running -= len(idle)
        for worker in idle:
            worker.kill()


_pool = _Pool(POOL_SIZE)


def find(pattern: str, text: bytes, limit: float) -> bool:
    """Whether ``pattern`` matches ``text`` (both in the engine alphabet; the text as UTF-8).

    Raises MatchTimeout when the limit passes or the worker dies mid-match (that worker is then
    killed and replaced), and PoolBusy when no worker came free in time.
    """
    pool = _pool
    pattern_bytes = pattern.encode()
    for attempt in range(2):
        worker = pool.acquire()
        try:
            answer = worker.find(pattern_bytes, text, limit)
        except BrokenPipeError:
            # The worker died between requests (killed from outside): start another once.
            worker.kill()
            pool.release(None)
            if attempt:
                raise MatchTimeout("the match worker keeps dying") from None
            continue
        except BaseException:
            # A timeout, or anything that interrupts the exchange (KeyboardInterrupt): the
            # worker may still owe a reply, which no later request must ever read.
            worker.kill()
            pool.release(None)
            raise
        pool.release(worker)
        return answer
    raise AssertionError("unreachable")  # pragma: no cover


def worker_pid() -> int | None:
    """The process id of the worker the next call would take, if one is idle (for tests)."""
    idle = _pool.idle
    worker = idle[-1] if idle else None
    return worker.process.pid if worker is not None and worker.alive() else None


def _after_fork_in_child() -> None:
    """A forked child must not share its parent's pipes: forget the workers, keep them running."""
    _pool.forget()


def _shutdown() -> None:
    if _pool.pid == os.getpid():
        _pool.shutdown()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_shutdown)
