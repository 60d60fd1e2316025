"""Takes: how many tasks one agent may hold undelivered, and how long a poster lets it hold one.

The reference escrow lets an agent accept any number of funded tasks and sit on them until their
deadlines (up to 90 days) while their posters can neither cancel nor reclaim. adjudge keeps the
reference's rule that a poster reclaims only after the deadline, and bounds the rest:

- **the take limit**: an agent holds at most so many tasks taken and not yet submitted (an
  operator's setting; the store's counter enforces it in the transaction of the take);
- **the take window**: a poster may give a task one at posting; a take that has submitted
  nothing when its window ends lapses, and the task is open again for other agents.

A take *counts* from the accept until the first submission, a release, a lapse, or the
deadline, whichever comes first: past the deadline the agent can no longer submit, so the task
no longer occupies a place under its limit (the task stays assigned, and the poster's reclaim
refunds it as undelivered work, as before).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from adjudge.market.tasks import Status, Task

#: Tasks one agent may hold taken and not yet submitted, unless the operator says otherwise.
DEFAULT_TAKE_LIMIT = 5
#: The most an operator may allow (a higher limit is no limit at all).
MAX_TAKE_LIMIT = 1000
#: A take window is whole hours, from 1 to the longest deadline (90 days).
MIN_TAKE_WINDOW_HOURS = 1
MAX_TAKE_WINDOW_HOURS = 90 * 24


def take_ends_at(taken_at: datetime, window_hours: int | None, deadline: datetime) -> datetime:
    """When a take made at ``taken_at`` stops counting: the end of its window, or the deadline
    if that comes first (or there is no window)."""
    if window_hours is None:
        return deadline
    return min(taken_at + timedelta(hours=window_hours), deadline)


def holder(task: Task) -> str | None:
    """The agent whose take of ``task`` counts toward its limit, or None.

    That is the agent of an assigned task whose take has not ended: nothing submitted yet, and
    neither its window nor the deadline passed (``take_ends_at`` is cleared when it ends).
    """
    if task.status is Status.ASSIGNED and task.take_ends_at is not None:
        return task.agent
    return None


def lapses_at(task: Task) -> datetime | None:
    """When the current take lapses and the task opens again; None without a take that can
    lapse (no take, no window, or the deadline comes first: a take never lapses *at* the
    deadline, since nobody could take the task after it)."""
    ends = task.take_ends_at if task.status is Status.ASSIGNED else None
    return ends if ends is not None and ends < task.deadline else None


def take_due(task: Task, now: datetime) -> bool:
    """Whether the current take has ended by ``now`` but is still counted: the lapse (or the
    end of the count at the deadline) is due to be applied."""
    return holder(task) is not None and task.take_ends_at is not None and now >= task.take_ends_at
