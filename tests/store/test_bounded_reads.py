"""Reads that must cost what they answer, not the history behind them: each takes a range of
an index bounded by what it returns (SQLite's plans, made as the service makes them, with no
statistics)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from adjudge.store import Store, Transaction, held_days, holds
from support.plans import sqlite_plans

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _steps(store: Store, run: Callable[[Transaction], Any]) -> list[str]:
    return [step for _, plan in sqlite_plans(store, run) for step in plan]


def test_a_providers_retries_due_read_only_the_retries(sqlite_store: Store) -> None:
    """A provider's read of its account matures its due holds, retries included: the retries
    come from their own index, not from every hold the provider ever had (as an equality,
    the provider took its index: 32-35 ms at 100,000 released holds, 76-95x the read at
    1,000)."""
    steps = _steps(sqlite_store, lambda tx: holds.retries_due(tx, T0, provider="p"))
    assert any("ix_provider_holds_retry_at" in s for s in steps), steps
    assert not any("ix_provider_holds_provider" in s for s in steps), steps


def test_the_open_holds_read_only_the_hours_ahead(sqlite_store: Store) -> None:
    """The metrics' open holds read the all-time counts and the hours after the next day's,
    as two ranges: never the hours gone by, whose rows are kept (as one condition with an OR,
    every hour ever written was read: 3-7x from 1,000 to 30,000 hour rows)."""
    steps = [
        s for s in _steps(sqlite_store, lambda tx: holds.open_summary(tx, T0)) if "day_counts" in s
    ]
    assert len(steps) == 2 and "day=?" in steps[0] and "day>?" in steps[1], steps


def test_the_money_held_by_day_reads_only_its_window(sqlite_store: Store) -> None:
    """The operator's dashboard reads the days of its window on each lane (without the lanes
    named, the day range bound nothing: every day of every lane was read, 9-16x from 100 to
    3,000 days)."""
    days = ["2026-01-01", "2026-01-02"]
    steps = _steps(sqlite_store, lambda tx: held_days.figures(tx, ["escrow:", "held:"], days))
    steps = [s for s in steps if "held_days" in s]
    assert steps and all("lane=? AND day>? AND day<?" in s for s in steps), steps


def test_the_due_holds_read_only_the_holds_waiting_for_nothing(sqlite_store: Store) -> None:
    """The upkeep's due order walks the index of the holds that wait for no retry and no
    judgment (with every held hold in its range, each pass read past all that waited: 0.84 →
    38 ms for 100 due holds behind 50,000 calls waiting for their judges, inside the write)."""
    steps = _steps(sqlite_store, lambda tx: holds.due(tx, T0, limit=500))
    assert any("ix_provider_holds_ripe" in s for s in steps), steps
    assert not any("meaning_queue" in s for s in steps), steps
