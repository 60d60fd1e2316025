"""The request threads, taken in turn by account.

Every blocking route (and every use case a route hands to a thread) runs on the event loop's
default thread limiter: 8 threads on SQLite, 40 on PostgreSQL. That limiter serves whoever
asked first, so one account keeping hundreds of requests in flight queued every other
account's request behind all of its own (SQLite, 300 of one account's ``GET /tasks`` at once:
another account's ``GET /accounts/me`` took 668 ms at the median and 1.2 s at worst, against
3 ms). Here, while the threads are all busy, each account waits in a line of its own and a
freed thread goes to the waiting account given one longest ago (or never), not to the oldest
request: an account with a request waiting gets a thread before any account served since it
was last, so after at most one request of each other account waiting, however many each has
queued. And one account holds all the threads but one at most, so while one account floods,
another's request finds a thread free.

The lane that parses large bodies (:mod:`adjudge.service.ingress`, two threads) is taken so too:
one account's stream of 4 MiB bodies (1.6 s of parsing each) held both, and another account's
100 KB body waited 25-45 s behind them (40 at once), 3 ms alone; 0.1 s now.

The account is the one the request was authenticated as (:func:`serve_as`, set where each door
finds its caller); work with none (a request without a key, the service's own) takes its turn
as one more account.
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

import anyio.to_thread

#: The account whose request runs in this context, if one was found.
_OWNER: contextvars.ContextVar[str] = contextvars.ContextVar("adjudge_thread_owner", default="")


def serve_as(account_id: str) -> None:
    """Take this request's threads in ``account_id``'s turn (see the module)."""
    _OWNER.set(account_id)


class _Turns:
    """Who holds a thread and who waits, of one limiter."""

    def __init__(self) -> None:
        self.admitted = 0
        #: Each waiting account's waiters, oldest first.
        self.waiting: dict[str, deque[asyncio.Future[None]]] = {}
        #: Each account holding or waiting for a thread: its threads held, and when it was
        #: last given one (a count of the threads given).
        self.holding: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.given = 0
        #: The account each task holding a thread holds it for.
        self.borrowers: dict[asyncio.Task[Any] | None, str] = {}

    def _admit(self, owner: str) -> None:
        self.admitted += 1
        self.holding[owner] = self.holding.get(owner, 0) + 1
        self.given += 1
        self.last[owner] = self.given

    def _may_hold(self, owner: str, capacity: float) -> bool:
        """Whether ``owner`` may take one more: one account holds all but one at most, so
        another account's request finds a thread free however many the first keeps sent."""
        return self.holding.get(owner, 0) < max(1, capacity - 1)

    def _forget(self, owner: str) -> None:
        if not self.holding.get(owner) and owner not in self.waiting:
            self.holding.pop(owner, None)
            self.last.pop(owner, None)

    async def take(self, owner: str, capacity: float) -> None:
        if (
            self.admitted < capacity
            and self._may_hold(owner, capacity)
            and not any(self._may_hold(name, capacity) for name in self.waiting)
        ):
            self._admit(owner)  # a thread free, and no one else's turn to take it
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(owner, deque()).append(future)
        try:
            await future
        except BaseException:
            if future.done() and not future.cancelled():
                self.give(owner, capacity)  # granted as it was cancelled: pass it on
            else:
                line = self.waiting.get(owner)
                if line is not None and future in line:
                    line.remove(future)
                    if not line:
                        del self.waiting[owner]
                self._forget(owner)
            raise

    def give(self, owner: str, capacity: float) -> None:
        self.admitted -= 1
        self.holding[owner] -= 1
        self._forget(owner)
        while self.admitted < capacity:
            # The waiting account given a thread longest ago (or never) goes next.
            ready = [name for name in self.waiting if self._may_hold(name, capacity)]
            if not ready:
                return
            turn = min(ready, key=lambda name: self.last.get(name, 0))
            line = self.waiting[turn]
            future = line.popleft()
            if not line:
                del self.waiting[turn]
            if future.done():
                self._forget(turn)
            else:
                future.set_result(None)
                self._admit(turn)


_FAIR: dict[type, type] = {}


def _fair_class(base: type) -> type:
    """``base`` (the backend's limiter class), its threads taken in turn by account."""
    found = _FAIR.get(base)
    if found is not None:
        return found

    class FairLimiter(base):  # type: ignore[misc]
        __slots__ = ()

        async def __aenter__(self) -> None:
            turns = _turns(self)
            owner = _OWNER.get()
            await turns.take(owner, self.total_tokens)
            try:
                await self.acquire()
            except BaseException:
                turns.give(owner, self.total_tokens)
                raise
            turns.borrowers[asyncio.current_task()] = owner

        async def __aexit__(
            self,
            exc_type: type[BaseException] | None,
            exc_val: BaseException | None,
            exc_tb: TracebackType | None,
        ) -> None:
            self.release()
            turns = _turns(self)
            turns.give(turns.borrowers.pop(asyncio.current_task()), self.total_tokens)

    found = _FAIR[base] = FairLimiter
    return found


#: Each fair limiter's turns, by event loop and limiter (a limiter is its loop's; it has slots
#: and no room for them).
_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, _Turns]] = (
    weakref.WeakKeyDictionary()
)


def _turns(limiter: object) -> _Turns:
    found = _TURNS.setdefault(asyncio.get_running_loop(), {})
    turns = found.get(id(limiter))
    if turns is None:
        turns = found[id(limiter)] = _Turns()
    return turns


def fair(limiter: anyio.CapacityLimiter) -> anyio.CapacityLimiter:
    """``limiter``, made to serve accounts in turn (see the module), in place."""
    if type(limiter) not in _FAIR.values():
        limiter.__class__ = _fair_class(type(limiter))
    return limiter


def install() -> None:
    """Make this event loop's default thread limiter serve accounts in turn. The limiter is
    the backend's own object (every thread handoff without a limiter of its own takes it), so
    its class is swapped for a subclass that adds only the turns."""
    fair(anyio.to_thread.current_default_thread_limiter())


#: How many large bodies (over ``ingress.PARSE_ON_LOOP``, or of no declared length) one
#: account's requests read and hold at once; its further requests wait before their bodies are
#: read, which stay in the connection's buffers meanwhile (the edge's body timers do not run
#: while the service is not reading). A body read is held whole with its parsed value for the
#: request's life: 200 of one account's 4 MiB bodies at once took the process to 1.24 GB, about
#: 6 MB each, growing with every connection its addresses opened.
LARGE_BODIES = 4


class _Held:
    """One account's large bodies being read, kept only while it has some."""

    def __init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(LARGE_BODIES)
        self.users = 0


_BODIES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Held]] = (
    weakref.WeakKeyDictionary()
)


@asynccontextmanager
async def large_body(owner: str) -> AsyncIterator[None]:
    """Hold one of ``owner``'s turns to read and keep a large body (:data:`LARGE_BODIES`)."""
    held = _BODIES.setdefault(asyncio.get_running_loop(), {})
    found = held.get(owner)
    if found is None:
        found = held[owner] = _Held()
    found.users += 1
    try:
        async with found.limiter:
            yield
    finally:
        found.users -= 1
        if not found.users:
            del held[owner]


def large(headers: Iterable[tuple[bytes, bytes]], small: int) -> bool:
    """Whether a request's body may be over ``small`` bytes: its ``Content-Length`` says so, or
    it declares none (a chunked body)."""
    for name, value in headers:
        if name == b"content-length":
            return not value.isdigit() or int(value) > small
    return any(name == b"transfer-encoding" for name, _ in headers)
