"""The lapse sweep: a thread of ``adjudge serve`` applying the takes whose time is up.

A take is lapsed anyway by the first action on its task and by the first read of it (the market
applies a due lapse before any event; :meth:`Tasks.get` before showing one), so the sweep is
what makes a lapse happen when nobody looks: the task shows as open in listings, and the agent's
place under its limit comes back. Several processes may sweep one database: each lapse is one
transaction on the task's version, so a task lapses once whoever gets there first.
"""

from __future__ import annotations

import logging
import threading

from adjudge.app.tasks import SWEEP_BATCH, Tasks

log = logging.getLogger("adjudge.takes")

#: Seconds between passes of the sweep when the last one found nothing more to do.
SWEEP_SECONDS = 30.0


class TakeSweeper:
    """Runs :meth:`Tasks.lapse_due` on a daemon thread until :meth:`stop`.

    After a pass that filled its batch it looks again at once; otherwise, or after a failure
    (logged: a database that is briefly away), it waits ``seconds``.
    """

    def __init__(self, tasks: Tasks, seconds: float = SWEEP_SECONDS) -> None:
        self.tasks = tasks
        self.seconds = seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> TakeSweeper:
        """Start the thread."""
        self._thread = threading.Thread(target=self.run, name="adjudge-takes", daemon=True)
        self._thread.start()
        return self

    def run(self) -> None:
        """Sweep until stopped (on the calling thread)."""
        while not self._stop.is_set():
            try:
                full = self.tasks.lapse_due() >= SWEEP_BATCH
            except Exception:  # a failed pass is retried; the sweep never dies of one
                log.exception("a lapse sweep failed")
                full = False
            if not full:
                self._stop.wait(self.seconds)

    def stop(self) -> None:
        """Stop after the current pass."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
