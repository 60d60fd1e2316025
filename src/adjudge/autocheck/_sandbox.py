"""A bounded match: regress runs in child processes that are killed when the time limit passes.

No Python regex engine can be interrupted from inside, and regress holds the GIL while it
matches, so the only way to really stop a catastrophic match is to run it in another process.
A bounded pool of workers (``_regexworker``) is started on demand and reused; a request goes
over one worker's stdin and the reply comes back on its stdout. When a reply does not come in
time, that worker alone is killed and replaced; the others go on serving.

The pool holds :func:`pool_size` workers: one fewer than the machine's CPUs, and at least two,
unless the process's edge says otherwise with :func:`configure` (``adjudge serve`` passes its
``regex_workers`` setting; nothing here reads the environment). A caller that finds every
worker busy waits for one, at most :data:`QUEUE_SECONDS` (not counted in its match's limit):
past that the pool is saturated, which is the service's trouble, not the pattern's, so it is
:class:`PoolBusy` (the check broke), never a timeout verdict.

**Fair shares.** Regex work has an owner: the account the use case names with
:func:`owned_by` (a context variable, so no check function's signature carries it). One owner
holds at most ``pool_size() - 1`` workers at once (all of them when the pool has one), and when
callers wait, a freed worker goes to the waiting owner that has used the workers least, in
worker seconds, not to the longest waiting caller. Counting time rather than turns matters: a
flooder's turn lasts the whole 100 ms limit, another account's a tenth of a millisecond, so
taking turns would still give the flooder nearly all the time. So an account flooding the pool
with patterns that run to the limit holds its share and queues behind itself, and any other
account's match waits for at most one worker to come free; with two workers or more, one is
always left to the others. Hence the two-worker minimum: with one, everyone else waits out the
flooder's current match each time. A worker killed at the limit is replaced in the time of the
call whose match ran out, so the next owner finds a worker ready. One account's catastrophic
patterns busy at most ``pool_size() - 1`` cores (one, on two CPUs); several accounts' at once can
busy every worker, each getting its share of the time.

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
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from adjudge.autocheck import _regexworker as protocol

_WORKER_SCRIPT = Path(__file__).with_name("_regexworker.py")
#: How long a fresh worker may take to import regress (not counted in any match's limit).
_START_SECONDS = 30.0
#: How long a caller waits for a free worker before the pool counts as saturated.
QUEUE_SECONDS = 5.0


def _pool_size() -> int:
    """The pool's default size: one fewer than the machine's CPUs, at least two."""
    return max(2, (os.cpu_count() or 2) - 1)


#: Whose regex work runs in this context: an account id, or "" when nobody said (all such work
#: counts as one owner's).
regex_owner: ContextVar[str] = ContextVar("regex_owner", default="")


@contextmanager
def owned_by(owner: str) -> Iterator[None]:
    """Count the matches run inside the block as ``owner``'s, for the pool's fair shares."""
    token = regex_owner.set(owner)
    try:
        yield
    finally:
        regex_owner.reset(token)


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


class _Turn:
    """One caller's turn: waiting, then granted a worker (or room to start one) from ``since``."""

    __slots__ = ("event", "granted", "owner", "since", "worker")

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.granted = False
        self.worker: _Worker | None = None
        self.since = 0.0
        self.event = threading.Event()


_NO_ROOM = object()


class _Pool:
    """At most ``size`` workers, each serving one caller at a time; at most ``share`` of them
    held by one owner, and a freed worker given to the waiting owner that has used the workers
    least (see the module). ``clock`` measures that use."""

    def __init__(
        self, size: int, share: int | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.size = size
        self.share = share if share is not None else max(1, size - 1)
        self.clock = clock
        self.pid = os.getpid()
        self.idle: list[_Worker] = []  # a stack: the worker used last is used next
        self.running = 0  # workers started and not yet killed (idle or busy), or starting
        self.held: dict[str, int] = {}  # workers each owner holds now
        self.waiting: dict[str, deque[_Turn]] = {}  # each owner's callers, first come first
        # Worker seconds each owner holding or waiting has used. An owner that comes back
        # after a pause starts level with the lightest active owner, so it neither jumps
        # everyone for long nor carries an old debt.
        self.used: dict[str, float] = {}
        self.lock = threading.Lock()

    def acquire(self, owner: str) -> _Turn:
        """A turn for ``owner`` holding a free worker, started if the pool has room;
        PoolBusy after QUEUE_SECONDS."""
        turn = _Turn(owner)
        with self.lock:
            if owner not in self.used:
                self.used[owner] = min(self.used.values(), default=0.0)
            self.waiting.setdefault(owner, deque()).append(turn)
            self._dispatch()
        try:
            turn.event.wait(QUEUE_SECONDS)
        except BaseException:  # interrupted while waiting: give back what came meanwhile
            if not self._withdraw(turn):
                self.release(turn, turn.worker)
            raise
        if self._withdraw(turn):
            raise PoolBusy(f"all {self.size} regex workers stayed busy for {QUEUE_SECONDS:g} s")
        if turn.worker is None:
            try:
                turn.worker = _Worker()  # started outside the lock: others keep being served
            except BaseException:
                self.release(turn, None)
                raise
        return turn

    def _withdraw(self, turn: _Turn) -> bool:
        """Take a turn that was not granted out of its queue; whether it was not granted."""
        with self.lock:
            if turn.granted:
                return False
            queue = self.waiting[turn.owner]
            queue.remove(turn)
            if not queue:
                del self.waiting[turn.owner]
            self._forget(turn.owner)
            return True

    def _dispatch(self) -> None:
        """Hand free workers to waiting callers, the least served owner first (lock held)."""
        while self.waiting:
            ready = [o for o in self.waiting if self.held.get(o, 0) < self.share]
            if not ready:
                return  # every waiting owner holds its share already
            worker = self._free()
            if worker is _NO_ROOM:
                return
            owner = min(ready, key=self.used.__getitem__)
            queue = self.waiting[owner]
            turn = queue.popleft()
            if not queue:
                del self.waiting[owner]
            self.held[owner] = self.held.get(owner, 0) + 1
            turn.worker = worker if isinstance(worker, _Worker) else None
            turn.since = self.clock()
            turn.granted = True
            turn.event.set()

    def _free(self) -> object:
        """An idle worker, None for room to start one, or _NO_ROOM (the lock is held)."""
        while self.idle:
            worker = self.idle.pop()
            if worker.alive():
                return worker
            worker.kill()  # died while idle (killed from outside)
            self.running -= 1
        if self.running < self.size:
            self.running += 1
            return None
        return _NO_ROOM

    def _forget(self, owner: str) -> None:
        """Drop an owner that neither holds nor waits for a worker (the lock is held)."""
        if owner not in self.held and owner not in self.waiting:
            self.used.pop(owner, None)

    def release(self, turn: _Turn, worker: _Worker | None) -> None:
        """End ``turn``, giving its worker back (None: it was killed, or never started)."""
        owner = turn.owner
        with self.lock:
            self.used[owner] = self.used.get(owner, 0.0) + self.clock() - turn.since
            held = self.held.pop(owner, 1) - 1
            if held:
                self.held[owner] = held
            self._forget(owner)
            if worker is not None and worker.alive():
                self.idle.append(worker)
            else:
                self.running -= 1
            self._dispatch()

    def forget(self) -> None:
        """After fork: drop the parent's workers without killing them."""
        for worker in self.idle:
            worker.close()
        self.idle = []
        self.running = 0
        self.held = {}
        self.waiting = {}
        self.used = {}
        self.pid = os.getpid()
        self.lock = threading.Lock()

    def shutdown(self) -> None:
        """Kill the idle workers (busy ones die with their closed pipes)."""
        with self.lock:
            idle, self.idle = self.idle, []
            self.running -= len(idle)
        for worker in idle:
            worker.kill()


_pool = _Pool(_pool_size())


def configure(workers: int | None) -> None:
    """Hold ``workers`` workers from now on (None: leave the pool as it is, by default one fewer
    than the CPUs); called by the process's edge before any check runs. A pool of another size
    replaces this one (its idle workers are ended); the same size keeps it."""
    global _pool
    if workers is None or workers == _pool.size:
        return
    if workers < 1:
        raise ValueError("a regex worker pool holds at least one worker")
    old, _pool = _pool, _Pool(workers)
    old.shutdown()


def pool_size() -> int:
    """The workers the pool holds at most."""
    return _pool.size


def find(pattern: str, text: bytes, limit: float) -> bool:
    """Whether ``pattern`` matches ``text`` (both in the engine alphabet; the text as UTF-8),
    as work of the owner :func:`owned_by` names.

    Raises MatchTimeout when the limit passes or the worker dies mid-match (that worker is then
    killed and a replacement started, in this caller's time), and PoolBusy when no worker came
    free in time.
    """
    pool = _pool
    owner = regex_owner.get()
    pattern_bytes = pattern.encode()
    for attempt in range(2):
        turn = pool.acquire(owner)
        worker = turn.worker
        assert worker is not None
        try:
            answer = worker.find(pattern_bytes, text, limit)
        except BrokenPipeError:
            # The worker died between requests (killed from outside): start another once.
            worker.kill()
            pool.release(turn, None)
            if attempt:
                raise MatchTimeout("the match worker keeps dying") from None
            continue
        except MatchTimeout:
            # The owner whose match ran out pays for the replacement, not the next caller.
            worker.kill()
            pool.release(turn, _replacement())
            raise
        except BaseException:
            # Anything that interrupts the exchange (KeyboardInterrupt): the worker may still
            # owe a reply, which no later request must ever read.
            worker.kill()
            pool.release(turn, None)
            raise
        pool.release(turn, worker)
        return answer
    raise AssertionError("unreachable")  # pragma: no cover


def _replacement() -> _Worker | None:
    """A fresh worker for a killed one's place, or None when it cannot start now."""
    try:
        return _Worker()
    except (WorkerStartError, OSError):
        return None


def load() -> tuple[int, int]:
    """The pool's callers holding a worker and waiting for one, now (for the metrics)."""
    with _pool.lock:
        return sum(_pool.held.values()), sum(len(q) for q in _pool.waiting.values())


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
