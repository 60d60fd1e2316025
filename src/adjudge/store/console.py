"""What the console's dashboards read: a window's daily counts, the balances held under each
holding prefix each day, and a poster's tasks by state.

Every figure is kept as it happens, in the transaction that changes it
(:mod:`adjudge.store.day_counts`, :mod:`adjudge.store.held_days`): a dashboard reads its window's
days, O(days × names), never the calls, verdicts, ledger lines or tasks they count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from adjudge.store import day_counts, held_days
from adjudge.store.transaction import Transaction


def counts_by_day(
    tx: Transaction, family: str, subject: str, days: Sequence[str]
) -> dict[str, Counter[str]]:
    """A family's counts (:mod:`adjudge.store.day_counts`) of ``subject`` on each of ``days``,
    by name."""
    return day_counts.window(tx, family, subject, days)


def held_by_day(
    tx: Transaction, prefixes: Sequence[str], days: Sequence[str]
) -> dict[str, list[int]]:
    """The money held under each prefix (``escrow:``, …) at the end of each of ``days``: the
    running daily figures every transfer keeps (:mod:`adjudge.store.held_days`)."""
    return held_days.figures(tx, prefixes, days)


def tasks_by_status(tx: Transaction, poster: str) -> dict[str, int]:
    """How many of ``poster``'s tasks are in each state."""
    found = day_counts.window(tx, day_counts.STATES, poster, [day_counts.ALL_TIME])
    return dict(found.get(day_counts.ALL_TIME, {}))
