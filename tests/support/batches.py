"""Units of work run as one batch of a group commit, as units that end at once are."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from adjudge.app.unit import GroupCommit
from adjudge.errors import Error
from adjudge.store import Transaction, hot_rows

Unit = Callable[[Transaction], Any]


def one_batch(
    commits: GroupCommit,
    units: Sequence[Unit | tuple[Unit, tuple[hot_rows.Row, ...]]],
) -> list[Any]:
    """Run ``units`` (each alone, or with the shared rows it names) in one batch of
    ``commits``, its committing thread held while they queue: each one's value, or the code of
    its refusal."""
    started, go = threading.Event(), threading.Event()

    def hold(tx: Transaction) -> None:
        started.set()
        go.wait(10)

    held = commits.submit(hold)
    assert started.wait(10)
    futures = [
        commits.submit(u[0], hot=u[1]) if isinstance(u, tuple) else commits.submit(u) for u in units
    ]
    go.set()
    held.result(10)
    outcomes: list[Any] = []
    for future in futures:
        try:
            outcomes.append(future.result(30))
        except Error as exc:
            outcomes.append(exc.code)
    return outcomes
