"""The service's upkeep, run at start and every little while: what no request triggers.

- paid calls a stopped process left pending are ended as system errors, their reservations
  returned against a receipt (:meth:`adjudge.app.gateway.calls.Gateway.recover`);
- takes whose window ended with nothing submitted lapse, and their tasks open again
  (:meth:`adjudge.app.tasks.Tasks.lapse_due`; a take lapses anyway at the first action on or
  read of its task, so this is what makes it happen when nobody looks);
- sealed tasks whose poster did not reveal in time escalate
  (:meth:`adjudge.app.tasks.Tasks.escalate_overdue`; also at the first action on or read of
  the task);
- paid calls whose meaning judges are asked after the answer are judged, a bounded batch a
  pass, each in a receipt superseding the call's first (:meth:`adjudge.app.gateway.calls.
  Gateway.judge_pending`), before holds mature (a hold waits while its judgment is pending);
- providers' held charges whose report deadline passed are paid into their wallets
  (:meth:`adjudge.app.gateway.calls.Gateway.mature_holds`);
- on a receipt log of several lanes, a checkpoint naming every lane's head when the log grew
  since this process's last one (:meth:`adjudge.app.receipts.Receipts.tick`);
- the answers stored under Idempotency-Keys older than :data:`IDEMPOTENCY_RETENTION` are
  forgotten, a batch at a time, oldest first (kept for good, every request with a new key grew
  the table with the service's history); so are the counters of quota windows that ended
  (:data:`adjudge.store.quotas.LONGEST_WINDOW`).

Each pass is idempotent and safe to run from every ``serve`` process at once: each step is a
conditional write that only one process wins. A step that fails is logged and tried again at the
next pass, and the steps after it still run; within a step, a call or judgment that fails is
logged and passed over, so one bad row never keeps the others' money waiting. A task whose lapse
or overdue reveal fails is logged and put back with a growing delay, out of the sweep's due
order until then (:meth:`adjudge.app.tasks.Tasks.lapse_due`): however many fail on every pass,
the tasks due after them are swept in the same pass. A provider's held charge whose release
fails is taken out of its batch and put back the same way (:mod:`adjudge.app.maturity`), and
so is a paid call left pending whose end fails (:meth:`adjudge.app.gateway.calls.Gateway.
recover`, which reads the pending calls a batch at a time, oldest first).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from adjudge.store import idempotency, quotas

if TYPE_CHECKING:
    from adjudge.app import App

log = logging.getLogger("adjudge.maintenance")

#: How long an Idempotency-Key's answer is kept: a retry within it gets the stored answer; one
#: after it is decided anew (as a request never sent).
IDEMPOTENCY_RETENTION = timedelta(days=30)
#: The most answers one statement forgets.
PRUNE_BATCH = 1_000


def run_once(app: App) -> dict[str, int]:
    """One pass of every step (each until it has nothing left due); what each did, and how many
    steps failed (``failed``: each logged, the others run all the same)."""

    def drained(sweep: Callable[[], int], most: int) -> Callable[[], int]:
        """``sweep`` run until it does fewer than its ``most`` (nothing left due)."""

        def run() -> int:
            done = 0
            while True:
                batch = sweep()
                done += batch
                if batch < most:
                    return done

        return run

    # The Idempotency-Key answers past their retention and the quota windows that ended, a
    # batch a write.
    now = app.unit.now()
    forget_before = now - IDEMPOTENCY_RETENTION
    ended_before = now - quotas.LONGEST_WINDOW

    steps: dict[str, Callable[[], int]] = {
        "recovered": app.gateway.recover,
        "lapsed": lambda: app.tasks.lapse_due(drain=True),
        "escalated": lambda: app.tasks.escalate_overdue(drain=True),
        "judged": app.gateway.judge_pending,
        "matured": app.gateway.mature_holds,
        "checkpointed": lambda: int(app.receipts.tick()),
        "forgotten": drained(
            lambda: app.unit.write(lambda tx: idempotency.prune(tx, forget_before, PRUNE_BATCH)),
            PRUNE_BATCH,
        ),
        "windows_forgotten": drained(
            lambda: app.unit.write(lambda tx: quotas.prune(tx, ended_before, PRUNE_BATCH)),
            PRUNE_BATCH,
        ),
    }
    done = {"failed": 0}
    for name, step in steps.items():
        try:
            done[name] = step()
        except Exception:  # the next steps still run; this one is tried at the next pass
            log.exception("the upkeep step %r failed", name)
            done[name] = 0
            done["failed"] += 1
    return done


class MaintenanceWorker:
    """Runs :func:`run_once` on a daemon thread every ``every`` seconds (by default the app's
    ``upkeep_seconds`` setting) until :meth:`stop`."""

    def __init__(self, app: App, *, every: float | None = None) -> None:
        self.app = app
        self.every = app.settings.upkeep_seconds if every is None else every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> MaintenanceWorker:
        """Start the thread."""
        self._thread = threading.Thread(target=self.run, name="adjudge-upkeep", daemon=True)
        self._thread.start()
        return self

    def run(self) -> None:
        """Run passes until stopped (on the calling thread)."""
        while not self._stop.wait(self.every):
            try:
                run_once(self.app)
            except Exception:  # a failed pass is retried; the worker never dies of one
                log.exception("an upkeep pass failed")

    def stop(self) -> None:
        """Stop after the current pass."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
