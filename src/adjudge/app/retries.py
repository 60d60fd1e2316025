"""How long the upkeep waits before it tries again a row whose step failed.

A row that fails on every pass (a task's lapse, a provider's held charge, an interrupted call)
is put back out of its step's due order until its retry, so the rows due after it go on; it is
tried less and less often, never given up on.
"""

from __future__ import annotations

from datetime import timedelta

#: The wait after a row's first failure; each failure in a row doubles it, up to
#: :data:`RETRY_MOST`.
RETRY_FIRST = timedelta(minutes=1)
RETRY_MOST = timedelta(hours=1)


def retry_delay(failures: int) -> timedelta:
    """How long a row waits after its ``failures``-th failure in a row (1 or more)."""
    doubled: timedelta = RETRY_FIRST * (1 << min(max(failures, 1) - 1, 16))
    return min(doubled, RETRY_MOST)
