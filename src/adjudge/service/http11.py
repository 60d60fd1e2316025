"""uvicorn's HTTP/1.1 protocol (httptools) with the request head bounded, a request's head and
body bounded in time, and an address's connections bounded in number.

httptools, the compiled parser ``adjudge serve`` runs uvicorn with, sets no bound on a
request's line and headers, and uvicorn adds none: one client streaming a header of 128 MiB
was buffered whole (the process grew by the header's size) and stalled every other client's
request while the pieces were joined, then answered as any request. h11, uvicorn's other
parser, bounds the head, but costs about 0.2 ms more CPU a request. So this subclass bounds a
request's head at :data:`MAX_HEAD_BYTES`, twice: exactly once it is whole (its line and
headers as parsed), and, while it is still arriving, by the chunks it alone spans (httptools
keeps a header's value until it is whole, so the exact count would come too late to bound the
memory). Past it: ``431 HEADERS_TOO_LARGE`` in the service's error shape, and the connection
closed. A head must arrive within :data:`HEAD_SECONDS`, a body within :data:`BODY_SECONDS`
with no more than :data:`BODY_IDLE_SECONDS` between its bytes (``408 REQUEST_TIMEOUT``), and
an address other than loopback's holds at most :attr:`BoundedHttpTools.per_address`
connections at once (``429 CONNECTIONS_AT_ONCE_EXCEEDED``). Written here, not found: uvicorn
offers no such option for httptools (its ``limit_concurrency`` answers every client 503 once
anyone holds the connections).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections import Counter
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from adjudge.service import errors
from adjudge.service.headers import API_POLICY, COMMON_HEADERS, NO_STORE

#: The most bytes a request's line and headers may take (Node.js takes 16 KiB, nginx 32 KiB
#: by default); a body is bounded on its own (``ingress.BodyCap``).
MAX_HEAD_BYTES = 32 * 1024
#: The most seconds a request's head may take to arrive whole, counted from the connection
#: (its first request) or from the head's first byte (the next ones; uvicorn's keep-alive
#: time-out bounds the wait between them). Without it, a client sending nothing, or a byte a
#: second, held its connection for good, and enough of them every connection the process has.
HEAD_SECONDS = 10.0
#: The most seconds a request's body may go without a byte, and the most it may take whole,
#: counted from its head's end: past either, ``408 REQUEST_TIMEOUT`` and the connection closed
#: (a 4 MiB body needs 70 KB/s). Without them, a body sent a byte a second held its connection
#: and its request for good, before any key was checked.
BODY_IDLE_SECONDS = 10.0
BODY_SECONDS = 60.0
#: The most requests queued on one connection behind the one being answered (pipelined): one
#: more closes the connection. uvicorn queued every request a chunk held (thousands from 700 KB
#: of small ones), and each answer let the next chunk in.
PIPELINED = 16
#: The most connections one client address holds open at once in a process, unless the
#: service's setting says otherwise (``connections_per_address``): every connection, however
#: slow, was a file descriptor of the process's, and one address could take them all.
CONNECTIONS_PER_ADDRESS = 64


def _refusal(status: int, code: str, message: str) -> bytes:
    """A refusal written below the application, in its error shape (:func:`errors.body`),
    with its request id and the security headers as every answer has them, and the
    connection closed."""
    body = errors.body(code, message)
    content = json.dumps(body).encode()
    return b"".join(
        [
            STATUS_LINE[status],
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(content),
            b"x-request-id: %s\r\n" % body["error"]["request_id"].encode(),
            _SECURITY,
            b"connection: close\r\n\r\n",
            content,
        ]
    )


#: The headers every answer carries (:mod:`adjudge.service.headers`), written out once.
_SECURITY = b"".join(
    b"%s: %s\r\n" % pair
    for pair in [*COMMON_HEADERS, (b"content-security-policy", API_POLICY), NO_STORE]
)


def _loopback(address: str) -> bool:
    """Whether ``address`` is this machine's (``127.0.0.0/8``, ``::1``)."""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class _HeadTooLarge(Exception):
    """Raised from the parser's callback: httptools stops, and uvicorn answers its refusal."""


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing a request head past :data:`MAX_HEAD_BYTES`, a
    head or a body that does not arrive in time, and a connection past its address's share."""

    #: Connections open now, by client address (every connection of the process's loop).
    open_by_address: ClassVar[Counter[str]] = Counter()
    per_address: ClassVar[int] = CONNECTIONS_PER_ADDRESS
    #: Loopback connections are not counted: a proxy in front of the service on this machine
    #: (every request of every client from its one address) and the demo's provider, answered
    #: by the service itself.
    loopback_exempt: ClassVar[bool] = True

    _in_head = False
    _head_bytes = 0
    _heads = 0  # the requests begun on this connection
    _too_large = False
    _too_many = False
    _head_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _body_started = 0.0
    _body_last = 0.0
    _address: str | None = None

    @classmethod
    def bounded(cls, per_address: int) -> type[BoundedHttpTools]:
        """This protocol with ``per_address`` connections an address (the service's setting)."""
        return type(cls.__name__, (cls,), {"per_address": per_address})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """A connection: refused past its address's share, else its first head is timed from
        here."""
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else None
        if address is not None and not (self.loopback_exempt and _loopback(address)):
            if self.open_by_address[address] >= self.per_address:
                message = (
                    f"This address holds {self.per_address} connections to the service at "
                    "once already; close one, or send more requests on one."
                )
                transport.write(_refusal(429, "CONNECTIONS_AT_ONCE_EXCEEDED", message))
                transport.close()
                return
            self._address = address
            self.open_by_address[address] += 1
        self._time_head()

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection is gone: nothing more to time, and its address's share freed."""
        self._untime_head()
        self._untime_body()
        if self._address is not None:
            self.open_by_address[self._address] -= 1
            if self.open_by_address[self._address] <= 0:
                del self.open_by_address[self._address]
            self._address = None
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        """A request begins: its head is counted from here, and timed if it was not already
        (a connection's first)."""
        super().on_message_begin()
        self._in_head, self._head_bytes = True, 0
        self._heads += 1
        if self._head_timer is None:
            self._time_head()

    def on_headers_complete(self) -> None:
        """The head is whole: measured exactly (its line, and each header as sent with its
        ``": "`` and line end), and refused past the bound before the request is run."""
        self._in_head = False
        self._untime_head()
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > MAX_HEAD_BYTES:
            self._too_large = True
            raise _HeadTooLarge
        super().on_headers_complete()
        if len(self.pipeline) > PIPELINED:
            self._too_many = True
            raise _HeadTooLarge  # the parser stops; the connection is closed
        self._body_started = self._body_last = self.loop.time()
        self._body_timer = self.loop.call_later(BODY_IDLE_SECONDS, self._body_late)

    def on_body(self, body: bytes) -> None:
        """A piece of the body: the time without one counts from here."""
        self._body_last = self.loop.time()
        super().on_body(body)

    def on_message_complete(self) -> None:
        """The body is whole (at once, for a request without one): no more to time."""
        self._untime_body()
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request the parser stopped on: ours, for a head too large;
        none for one requests queued past :data:`PIPELINED` (the answers before it may still be
        on their way: the connection is closed after what was written)."""
        if self._too_large:
            self._refuse()
        elif self._too_many:
            self.transport.close()
        else:
            super().send_400_response(msg)

    def data_received(self, data: bytes) -> None:
        """Parse the chunk, then count it if one request's head was open before it and still
        is after it (a chunk where a head begins may hold the end of the last request's body,
        pipelined: it is not counted, so at most two chunks, as the transport reads them, past
        the bound are ever held before the exact count)."""
        before = (self._in_head, self._heads)
        super().data_received(data)
        if before != (True, self._heads) or not self._in_head or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._in_head = False
            self._refuse()

    def _refuse(self) -> None:
        message = f"A request's line and headers are at most {MAX_HEAD_BYTES} bytes."
        self.transport.write(_refusal(431, "HEADERS_TOO_LARGE", message))
        self.transport.close()

    def _time_head(self) -> None:
        self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_late)

    def _untime_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _untime_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_late(self) -> None:
        """The body's time without a byte, or its whole time, is up: ``408 REQUEST_TIMEOUT``
        (when no answer has begun), and the connection closed; else timed again for the
        earlier of the two."""
        self._body_timer = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        if (self.flow is not None and self.flow.read_paused) or self.pipeline:
            # The service is not reading (its buffer full, or the request queued behind
            # another's answer): the client cannot send, and its clocks start again.
            self._body_started = self._body_last = now
        idle = BODY_IDLE_SECONDS - (now - self._body_last)
        left = min(idle, BODY_SECONDS - (now - self._body_started))
        if left > 0:
            self._body_timer = self.loop.call_later(left, self._body_late)
            return
        if self.cycle is None or not self.cycle.response_started:
            message = (
                f"A request's body must arrive within {BODY_SECONDS:g} s, with no more than "
                f"{BODY_IDLE_SECONDS:g} s between its bytes."
            )
            self.transport.write(_refusal(408, "REQUEST_TIMEOUT", message))
        self.transport.close()

    def _head_late(self) -> None:
        """No whole head in time: ``408 REQUEST_TIMEOUT``, and the connection closed."""
        self._head_timer = None
        if not self.transport.is_closing():
            message = f"A request's line and headers must arrive within {HEAD_SECONDS:g} s."
            self.transport.write(_refusal(408, "REQUEST_TIMEOUT", message))
            self.transport.close()
