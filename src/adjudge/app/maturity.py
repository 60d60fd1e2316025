"""Paying providers their due held charges, a batch a transaction, without one failing hold
holding the others.

The due holds are released oldest first, 500 a transaction (:func:`adjudge.app.settlement.
mature`). A hold whose release raised failed its whole batch, and every pass took the same batch
first again: every provider's pay due behind it waited for good. Now a batch that fails is taken
apart, each of its holds released in a unit of its own (all queued at once, sharing the group
commit's transactions), and a hold that fails alone is logged and put back with a growing delay
(:func:`adjudge.app.retries.retry_delay`), out of the due order until its retry. The path with
no failure is what it was: one transaction a batch.
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import partial

from adjudge.app import settlement
from adjudge.app.retries import put_back
from adjudge.app.unit import UnitOfWork
from adjudge.store import Transaction, holds

log = logging.getLogger("adjudge.maturity")


def mature_due(unit: UnitOfWork, *, provider: str | None = None, batch: int | None = None) -> int:
    """Pay every held charge whose report deadline has passed (``provider``'s alone, if given),
    and each whose failed release is due to be tried again; how many were paid."""
    batch = batch or settlement.MATURE_BATCH
    now = unit.now()
    total = 0
    # Whether any hold is due is read once (a provider's read of its account writes nothing
    # when none is); after that, a batch that took all it could says more may be.
    due, retries = unit.read(partial(_due, now=now, provider=provider, batch=batch))
    while due or retries:
        errors: dict[str, Exception] = {}
        if retries:
            total += _each(unit, retries, now, errors, retry=True)
        if due:
            try:
                paid = taken = unit.write(
                    partial(settlement.mature, now=now, provider=provider, limit=batch)
                )
            except Exception:  # a hold of the batch: each alone, the failing ones put back
                log.warning("a batch of due holds failed; releasing them one at a time")
                ids = unit.read(partial(_batch, now=now, provider=provider, batch=batch))
                paid, taken = _each(unit, ids, now, errors, retry=False), len(ids)
            total += paid
            due = taken == batch
        if errors:
            put_back(
                unit,
                errors,
                now,
                failures=holds.release_failures,
                defer=holds.defer,
                log=log,
                failed="the held charge of call %s could not mature",
            )
        more = len(retries) == batch  # a full batch of retries: more may be due
        retries = (
            unit.read(partial(_retries, now=now, provider=provider, batch=batch)) if more else []
        )
    return total


def _each(
    unit: UnitOfWork, ids: list[str], now: datetime, errors: dict[str, Exception], *, retry: bool
) -> int:
    """Release each of these holds in a unit of its own; how many were paid. What one raised
    goes into ``errors``; a retry that is done puts its hold back in the due order."""
    units = [partial(_one, call_id=c, now=now, retry=retry) for c in ids]
    paid = 0
    for call_id, outcome in zip(ids, unit.write_each(units), strict=True):
        if isinstance(outcome, Exception):
            errors[call_id] = outcome
        else:
            paid += outcome
    return paid


def _due(
    tx: Transaction, now: datetime, provider: str | None, batch: int
) -> tuple[bool, list[str]]:
    """Whether any hold is due at ``now``, and the holds whose retry is due, a batch."""
    due = bool(holds.due(tx, now, provider=provider, limit=1))
    return due, _retries(tx, now, provider, batch)


def _retries(tx: Transaction, now: datetime, provider: str | None, batch: int) -> list[str]:
    """The holds whose failed release is due to be tried again at ``now``, a batch."""
    return holds.retries_due(tx, now, provider=provider, limit=batch)


def _batch(tx: Transaction, now: datetime, provider: str | None, batch: int) -> list[str]:
    """The call ids of the batch :func:`adjudge.app.settlement.mature` takes at ``now``."""
    return [d.call_id for d in holds.due(tx, now, provider=provider, limit=batch)]


def _one(tx: Transaction, call_id: str, now: datetime, retry: bool) -> int:
    """Release one hold, if still due; a retry, done, is back in the due order."""
    paid = settlement.mature(tx, now, call_ids=[call_id])
    if retry:
        holds.retried(tx, call_id)
    return paid
