"""When a failed delivery is tried again, and when it stops.

Attempt 1 is made as soon as a worker sees the event. After the n-th failed attempt the next is
due ``SCHEDULE[n - 1]`` later: exponential back-off from 5 seconds to 8 hours (about 15 h 42 min
from the first attempt to the last). The :data:`MAX_ATTEMPTS`-th failure ends the delivery as
``failed``; a replay starts the count again.
"""

from __future__ import annotations

from datetime import datetime, timedelta

#: The wait after each failed attempt (the last failure has no wait: it is final).
SCHEDULE: tuple[timedelta, ...] = (
    timedelta(seconds=5),
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=10),
    timedelta(minutes=30),
    timedelta(hours=1),
    timedelta(hours=2),
    timedelta(hours=4),
    timedelta(hours=8),
)
#: Attempts a delivery gets before it ends as ``failed``.
MAX_ATTEMPTS = len(SCHEDULE) + 1


def next_attempt(
    attempts: int, now: datetime, schedule: tuple[timedelta, ...] = SCHEDULE
) -> datetime | None:
    """When the attempt after ``attempts`` failed ones is due; None once they are used up."""
    if attempts < 1:
        return now
    if attempts > len(schedule):
        return None
    return now + schedule[attempts - 1]
