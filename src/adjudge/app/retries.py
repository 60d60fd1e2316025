"""How long the upkeep waits before it tries again a row whose step failed.

A row that fails on every pass (a task's lapse, a provider's held charge, an interrupted call)
is put back out of its step's due order until its retry, so the rows due after it go on; it is
tried less and less often, never given up on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from adjudge.app.unit import UnitOfWork
from adjudge.store import Transaction

#: Each row put back: its failures in a row and when it is tried again.
Deferred = Mapping[str, tuple[int, datetime]]

#: The wait after a row's first failure; each failure in a row doubles it, up to
#: :data:`RETRY_MOST`.
RETRY_FIRST = timedelta(minutes=1)
RETRY_MOST = timedelta(hours=1)


def retry_delay(failures: int) -> timedelta:
    """How long a row waits after its ``failures``-th failure in a row (1 or more)."""
    doubled: timedelta = RETRY_FIRST * (1 << min(max(failures, 1) - 1, 16))
    return min(doubled, RETRY_MOST)


def put_back(
    unit: UnitOfWork,
    errors: Mapping[str, BaseException],
    now: datetime,
    *,
    failures: Callable[[Transaction, list[str]], Mapping[str, int]],
    defer: Callable[[Transaction, Deferred], None],
    log: logging.Logger,
    failed: str,
) -> None:
    """Put back, in one write, each row whose step raised at ``now``: its ``failures`` in a
    row, one more, and when it is tried again (``defer`` records both); each logged with what
    it raised, ``failed`` naming the row (``%s``)."""

    def run(tx: Transaction) -> Deferred:
        ids = list(errors)
        before = failures(tx, ids)
        retries = {}
        for key in ids:
            n = before.get(key, 0) + 1
            retries[key] = (n, now + retry_delay(n))
        defer(tx, retries)
        return retries

    for key, (n, at) in unit.write(run).items():
        log.error(
            failed + " (%d failure(s) in a row; tried again from %s)",
            key,
            n,
            at.isoformat(),
            exc_info=errors[key],
        )
