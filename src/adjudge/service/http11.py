"""uvicorn's HTTP/1.1 protocol (httptools) with the request head bounded.

httptools, the compiled parser ``adjudge serve`` runs uvicorn with, sets no bound on a
request's line and headers, and uvicorn adds none: one client streaming a header of 128 MiB
was buffered whole (the process grew by the header's size) and stalled every other client's
request while the pieces were joined, then answered as any request. h11, uvicorn's other
parser, bounds the head, but costs about 0.2 ms more CPU a request. So this subclass bounds a
request's head at :data:`MAX_HEAD_BYTES`, twice: exactly once it is whole (its line and
headers as parsed), and, while it is still arriving, by the chunks it alone spans (httptools
keeps a header's value until it is whole, so the exact count would come too late to bound the
memory). Past it: ``431 HEADERS_TOO_LARGE`` in the service's error shape, and the connection
closed. Written here, not found: uvicorn offers no such option for httptools.
"""

from __future__ import annotations

import asyncio
import json

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from adjudge.service import errors
from adjudge.service.headers import API_POLICY, COMMON_HEADERS

#: The most bytes a request's line and headers may take (Node.js takes 16 KiB, nginx 32 KiB
#: by default); a body is bounded on its own (``ingress.BodyCap``).
MAX_HEAD_BYTES = 32 * 1024
#: The most seconds a request's head may take to arrive whole, counted from the connection
#: (its first request) or from the head's first byte (the next ones; uvicorn's keep-alive
#: time-out bounds the wait between them). Without it, a client sending nothing, or a byte a
#: second, held its connection for good, and enough of them every connection the process has.
HEAD_SECONDS = 10.0


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
    b"%s: %s\r\n" % pair for pair in [*COMMON_HEADERS, (b"content-security-policy", API_POLICY)]
)


class _HeadTooLarge(Exception):
    """Raised from the parser's callback: httptools stops, and uvicorn answers its refusal."""


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing a request head past :data:`MAX_HEAD_BYTES`."""

    _in_head = False
    _head_bytes = 0
    _heads = 0  # the requests begun on this connection
    _too_large = False
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """A connection: its first head is timed from here."""
        super().connection_made(transport)
        self._time_head()

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection is gone: nothing more to time."""
        self._untime_head()
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

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request the parser stopped on: ours, for a head too large."""
        if self._too_large:
            self._refuse()
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

    def _head_late(self) -> None:
        """No whole head in time: ``408 REQUEST_TIMEOUT``, and the connection closed."""
        self._head_timer = None
        if not self.transport.is_closing():
            message = f"A request's line and headers must arrive within {HEAD_SECONDS:g} s."
            self.transport.write(_refusal(408, "REQUEST_TIMEOUT", message))
            self.transport.close()
