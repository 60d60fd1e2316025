"""How many of one kind of work an account may have running at once, apart from how many an
hour.

A dry run and a criteria lint run the whole auto check on the request's own thread, and the
hour's quota (20 dry runs a task, 120 lints an account) says nothing of how many arrive
together: eight at once held every request thread of ``serve`` on SQLite for everyone. Each
account may have :data:`AT_ONCE` running in a process; one past that is refused at once
(``CHECKS_AT_ONCE_EXCEEDED``, retry in a second) instead of waiting for a thread. A caller's
paid calls in flight are bounded the same way (``CALLS_AT_ONCE_EXCEEDED``): each holds a place
in the forwarder's pool for as long as its provider takes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from adjudge.errors import RateLimited

__all__ = ["AT_ONCE", "AtOnce"]

#: The checks one account may have running at once, in one process.
AT_ONCE = 2


class AtOnce:
    """The work of one kind each account has running in this process (a lock: the threads of
    requests and the event loops of calls count together)."""

    def __init__(self, most: int = AT_ONCE) -> None:
        self.most = most
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}

    @contextmanager
    def held(
        self, account: str, what: str, *, code: str = "CHECKS_AT_ONCE_EXCEEDED"
    ) -> Iterator[None]:
        """Run the block as one of ``account``'s ``what``, or refuse if it has ``most`` running."""
        self.take(account, what, code=code)
        try:
            yield
        finally:
            self.give(account)

    def take(self, account: str, what: str, *, code: str = "CHECKS_AT_ONCE_EXCEEDED") -> None:
        """Count one more of ``account``'s ``what`` running, or refuse if it has ``most``; for
        work that ends apart from the block that began it (:meth:`give` when it ends)."""
        with self._lock:
            running = self._running.get(account, 0)
            if running >= self.most:
                raise RateLimited(
                    f"An account may have {self.most} {what} running at once; wait for one to "
                    "finish.",
                    retry_after=1,
                    code=code,
                )
            self._running[account] = running + 1

    def give(self, account: str) -> None:
        """One of ``account``'s works counted by :meth:`take` has ended."""
        with self._lock:
            self._running[account] -= 1
            if not self._running[account]:
                del self._running[account]
