"""CPU timers for the stages of the gateway's hot path, off unless asked for.

With the setting ``stage_times`` (``ADJUDGE_STAGE_TIMES=<file>`` in the environment of
``adjudge serve``, which calls :func:`enable`), each stage wrapped
in :func:`stage` adds the CPU time its thread spent in it (``time.thread_time_ns``: waiting for
a lock, the database or the provider costs nothing) to a process-wide total, and at exit the
totals are written to the file as JSON, with each thread's CPU time (the uvicorn event loop,
the forwarder's loop, the request threads), so a benchmark can split a call's cost by stage
(``benchmarks/gateway.py --stages``). Off, :func:`stage` returns one shared no-op context
manager: a call costs a global read and a function call per stage.
"""

from __future__ import annotations

import atexit
import json
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

__all__ = ["enable", "enabled", "stage"]

#: Where the totals are written at exit (None: the timers are off).
_path: Path | None = None
_totals: dict[str, list[int]] = {}
_lock = threading.Lock()
_OFF: AbstractContextManager[None] = nullcontext()


@contextmanager
def _timed(name: str) -> Iterator[None]:
    started = time.thread_time_ns()
    try:
        yield
    finally:
        spent = time.thread_time_ns() - started
        with _lock:
            total = _totals.setdefault(name, [0, 0])
            total[0] += spent
            total[1] += 1


def stage(name: str) -> AbstractContextManager[None]:
    """Time the block as stage ``name`` (a no-op unless the timers are on)."""
    return _OFF if _path is None else _timed(name)


def enabled() -> bool:
    """Whether the timers run in this process."""
    return _path is not None


def enable(path: Path) -> None:
    """Turn the timers on for the rest of the process; at exit write the totals to ``path``."""
    global _path  # noqa: PLW0603 (the process's one switch, set by its edge before it serves)
    if _path is None:
        atexit.register(_dump)
    _path = path


def _threads() -> dict[str, int]:
    """CPU nanoseconds of each live thread, by name (numbered threads summed by kind)."""
    out: dict[str, int] = {}
    for thread in threading.enumerate():
        if thread.ident is None:
            continue
        try:
            clock = time.pthread_getcpuclockid(thread.ident)
            spent = time.clock_gettime_ns(clock)
        except (OSError, AttributeError):  # not POSIX, or the thread just ended
            continue
        kind = thread.name.split(" (")[0].rstrip("0123456789-_ ")
        out[kind] = out.get(kind, 0) + spent
    return out


def _dump() -> None:
    assert _path is not None
    with _lock:
        stages = {name: {"cpu_ns": t[0], "count": t[1]} for name, t in _totals.items()}
    report: dict[str, Any] = {
        "stages": stages,
        "threads": _threads(),
        "process": time.process_time_ns(),
    }
    with open(_path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=1)
