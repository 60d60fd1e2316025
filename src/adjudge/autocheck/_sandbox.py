"""A bounded match: regress runs in a child process that is killed when the time limit passes.

No Python regex engine can be interrupted from inside, and regress holds the GIL while it
matches, so the only way to really stop a catastrophic match is to run it in another process.
One worker (``_regexworker``) is started on first use and reused; requests go over its stdin
and replies come back on its stdout. When a reply does not come in time the worker is killed
and the next call starts a fresh one.

This module is the one place the auto check touches the operating system (a child process and
a monotonic clock): the spec's "100 ms limit" is a wall-clock rule and cannot be pure.

Thread safety: one lock serializes the exchange, so concurrent callers never interleave on the
pipes. Fork safety: a forked child forgets its parent's worker (without killing it) and starts
its own. POSIX only (``poll`` on pipes, SIGALRM in the worker).
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


class MatchTimeout(Exception):
    """The match did not finish within its limit (the worker was killed), or the worker died."""


class WorkerStartError(RuntimeError):
    """The worker process could not start (regress not importable, no processes left).

    Not a verdict on any pattern: the check itself broke, so it is not turned into a timeout.
    """


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


_lock = threading.Lock()
_worker: _Worker | None = None


def find(pattern: str, text: bytes, limit: float) -> bool:
    """Whether ``pattern`` matches ``text`` (both in the engine alphabet; the text as UTF-8).

    Raises MatchTimeout when the limit passes or the worker dies mid-match; the worker is then
    gone and the next call starts a new one.
    """
    global _worker  # noqa: PLW0603  # one worker per process, replaced when it is killed
    pattern_bytes = pattern.encode()
    with _lock:
        for attempt in range(2):
            worker = _worker
            if worker is None or worker.pid != os.getpid() or not worker.alive():
                if worker is not None and worker.pid == os.getpid():
                    worker.kill()
                worker = _worker = _Worker()
            try:
                return worker.find(pattern_bytes, text, limit)
            except BrokenPipeError:
                # The worker died between requests (killed from outside): start another once.
                worker.kill()
                _worker = None
                if attempt:
                    raise MatchTimeout("the match worker keeps dying") from None
            except BaseException:
                # A timeout, or anything that interrupts the exchange (KeyboardInterrupt): the
                # worker may still owe a reply, which the next request must never read.
                worker.kill()
                _worker = None
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def worker_pid() -> int | None:
    """The running worker's process id, if any (for tests and diagnostics)."""
    worker = _worker
    return worker.process.pid if worker is not None and worker.alive() else None


def _after_fork_in_child() -> None:
    """A forked child must not share its parent's pipes: forget the worker, keep it running."""
    global _lock, _worker  # noqa: PLW0603  # fresh per-process state after fork
    _lock = threading.Lock()
    if _worker is not None:
        _worker.close()
    _worker = None


def _shutdown() -> None:
    worker = _worker
    if worker is not None and worker.pid == os.getpid():
        worker.kill()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_shutdown)
