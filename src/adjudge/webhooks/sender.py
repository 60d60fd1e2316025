"""One delivery attempt: sign, send bounded, and say what happened — never raise.

:class:`Sender` sends a batch of signed events at once on its own event-loop thread, over the
gateway's bounded forwarder (:class:`adjudge.gateway.AsyncForwarder`): connect, read and write
time-outs and one total deadline per attempt, redirects never followed, the answer read up to a
size cap, no proxy or credentials from the environment. Each attempt is signed when it is sent
(``webhook-timestamp`` is the wall clock's, or the ``now`` given), so a retry carries a fresh
timestamp and signature over the same ``webhook-id`` and body.

Unless private addresses are allowed, the connection is opened by the gateway's address guard
(:class:`adjudge.gateway.AddressGuard`): the host is resolved once, an endpoint with any
loopback, private, link-local or otherwise non-public address is not sent to (``blocked``), and
otherwise the connection goes to one of the addresses that were checked — so a name whose
answers change between a check and the connection (DNS rebinding) cannot reach the service's
own network.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from adjudge.calls.tools import BuiltRequest
from adjudge.gateway.addresses import AddressGuard
from adjudge.gateway.forward import AsyncForwarder, FailureKind, ForwardFailure, ForwardLimits
from adjudge.webhooks.signing import signed_headers

USER_AGENT = "adjudge-webhooks/0.1"
#: What an attempt's error keeps of a refusing answer's body.
_ERROR_BODY = 200
_T = TypeVar("_T")


@dataclass(frozen=True)
class SenderLimits:
    """Bounds on one attempt (seconds, bytes). A receiver should answer within seconds and
    do its work afterwards: the total deadline is short on purpose."""

    connect_timeout: float = 3.0
    read_timeout: float = 5.0
    write_timeout: float = 5.0
    total_timeout: float = 10.0
    max_response_bytes: int = 64 * 1024
    max_connections: int = 50

    def forward_limits(self) -> ForwardLimits:
        """The same bounds as the forwarder takes them."""
        return ForwardLimits(
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            write_timeout=self.write_timeout,
            total_timeout=self.total_timeout,
            max_response_bytes=self.max_response_bytes,
            max_connections=self.max_connections,
        )


@dataclass(frozen=True)
class Outgoing:
    """One event to one endpoint: where, the endpoint's secret, the message id, the bytes."""

    url: str
    secret: str
    msg_id: str
    body: bytes

    def __repr__(self) -> str:
        return f"Outgoing(url={self.url!r}, msg_id={self.msg_id!r}, secret=<hidden>)"


@dataclass(frozen=True)
class Attempt:
    """What one attempt gave: delivered (a 2xx) or not, the status, why not, seconds taken.

    ``kind`` names a failure: ``connect``, ``timeout``, ``http_status``, ``redirect``,
    ``too_large``, ``disconnected``, ``protocol``, ``blocked`` or ``system``.
    """

    ok: bool
    status: int | None
    error: str | None
    kind: str | None
    elapsed: float


class Sender:
    """Sends batches of events on a daemon event-loop thread; safe from any thread.

    ``now`` is the clock ``webhook-timestamp`` is read from (the wall clock by default: a
    receiver compares it with its own). ``guard`` opens the connections; without one it is
    ``AddressGuard(allow_private=allow_private)`` (a guard given, say with a stub resolver,
    decides alone). ``close()`` (or ``with``) ends the thread.
    """

    def __init__(
        self,
        limits: SenderLimits | None = None,
        *,
        allow_private: bool = False,
        guard: AddressGuard | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.limits = limits or SenderLimits()
        self.guard = guard or AddressGuard(allow_private=allow_private)
        self.allow_private = self.guard.allow_private
        self._now = now or (lambda: datetime.now(UTC))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="adjudge-webhooks-sender", daemon=True
        )
        self._thread.start()

        async def make() -> AsyncForwarder:
            return AsyncForwarder(
                self.limits.forward_limits(),
                guard=self.guard,
                user_agent=USER_AGENT,
            )

        self._forwarder = self._run(make())
        self._closed = False

    def _run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, item: Outgoing) -> Attempt:
        """One attempt, waited for."""
        return self.send_many([item])[0]

    def send_many(self, items: Sequence[Outgoing]) -> list[Attempt]:
        """One attempt for each item, all at once; in the items' order. Never raises: the
        whole batch takes at most about one attempt's total deadline."""
        if not items:
            return []

        async def batch() -> list[Attempt]:
            return list(await asyncio.gather(*(self._attempt(i) for i in items)))

        future = asyncio.run_coroutine_threadsafe(batch(), self._loop)
        bound = self.limits.total_timeout + self.limits.connect_timeout + 5
        try:
            return future.result(timeout=bound)
        except concurrent.futures.TimeoutError:
            future.cancel()
            late = Attempt(False, None, "the sender did not finish in time", "system", bound)
            return [late] * len(items)
        except Exception as exc:  # the batch is ours: a failure here is the sender's own
            return [Attempt(False, None, f"the sender failed: {exc!r}", "system", 0.0)] * len(items)

    def attempt_bound(self) -> float:
        """The longest one attempt takes, waiting for a connection included (seconds)."""
        return self.limits.total_timeout + self.limits.connect_timeout + 5

    def submit(self, item: Outgoing) -> concurrent.futures.Future[Attempt]:
        """One attempt, started now; its future never raises (a failure of the sender's own
        is an attempt that failed, as :meth:`send_many` gives it)."""
        bound = self.attempt_bound()

        async def one() -> Attempt:
            try:
                async with asyncio.timeout(bound):
                    return await self._attempt(item)
            except TimeoutError:
                return Attempt(False, None, "the sender did not finish in time", "system", bound)
            except Exception as exc:  # the attempt is ours: a failure here is the sender's own
                return Attempt(False, None, f"the sender failed: {exc!r}", "system", 0.0)

        return asyncio.run_coroutine_threadsafe(one(), self._loop)

    def close(self) -> None:
        """End the loop thread and close the connections."""
        if self._closed:
            return
        self._closed = True
        self._run(self._forwarder.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    async def _attempt(self, item: Outgoing) -> Attempt:
        headers = tuple(signed_headers(item.secret, item.msg_id, self._now(), item.body))
        outcome = await self._forwarder.forward(BuiltRequest("POST", item.url, headers, item.body))
        if outcome.ok:
            return Attempt(True, outcome.status, None, None, outcome.elapsed)
        assert isinstance(outcome, ForwardFailure)
        return _failed(outcome)


def _failed(failure: ForwardFailure) -> Attempt:
    """A forwarder failure in the words of a webhook delivery."""
    status = failure.status
    kind = failure.kind
    if kind is FailureKind.TOO_LARGE and status is not None and 200 <= status < 300:
        # The receiver said yes; only its (ignored) body was too long to read whole.
        return Attempt(True, status, None, None, failure.elapsed)
    if kind is FailureKind.REDIRECT:
        return Attempt(
            False,
            status,
            f"HTTP {status}: the receiver redirected; redirects are not followed",
            "redirect",
            failure.elapsed,
        )
    if kind in (FailureKind.PROVIDER_4XX, FailureKind.PROVIDER_5XX, FailureKind.SIGNATURE_REFUSED):
        text = failure.body[:_ERROR_BODY].decode("utf-8", errors="replace")
        shown = "".join(c if c.isprintable() else " " for c in text).strip()
        return Attempt(
            False,
            status,
            f"HTTP {status}" + (f": {shown}" if shown else ""),
            "http_status",
            failure.elapsed,
        )
    names = {
        FailureKind.CONNECT: "connect",
        FailureKind.TIMEOUT: "timeout",
        FailureKind.TOO_LARGE: "too_large",
        FailureKind.DISCONNECTED: "disconnected",
        FailureKind.PROTOCOL: "protocol",
        FailureKind.ADDRESS_REFUSED: "blocked",
    }
    message = failure.message.replace("the provider", "the receiver").replace(
        "the gateway", "the sender"
    )
    return Attempt(False, status, message, names.get(kind, "system"), failure.elapsed)
